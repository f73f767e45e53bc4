"""Reproduce Figure 2 of the seed paper (Jaffe et al. 2018) and the candidate studies.

Setting (paper §6 and the authors' public code ``main_estimate_weight_matrix.m``):
d = 6 hidden units, m = 30 features, the m columns of W uniform on the unit sphere,
h = clip(round(r), 0, 1) with r ~ N(a, R), a = 0.2 + 0.2 U(0,1) per unit,
R = V diag(U(0,1)) V^T (V random orthogonal), Gaussian noise. As in the authors' code,
(W, a, R) are drawn once (from ``--seed``) and every realisation draws new H and noise;
on the sigma panel one realisation's H and noise are reused for every sigma.
``--params per-run`` draws new (W, a, R) for every realisation instead.

Left panel: error vs n at sigma = 0.4, n in {1e3, 3e3, ..., 1e6}.
Right panel: error vs sigma in {0.1, ..., 1.0} at n = 1e5.
Error: ||W - Pi W_hat||_F^2 / (m d) after Hungarian row matching, averaged over
realisations (the CSV keeps every realisation, so medians can be taken too).
Methods: Spectral (Algorithm 2, KS filter, all samples), Spectral+WLS, ALS (random binary
start), Oracle (least squares with the true H). SHL is not included (see
docs/paper_figure.md). Added (not in the paper): admixspec, the library's default
``fit_binary_latent(X, d, sigma)`` (Algorithm 2 plus near-eigenpair candidates,
candidate polishing and the binary test); ``--paper-only`` leaves it out.

Usage::

    python benchmarks/paper_simulation.py            # 20 realisations per point
    python benchmarks/paper_simulation.py --full     # 50
    python benchmarks/paper_simulation.py --quick    # smoke run: 2 realisations, small n
    python benchmarks/paper_simulation.py --study candidates --reps 10

Outputs ``docs/figures/paper_fig2.csv``, ``docs/figures/paper_fig2.png`` (and
``paper_candidates.csv`` for the study) and prints the fitted log-log slopes.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from admixspec.spectral.binary_latent import (
    fit_als,
    fit_binary_latent,
    fit_oracle,
    simulate_binary_latent,
    w_error,
    wls_step,
)

ROOT = Path(__file__).resolve().parent.parent
FIGDIR = ROOT / "docs" / "figures"
METHODS = ("Oracle", "ALS", "Spectral", "Spectral+WLS", "admixspec")
LABELS = {"Spectral": "Spectral (paper's Algorithm 2)",
          "admixspec": "admixspec default (not in the paper)"}
# the seed paper's Algorithm 2: none of the library's additions
PAPER_ALGORITHM = {"near_pairs": False, "polish": False, "binary_test": None}


def draw_params(rng, d=6, m=30):
    W = rng.standard_normal((d, m))
    W /= np.linalg.norm(W, axis=0, keepdims=True)
    a = 0.2 + 0.2 * rng.random(d)
    V, _ = np.linalg.qr(rng.standard_normal((d, d)))
    R = V @ np.diag(rng.random(d)) @ V.T
    return W, a, R


def run_methods(X, H, W, sigma, d, rng, als_max_iter, default=True):
    """Errors and seconds of every method on one data set."""
    out = {}
    t = time.perf_counter()
    out["Oracle"] = (w_error(W, fit_oracle(X, H)), time.perf_counter() - t)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Wa, _, _ = fit_als(X, d, seed=rng, max_iter=als_max_iter)
    out["ALS"] = (w_error(W, Wa), time.perf_counter() - t)
    t = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_binary_latent(X, d, sigma, **PAPER_ALGORITHM, seed=rng)
        Ws = fit.W
        out["Spectral"] = (w_error(W, Ws), time.perf_counter() - t)
        t = time.perf_counter()
        err = w_error(W, wls_step(X, Ws, sigma))
        out["Spectral+WLS"] = (err, time.perf_counter() - t)
    except Exception as exc:  # a failed fit is recorded, not fatal
        print(f"  spectral failed: {exc}", file=sys.stderr)
        out["Spectral"] = out["Spectral+WLS"] = (np.nan, np.nan)
    if default:
        t = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = fit_binary_latent(X, d, sigma, seed=rng)
            out["admixspec"] = (w_error(W, fit.W), time.perf_counter() - t)
        except Exception as exc:
            print(f"  admixspec default failed: {exc}", file=sys.stderr)
            out["admixspec"] = (np.nan, np.nan)
    return out


def figure2(args):
    d, m = 6, 30
    rng = np.random.default_rng(args.seed)
    fixed = draw_params(rng, d, m)
    rows = []
    ns = args.ns
    sigmas = args.sigmas
    t0 = time.perf_counter()
    for rep in range(args.reps):
        # left panel
        for n in ns:
            W, a, R = fixed if args.params == "fixed" else draw_params(rng, d, m)
            data = simulate_binary_latent(n, sigma=0.4, W=W, a=a, R=R, seed=rng)
            res = run_methods(data.X, data.H, W, 0.4, d, rng, args.als_max_iter,
                              not args.paper_only)
            for meth, (err, sec) in res.items():
                rows.append(dict(panel="n", rep=rep, n=n, sigma=0.4, method=meth,
                                 error=err, seconds=sec))
        # right panel: one H and noise, every sigma
        W, a, R = fixed if args.params == "fixed" else draw_params(rng, d, m)
        data = simulate_binary_latent(args.n_sigma, sigma=0.0, W=W, a=a, R=R, seed=rng)
        for s in sigmas:
            X = data.X + s * data.noise
            res = run_methods(X, data.H, W, s, d, rng, args.als_max_iter,
                              not args.paper_only)
            for meth, (err, sec) in res.items():
                rows.append(dict(panel="sigma", rep=rep, n=args.n_sigma, sigma=s,
                                 method=meth, error=err, seconds=sec))
        sec = time.perf_counter() - t0
        print(f"realisation {rep + 1}/{args.reps} done, {sec:.0f} s", flush=True)
        write_csv(rows, args.out.with_suffix(".csv"))
    summarise(rows, args)


def write_csv(rows, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)


def methods_in(rows):
    return [m for m in METHODS if any(r["method"] == m for r in rows)]


def table(rows, panel, key):
    sel = [r for r in rows if r["panel"] == panel]
    xs = sorted({r[key] for r in sel})
    present = methods_in(sel)
    mean = {meth: [] for meth in present}
    med = {meth: [] for meth in present}
    nfail = {meth: [] for meth in present}
    for meth in present:
        for x in xs:
            e = np.array(
                [r["error"] for r in sel if r["method"] == meth and r[key] == x]
            )
            ok = e[np.isfinite(e)]
            mean[meth].append(ok.mean() if ok.size else np.nan)
            med[meth].append(np.median(ok) if ok.size else np.nan)
            nfail[meth].append(int(np.sum(~np.isfinite(e))))
    return np.array(xs, dtype=float), mean, med, nfail


def slope(x, y):
    ok = np.isfinite(y) & (y > 0)
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


def summarise(rows, args):
    ns, mean_n, med_n, fail_n = table(rows, "n", "n")
    ss, mean_s, med_s, fail_s = table(rows, "sigma", "sigma")
    reps = max(r["rep"] for r in rows) + 1
    print(f"\nFigure 2 reproduction, {reps} realisations per point, "
          f"params={args.params}")
    print("\nerror vs n (sigma = 0.4): mean [median]")
    meths = list(mean_n)
    for i, n in enumerate(ns):
        print(f"  n={int(n):>8d} " + "  ".join(
            f"{m}={mean_n[m][i]:.3g}[{med_n[m][i]:.3g}]" for m in meths)
            + (f"  spectral failures={fail_n['Spectral'][i]}"
               if fail_n["Spectral"][i] else ""))
    print(f"\nerror vs sigma (n = {args.n_sigma:d}): mean [median]")
    for i, s in enumerate(ss):
        print(f"  sigma={s:.1f} " + "  ".join(
            f"{m}={mean_s[m][i]:.3g}[{med_s[m][i]:.3g}]" for m in meths))
    big = ns >= 1e4
    for meth in meths:
        mn, md = np.array(mean_n[meth]), np.array(med_n[meth])
        print(f"log-log slope of error vs n, {meth}: all n: mean {slope(ns, mn):.3f}, "
              f"median {slope(ns, md):.3f}; "
              f"n >= 1e4: mean {slope(ns[big], mn[big]):.3f}, "
              f"median {slope(ns[big], md[big]):.3f}")
    sm = {m: np.array(mean_s[m]) for m in meths}
    low = ss <= 0.4 + 1e-9
    high = ss >= 0.6 - 1e-9
    print("Spectral+WLS < Spectral at every sigma <= 0.4:",
          bool(np.all(sm["Spectral+WLS"][low] < sm["Spectral"][low])))
    print("Spectral < ALS at every sigma >= 0.6:",
          bool(np.all(sm["Spectral"][high] < sm["ALS"][high])))
    if "admixspec" in sm:
        print("admixspec < ALS at every sigma >= 0.6:",
              bool(np.all(sm["admixspec"][high] < sm["ALS"][high])))
    plot(ns, mean_n, ss, mean_s, args)


def plot(ns, mean_n, ss, mean_s, args):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    style = {"Oracle": "-.sk", "ALS": "--x", "Spectral": ":hb", "Spectral+WLS": "-dm",
             "admixspec": "-og"}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    for ax, x, ys, xl in ((axes[0], ns, mean_n, "sample size n  (sigma = 0.4)"),
                          (axes[1], ss, mean_s,
                           f"noise level sigma  (n = {args.n_sigma:g})")):
        for meth in ys:
            kw = {"color": "0.5"} if meth == "ALS" else {}
            if meth == "admixspec":
                kw.update(ms=4, lw=1.0, mfc="none")
            ax.loglog(x, ys[meth], style[meth], label=LABELS.get(meth, meth),
                      **{"lw": 1.8, "ms": 7, **kw})
        ax.set_xlabel(xl)
        ax.set_ylabel(r"$\|W-\Pi\hat W\|_F^2/(m d)$")
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize="small")
    reps = args.reps
    fig.suptitle(f"Seed paper Fig. 2 reproduced: d=6, m=30, "
                 f"mean over {reps} realisations")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    path = args.out.with_suffix(".png")
    fig.savefig(path, dpi=110)
    print(f"wrote {path} and {args.out.with_suffix('.csv')}")


# candidates study: the paper's Algorithm 2 with moments on all samples / on half, then
# the library's additions one by one (near-eigenpairs; polishing; the binary test with
# random starts when fewer than d candidates pass it = the library default)
VARIANTS = ("none", "half", "none+near", "none+near+polish", "none+near+polish+test")


def candidates_study(args):
    """True-candidate presence/selection and error/oracle for each of VARIANTS. Each
    realisation draws new (W, a, R)."""
    d, m, n, sigma = 6, 30, args.n_sigma, 0.4
    rows = []
    for setting in ("paper", "correlated"):
        for rep in range(args.reps):
            rng = np.random.default_rng([args.seed, rep, setting == "correlated"])
            if setting == "paper":
                W, a, R = draw_params(rng, d, m)
            else:  # correlations 0.4 of r, means a ~ U(0.3, 0.6) (tests' setting)
                W = None
                a = rng.uniform(0.3, 0.6, d)
                R = 0.25 * (0.6 * np.eye(d) + 0.4 * np.ones((d, d)))
            data = simulate_binary_latent(n, d=d, m=m, sigma=sigma, W=W, a=a, R=R,
                                          seed=rng)
            oracle = w_error(data.W, fit_oracle(data.X, data.H))
            V_true = np.linalg.pinv(data.W)
            for split in VARIANTS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t = time.perf_counter()
                    fit = fit_binary_latent(
                        data.X, d, sigma, split=split[:4], seed=rep,
                        near_pairs="+near" in split, polish="+polish" in split,
                        binary_test=4.0 if "+test" in split else None,
                        random_starts=50 if "+test" in split else 0)
                    sec = time.perf_counter() - t
                D = np.linalg.norm(fit.candidates[:, None, :] - V_true.T[None], axis=2)
                present = int(np.sum(D.min(axis=0) < 0.05))
                nearest = sorted(D.argmin(axis=0).tolist())
                chosen = bool(nearest == sorted(fit.selected.tolist()))
                ratio = w_error(data.W, fit.W) / oracle
                rows.append(dict(setting=setting, rep=rep, split=split, present=present,
                                 all_selected=chosen and present == d, ratio=ratio,
                                 n_eigenpairs=len(fit.eigenpairs), seconds=sec))
                print(f"{setting:10s} rep={rep} split={split}: true candidates present "
                      f"{present}/{d}, all selected={rows[-1]['all_selected']}, "
                      f"error/oracle={ratio:.3g}", flush=True)
    path = args.out.parent / "paper_candidates.csv"
    write_csv(rows, path)
    for setting in ("paper", "correlated"):
        for split in VARIANTS:
            r = [x for x in rows if x["setting"] == setting and x["split"] == split]
            ok = sum(x["all_selected"] and x["ratio"] < 30 for x in r)
            med = np.median([x["ratio"] for x in r])
            print(f"{setting:10s} split={split}: {ok}/{len(r)} realisations with all "
                  f"{d} true candidates selected and error < 30x oracle; "
                  f"median error/oracle {med:.3g}")
    print(f"wrote {path}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--study", choices=["figure2", "candidates"], default="figure2")
    p.add_argument("--reps", type=int, default=None, help="realisations per point (20)")
    p.add_argument("--full", action="store_true", help="50 realisations per point")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 2 realisations, small n")
    p.add_argument("--params", choices=["fixed", "per-run"], default="fixed")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--als-max-iter", type=int, default=100)
    p.add_argument("--threads", type=int, default=1,
                   help="BLAS threads (shared machine)")
    p.add_argument("--paper-only", action="store_true",
                   help="leave out the library default (admixspec: near-eigenpairs and "
                   "polishing, not in the paper)")
    p.add_argument("--from-csv", type=Path, default=None,
                   help="only summarise and plot an existing CSV "
                   "(e.g. of an interrupted run)")
    p.add_argument("--out", type=Path, default=FIGDIR / "paper_fig2")
    args = p.parse_args(argv)
    args.ns = [1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000]
    args.sigmas = [round(0.1 * k, 1) for k in range(1, 11)]
    args.n_sigma = 100_000
    if args.reps is None:
        args.reps = 50 if args.full else 20
    if args.quick:
        args.reps = min(args.reps, 2)
        args.ns = [1_000, 3_000, 10_000, 30_000]
        args.sigmas = [0.2, 0.4, 0.6, 0.8]
        args.n_sigma = 10_000
        if args.out == FIGDIR / "paper_fig2":
            args.out = Path("/tmp") / "paper_fig2_quick"
    from threadpoolctl import threadpool_limits

    if args.from_csv is not None:
        with open(args.from_csv) as fh:
            rows = [
                {**r, "rep": int(r["rep"]), "n": int(r["n"]), "sigma": float(r["sigma"]),
                 "error": float(r["error"]), "seconds": float(r["seconds"])}
                for r in csv.DictReader(fh)
            ]
        args.reps = max(r["rep"] for r in rows) + 1
        args.n_sigma = next(r["n"] for r in rows if r["panel"] == "sigma")
        args.out = args.from_csv.with_suffix("")
        summarise(rows, args)
        return
    with threadpool_limits(args.threads):
        if args.study == "figure2":
            figure2(args)
        else:
            candidates_study(args)


if __name__ == "__main__":
    main()
