"""Spectral estimate under shared drift: anchored whitening and a privacy second pass.

Issue 11, item 2. On the realistic suite's out-of-Africa and Papuan mosaics the
spectral estimate's Q error was 0.25-0.31 (ML: 0.03-0.05). This script measures, on
the suite's cached data sets (``benchmarks/realistic_suite.py`` simulates and caches
them), the spectral estimate (``fit_admixture(G, 3, refine=False, seed=0)``) these
ways:

``window``
    Each rarity window whitened by its own second moment's top-K eigenspace (the
    estimator before this change: ``spectral_scan(anchor=False)``).
``anchored``
    Every window whitened inside the column space of all SNPs' second moment, only
    the K x K core from the window
    (:func:`admixspec.spectral.denoise.whiten_in_subspace`; the default now).
``anchored-min1000``
    ``anchored`` with windows of fewer than 1,000 SNPs skipped (the default skips
    those under 200: ``admixspec.fit.default.MIN_MOMENT_SNPS``).
``privacy-gated-x<i>``
    ``anchored``, then ``i`` chained privacy passes
    (:func:`admixspec.spectral.estimate.privacy_pass`: moment SNPs whose counted
    allele the previous estimate's least-squares P, from *all* SNPs, places in one
    component — share ``max_k p_k / sum_k p_k`` at least 0.9, minor-allele frequency
    at most 0.1 — whitening anchored as above); a pass replaces the window's estimate
    only when its tensor is closer to orthogonally decomposable (lower
    :func:`admixspec.spectral.estimate.window_score`):
    ``spectral_scan(privacy_passes=i)``.
``privacy-forced-x<i>``
    The same passes from the ``anchored`` Q, the last one kept whatever its score.

Usage::

    python benchmarks/spectral_second_pass.py                       # 6 settings x 3 reps
    python benchmarks/spectral_second_pass.py --settings ooa bn --replicates 5

Prints per-data-set errors and a Markdown table of mean Q error per setting; writes the
rows to ``benchmarks/results/spectral_second_pass.csv``. Run with one thread
(``NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1``).
"""

from __future__ import annotations

import argparse
import csv
import functools
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from realistic_suite import load_setting

from admixspec import fit_admixture
from admixspec.core.genotypes import allele_counts
from admixspec.core.metrics import q_error
from admixspec.fit import default as model
from admixspec.spectral.estimate import (
    column_space,
    privacy_pass,
    rare_allele_snps,
    snp_sample,
    spectral_scan,
)

ROOT = Path(__file__).resolve().parent.parent
CSV_PATH = ROOT / "benchmarks" / "results" / "spectral_second_pass.csv"
K = 3
SEED = 0
DEFAULT_SETTINGS = ("ooa", "papuan", "american", "bn", "paper-a1", "paper-a10")


#: Scan variants: name -> (anchor, privacy passes, smallest window in SNPs; None:
#: the default's).
SCAN_VARIANTS = {"window": (False, 0, None), "anchored": (True, 0, None),
                 "anchored-min1000": (True, 0, 1000),
                 "privacy-gated-x1": (True, 1, None),
                 "privacy-gated-x2": (True, 2, None)}


def spectral_q(dosage, *, anchor, privacy_passes=0, min_snps=None):
    """Q of the default spectral estimate with the scan's options set."""
    scan = functools.partial(spectral_scan, anchor=anchor, privacy_passes=privacy_passes)
    floor = model.MIN_MOMENT_SNPS if min_snps is None else min_snps
    with mock.patch.object(model, "spectral_scan", scan), \
            mock.patch.object(model, "MIN_MOMENT_SNPS", floor):
        return fit_admixture(dosage, K, refine=False, seed=SEED, threads=1).Q


def forced_privacy_passes(dosage, Q, n_passes):
    """``n_passes`` chained :func:`privacy_pass` es from ``Q``, the last one kept."""
    m, n = dosage.shape
    rng = np.random.default_rng(SEED)
    size = int(np.clip(model.SCORING_ENTRIES // m, 500, n))  # as the default's scan
    sample = snp_sample(dosage, size, rng)
    rescore = snp_sample(dosage, min(n, 10 * size), rng)
    counts = allele_counts(dosage)
    rare, flip = rare_allele_snps(*counts, max_frequency=0.5)
    subspace, _ = column_space(dosage, K, rare, flip)
    for _ in range(n_passes):
        result = privacy_pass(dosage, K, Q, subspace, sample=sample,
                              rescore_sample=rescore, counts=counts, seed=SEED)
        if result is None or result.Q is None:  # keep the previous Q
            break
        Q = result.Q
    return Q


def evaluate(name, replicate):
    """One row: Q error and seconds of every variant on one cached data set."""
    dosage, Q_true = load_setting(name, replicate)
    row = {"setting": name, "replicate": replicate}
    estimates = {}
    for variant, (anchor, passes, min_snps) in SCAN_VARIANTS.items():
        clock = time.perf_counter()
        estimates[variant] = spectral_q(dosage, anchor=anchor, privacy_passes=passes,
                                        min_snps=min_snps)
        row[f"{variant}_seconds"] = time.perf_counter() - clock
        row[f"{variant}_error"] = q_error(Q_true, estimates[variant])
    for passes in (1, 2):
        Q = forced_privacy_passes(dosage, estimates["anchored"], passes)
        row[f"privacy-forced-x{passes}_error"] = q_error(Q_true, Q)
    return row


def variants(rows):
    """Variant names in column order."""
    return [key[: -len("_error")] for key in rows[0] if key.endswith("_error")]


def summarise(rows):
    """Markdown table of mean Q error per setting and variant."""
    names = variants(rows)
    lines = ["| setting | reps | " + " | ".join(names) + " |",
             "|---|---|" + "---|" * len(names)]
    for setting in dict.fromkeys(row["setting"] for row in rows):
        group = [row for row in rows if row["setting"] == setting]
        means = [np.mean([float(row[f"{v}_error"]) for row in group]) for v in names]
        lines.append(f"| {setting} | {len(group)} | "
                     + " | ".join(f"{value:.4f}" for value in means) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--settings", nargs="+", default=list(DEFAULT_SETTINGS))
    parser.add_argument("--replicates", type=int, default=3)
    parser.add_argument("--out", type=Path, default=CSV_PATH)
    args = parser.parse_args(argv)
    rows = []
    for name in args.settings:
        for replicate in range(1, args.replicates + 1):
            row = evaluate(name, replicate)
            rows.append(row)
            print(f"{name} {replicate}: " + ", ".join(
                f"{v} {row[f'{v}_error']:.4f}" for v in variants(rows))
                + f" ({row['window_seconds']:.1f} s / {row['anchored_seconds']:.1f} s)",
                flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(summarise(rows))


if __name__ == "__main__":
    main()
