"""The library default of ``fit_binary_latent`` against the paper's Algorithm 2 on
harder settings than Figure 2's: small n, large sigma, correlated hidden units, d = 4, 8.

For each setting, several realisations; prints each method's error divided by the
oracle's (least squares given the true H). Settings:

* the Figure-2 design with one fixed (W, a, R) drawn from seed 5: n = 1e3 and 3e3 at
  sigma = 0.4, and sigma = 0.8 and 1.0 at n = 1e5 (8 realisations each);
* h = rounding of N(a, R) with equal correlations c of r, R = 0.25((1-c) I + c 11^T),
  new (W, a) per realisation (6 realisations each).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/binary_latent_settings.py
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paper_simulation import PAPER_ALGORITHM, draw_params

from admixspec.spectral.binary_latent import (
    fit_binary_latent,
    fit_oracle,
    simulate_binary_latent,
    w_error,
)


def ratios(data, d, sigma, seed):
    """Error / oracle error of the paper's algorithm and of the library default."""
    oracle = w_error(data.W, fit_oracle(data.X, data.H))
    out = []
    for options in (PAPER_ALGORITHM, {}):
        t = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = fit_binary_latent(data.X, d, sigma, **options, seed=seed)
            out.append(w_error(data.W, fit.W) / oracle)
        except Exception as exc:  # a failed fit is reported, not fatal
            print(f"    {'paper' if options else 'default'} failed: {exc}")
            out.append(np.nan)
        out.append(time.perf_counter() - t)
    return out


def report(name, rows):
    rows = np.array(rows)
    for label, col in (("paper's Algorithm 2", 0), ("library default", 2)):
        r = rows[:, col]
        print(f"{name}: {label}: median {np.nanmedian(r):.3g}, "
              f"worst {np.nanmax(r):.3g}, failed {int(np.isnan(r).sum())}, "
              f"all {np.array2string(r, precision=3)}, "
              f"mean {rows[:, col + 1].mean():.2f} s", flush=True)


def main():
    rng = np.random.default_rng(5)
    W, a, R = draw_params(rng, 6, 30)
    for n, sigma in ((1_000, 0.4), (3_000, 0.4), (100_000, 0.8), (100_000, 1.0)):
        rows = []
        for rep in range(8):
            data = simulate_binary_latent(n, sigma=sigma, W=W, a=a, R=R, seed=rng)
            rows.append(ratios(data, 6, sigma, rep))
        report(f"Figure-2 design, n={n}, sigma={sigma}", rows)
    correlated = [  # name, d, m, correlation, mean range, sigma, n
        ("d=4 m=12 correlation 0.6 sigma 0.4 n=3e4",
         4, 12, 0.6, (0.2, 0.7), 0.4, 30_000),
        ("d=8 m=40 correlation 0.4 sigma 0.4 n=1e5",
         8, 40, 0.4, (0.3, 0.6), 0.4, 100_000),
        ("d=6 m=30 correlation 0.6 sigma 0.6 n=1e5",
         6, 30, 0.6, (0.2, 0.7), 0.6, 100_000),
        ("d=6 m=30 independent sigma 0.8 n=1e4", 6, 30, 0.0, (0.2, 0.5), 0.8, 10_000),
    ]
    for name, d, m, c, (low, high), sigma, n in correlated:
        rows = []
        for rep in range(6):
            rng = np.random.default_rng([7, rep, d])
            a = rng.uniform(low, high, d)
            R = 0.25 * ((1 - c) * np.eye(d) + c * np.ones((d, d)))
            data = simulate_binary_latent(n, d=d, m=m, sigma=sigma, a=a, R=R, seed=rng)
            rows.append(ratios(data, d, sigma, rep))
        report(name, rows)


if __name__ == "__main__":
    main()
