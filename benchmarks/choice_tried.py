"""Choice statistics tried against the default's rule and not kept (issue 19).

Every candidate is evaluated on the cached fits of ``benchmarks/choice_grid.py``
(no refit): calibrated on replicate 1 of the grid and of the realistic suite,
reported on the other replicates. docs/method.md ("Tried and not kept") quotes
the output.

``rules``
    The current rule, then:

    * **a spread gate** -- keep the spectral estimate when the spectral Q's
      spread (mean distance of the individuals from their mean ancestry, over
      the distance from the simplex's centre to a corner) is under a threshold,
      alone or only where the anchor count also finds no anchors;
    * **anchor thresholds that grow with the sample**, ``c * m**beta``
      individuals within each radius of the extremes (a cloud of more
      individuals puts more near its extremes by chance);
    * **a corner gate** on the anchor rule -- kept since (the third question of
      :mod:`admixspec.fit.choice`, after ``other-k`` below) -- ML only
      where, besides, most components have ``n`` individuals whose spectral
      proportion in it reaches a threshold (how far ML would have to stretch
      the spectral Q to put them at the corners);
    * **an infeasibility gate** on that rule -- ML only where, besides, the
      raw spectral Q (before its projection onto the simplex) misses the
      simplex by at least a threshold per individual (the spectral search's
      ``infeasibility`` over the individuals: a measure of its own error).
``mlfit``
    Statistics of the *final* ML fit from the spectral start (what a few ML
    iterations could at best show), per cell at 200 individuals of the
    coalescent data.
``realdata``
    The spread of the spectral Q on the HapMap3 tutorial (K = 2-5) and 1000
    Genomes phase 1 (K = 2-8): the real array data the default must fit by ML.
``snps``
    The infeasibility gate's statistic on the paper's setting at 200
    individuals and 80,000 SNPs (the suite has 20,000): does it move with the
    number of SNPs?
``other-k``
    The rule and the two gates, their constants calibrated at K = 3 as in
    ``rules``, scored on the grid at ``--K`` (``choice_grid.py fits --K 5``):
    data sets no calibration saw, per group of sizes.
``fresh``
    The default's choice, with the spectral and spectral+ML errors, on fresh
    draws of the seed paper's alpha = 10 setting at 200 individuals
    (:func:`admixspec.simulate_admixture`, seeds 1-3, 20,000 and 60,000 SNPs),
    where the corner gate does not always keep the spectral estimate.
``issue-cases``
    The default's choice, with the spectral and spectral+ML errors, on fresh
    draws of the four data sets of issue 19's own table, at their sizes: the
    seed paper's setting at alpha = 0.1, 1 and 10 with 50 individuals and
    80,000 SNPs asked (:func:`admixspec.simulate_admixture`, what ``admixspec
    simulate -m 50 --alpha A --n-snps 80000`` draws: its 10 Mb hold about
    72,000 polymorphic among the 50, all kept; seeds 21-25), and an
    out-of-Africa mosaic of 200 admixed individuals (Dirichlet(0.5) over YRI,
    CEU, CHB of stdpopsim's ``OutOfAfrica_3G09``) and 60 unadmixed, 260 x
    120,000 (:func:`realistic_suite.simulate_mosaic` on 40 Mb; seeds 31-33).
    The rule never saw these sizes: its constants were calibrated on the grid
    and the suite at 20,000-40,000 SNPs.
``transfer``
    Not a choice but a third estimate: plain ML's Q moved into the spectral
    frame, by the K x K frame change ``A`` (least squares; its rows sum to 1)
    that brings it nearest the spectral Q, clipped to the simplex. Both fits
    and the default's, per data set, on the grid's cells at 50 and 200
    individuals (Balding-Nichols: every alpha; mosaics: alpha 0.5, 1 and 10),
    replicates 1 and 2, simulated afresh (the grid's seeds).
``small``
    The anchor count's threshold (:data:`admixspec.fit.choice.MIN_NEAR_EXTREME`,
    10) swept from 2 to 10 on the data sets of 50 individuals only -- the grid's
    mosaic cells and the suite's ``paper50-*`` settings, replicates 1-5, fitted by
    ``choice_grid.fits`` where not cached -- calibrated on replicate 1 and reported
    on 2-5: a cohort of 50 with a quarter unadmixed has about 4 per component,
    fewer than the threshold asks.
``two``
    The corner gate at K = 2 (``choice_grid.py fits --K 2 --simulators mosaic
    coalescent bn``: mosaics of YRI and CEU, the seed paper's star tree of two
    populations and Balding-Nichols data, the grid's cells). At K = 2
    the anchor count always finds anchors (the two ends of a line of individuals
    have a quarter of the line's length about them), so the corner gate decides
    alone, and a K = 2 cloud reaches far nearer its corners than a K = 3 one of the
    same alpha. Its threshold at rank 5 is calibrated on replicate 1 (the grid
    below, neighbour-averaged) and reported on replicate 2, beside K = 3's 0.76.
``premise-absent``
    A second look where the spectral premise is absent (the default fitted
    plain ML there): when ML's own Q has individuals at fewer than half of
    its corners (the :data:`CORNER_RANK`-th highest proportion of a component
    reaching 0.95 or 0.99), run the spectral stage and keep its estimate
    when, in every component, its 1st or 3rd highest proportion stays under
    a share (0.2-0.4) of the way from the simplex's centre to the corner. On
    the grid's Balding-Nichols cells (calibrated on replicate 1, reported on
    2-5; plain ML fitted here as the default's ``ml-svd`` and cached beside
    the grid's fits), without and with the cluster gate the default adopted
    (:func:`admixspec.fit.choice.cluster_excess` at most
    :data:`~admixspec.fit.choice.CLUSTER_EXCESS`), then the default itself on
    real array data: the HapMap3 tutorial (K = 2-5), 1000 Genomes phase 1
    (K = 2-8) and its 379 Europeans (K = 2-5), where it must keep ML.
``ascertained``
    The second look where it could be wrong: the grid's coalescent mosaics
    (alpha 0.5-10, 200 and 1,000 individuals, replicates 1-2) with only the
    SNPs of sample minor allele frequency >= 0.05 kept, as on an array. Rare
    alleles are then few, so the default fits plain ML and may look again;
    per data set, plain ML's, the spectral estimate's and the default's Q
    errors, and what the look saw.
``blend``
    Not a choice but a hedge: the average ``(1 - w) Q_spectral + w Q_ML`` (ML's
    components matched to the spectral estimate's) where the anchor count is
    ambiguous. Per cell of the data sets where the anchors decide (rare-allele
    share at least :data:`MIN_RARE_SHARE`), the blends' errors at ``w`` = 0.25,
    0.5, 0.75 against the better estimator's; then the default with the blend
    where the extremes' median near-extreme count, as a share of the
    individuals, lies in a zone, the zone and ``w`` calibrated on replicate 1
    and reported on 2-5.

Usage::

    python benchmarks/choice_tried.py rules
    python benchmarks/choice_tried.py mlfit
    python benchmarks/choice_tried.py realdata
    python benchmarks/choice_tried.py snps
    python benchmarks/choice_tried.py other-k --K 5
    python benchmarks/choice_tried.py fresh
    python benchmarks/choice_tried.py transfer
    python benchmarks/choice_tried.py small
    python benchmarks/choice_tried.py premise-absent
    python benchmarks/choice_tried.py ascertained
    python benchmarks/choice_tried.py blend
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import choice_grid  # the grid's data sets and cached fits
import peers  # the real data sets, the 1000 Genomes Europeans among them
import realistic_suite

from admixspec import (
    fit_admixture,
    fit_ml,
    q_error,
    read_genotypes,
    simulate_admixture,
)
from admixspec.core.genotypes import allele_counts, minor_allele_counts
from admixspec.core.metrics import match_components
from admixspec.fit.choice import (
    ANCHOR_RADIUS,
    CLUSTER_EXCESS,
    CORNER_RANK,
    CORNER_REACH,
    MIN_NEAR_EXTREME,
    MIN_RARE_SHARE,
    choose_estimator,
    cluster_excess,
    corner_reach,
    extreme_neighbours,
    premise_absent,
)
from admixspec.fit.choice import second_look as look

ROOT = Path(__file__).resolve().parent.parent
REALDATA = {
    "hapmap3": (ROOT.parent / "shared/realdata/hapmap3_admixture_tutorial/hapmap3.bed",
                range(2, 6)),
    "1kg": (ROOT.parent / "shared/realdata/1kg_phase1_1092_flashpca/"
            "1kg.ref.phase1_release_v3.20101123_thinned_autosomal_overlap.bed",
            range(2, 9)),
}
RADII = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4)
BETAS = (0.0, 0.25, 0.5, 0.75, 1.0)
SPREADS = tuple(np.round(np.arange(0.04, 0.205, 0.01), 2))
CORNER_RANKS = (1, 3, 5, 10, 20)
CORNERS = tuple(np.round(np.arange(0.5, 1.001, 0.02), 2))
INFEASIBILITIES = tuple(np.round(np.arange(0.0, 0.04, 0.001), 3))
#: ``two``'s thresholds: finer near the corner, where a K = 2 cloud reaches.
CORNERS_TWO = tuple(np.round(np.arange(0.76, 1.0001, 0.005), 3))


def spread(Q):
    """Mean distance of Q's rows from their mean, over ``sqrt(1 - 1/K)``."""
    centred = Q - Q.mean(axis=0)
    return float(np.sqrt(np.einsum("ij,ij->i", centred, centred)).mean()
                 / np.sqrt(1 - 1 / Q.shape[1]))


def features(cells=None):
    """One dict per cached fit: errors, rare share, spread, anchor counts.

    ``cells``: the grid's cells to read (default the K = 3 grid's and the suite's).
    """
    out = []
    for cell in cells or choice_grid.cells() + choice_grid.suite_cells():
        for replicate in range(1, 6):
            cached = choice_grid.cached_fit(cell, replicate)
            if cached is None:
                continue
            row, arrays = cached
            Q = arrays["Q_spectral"]
            item = {"cell": row["cell"], "replicate": replicate,
                    "suite": cell[0] == "suite", "m": len(Q),
                    "spectral": row["spectral_error"], "ml": row["ml_error"],
                    "rare": row["rare_allele_share"], "spread": spread(Q)}
            near = {radius: extreme_neighbours(Q, radius=radius)[1] for radius in RADII}
            for radius in RADII:
                item[radius] = int(near[radius].min())
            item["near"] = near[ANCHOR_RADIUS].tolist()  # per component
            # per component, the proportion its n-th highest individual reaches
            item["corner"] = {n: corner_reach(Q, rank=n).tolist() for n in CORNER_RANKS}
            item["infeasibility"] = row["diag_infeasibility"] / len(Q)
            out.append(item)
    return out


def score(rule, items):
    """(within 1.1x, within 1.25x, mean log ratio, cells whose mean is over 1.1x)."""
    chosen = np.array([item["ml"] if rule(item) else item["spectral"]
                       for item in items])
    spectral = np.array([item["spectral"] for item in items])
    ml = np.array([item["ml"] for item in items])
    ratios = chosen / np.minimum(spectral, ml)
    failing = []
    for name in dict.fromkeys(item["cell"] for item in items):
        mask = np.array([item["cell"] == name for item in items])
        if chosen[mask].mean() > 1.1 * min(spectral[mask].mean(), ml[mask].mean()):
            failing.append(name)
    return (float(np.mean(ratios <= 1.1)), float(np.mean(ratios <= 1.25)),
            float(np.mean(np.log(ratios))), failing)


def line(label, rule, items):
    """One rule's scores on calibration and on the reported replicates."""
    groups = {"calibration": [i for i in items if i["replicate"] == 1],
              "grid reported": [i for i in items if i["replicate"] > 1
                                and not i["suite"]],
              "suite reported": [i for i in items if i["replicate"] > 1 and i["suite"]],
              "all reported": [i for i in items if i["replicate"] > 1]}
    parts = []
    for group in groups.values():
        w11, w125, log_ratio, failing = score(rule, group)
        parts.append(f"{w11:.1%} / {w125:.1%} / {log_ratio:.4f} / {len(failing)}")
    return f"| {label} | " + " | ".join(parts) + " |"


def current(item, radius=ANCHOR_RADIUS, min_near=MIN_NEAR_EXTREME):
    """The rule of admixspec.fit.choice (True: ML)."""
    return item["rare"] < MIN_RARE_SHARE or item[radius] >= min_near


def calibrate(make_rule, grid, items, shape=None):
    """The grid point with the lowest calibration mean log ratio, and its score.

    With ``shape`` (the grid's axes, row-major), each point's score is first
    averaged with its neighbours' on that grid.
    """
    calibration = [i for i in items if i["replicate"] == 1]
    scores = np.array([score(make_rule(*point), calibration)[2] for point in grid])
    if shape is not None:
        table = scores.reshape(shape)
        scores = np.array([[table[max(0, a - 1):a + 2, max(0, b - 1):b + 2].mean()
                            for b in range(shape[1])] for a in range(shape[0])]).ravel()
    best = int(np.argmin(scores))
    return grid[best], scores[best]


def anchored(item, min_near=MIN_NEAR_EXTREME):
    """Whether more than half of the components have ``min_near`` individuals near."""
    return 2 * sum(count >= min_near for count in item["near"]) > len(item["near"])


def majority(item):
    """The rule of admixspec.fit.choice without its corner gate (True: ML)."""
    return item["rare"] < MIN_RARE_SHARE or anchored(item)


def corner_gate(n, t, min_near=MIN_NEAR_EXTREME):
    """ML where the rule says so and most components' n-th highest Q reaches t.

    With the calibrated (n, t) this is the rule of admixspec.fit.choice since the
    corner gate was adopted (issue 19); ``min_near`` replaces its anchor count.
    """
    def reached(item):
        corners = item["corner"][n]
        return 2 * sum(value >= t for value in corners) > len(corners)
    return lambda item: item["rare"] < MIN_RARE_SHARE or (anchored(item, min_near)
                                                          and reached(item))


def infeasibility_gate(c):
    """ML where the rule says so and the raw spectral Q is >= c off the simplex."""
    return lambda item: item["rare"] < MIN_RARE_SHARE or (anchored(item)
                                                          and item["infeasibility"] >= c)


def calibrated_gates(items):
    """The corner gate's (n, t) and the infeasibility gate's c, calibrated on items."""
    (n, t), _ = calibrate(lambda n, t: corner_gate(n, t),
                          [(n, t) for n in CORNER_RANKS for t in CORNERS], items,
                          shape=(len(CORNER_RANKS), len(CORNERS)))
    (c,), _ = calibrate(lambda c: infeasibility_gate(c),
                        [(c,) for c in INFEASIBILITIES], items)
    return n, t, c


def run_rules(args):
    items = features()
    print(f"{len(items)} cached fits\n")
    print("Per group: within 1.1x / within 1.25x of the better estimator / mean log "
          "ratio / cells whose mean is over 1.1x.\n")
    print("| rule | calibration | grid reported | suite reported | all reported |")
    print("|---|---|---|---|---|")
    print(line("current (rare < 0.3 or 6 within 0.2)", current, items))
    for name, make in (
            ("spread gate", lambda t: lambda i: i["spread"] >= t and current(i)),
            ("spread gate, unanchored only",
             lambda t: lambda i: i[ANCHOR_RADIUS] >= MIN_NEAR_EXTREME
             or (i["rare"] < MIN_RARE_SHARE and i["spread"] >= t))):
        calibration = [item for item in items if item["replicate"] == 1]
        scores = np.array([score(make(t), calibration)[2] for t in SPREADS])
        smooth = np.convolve(np.pad(scores, 1, mode="edge"), np.ones(3) / 3, "valid")
        t = SPREADS[int(np.argmin(smooth))]
        print(line(f"{name}, threshold {t:.2f} (calibrated, neighbour-averaged)",
                   make(t), items))
    grid = [(radius, beta, c) for radius in RADII for beta in BETAS
            for c in np.exp(np.linspace(np.log(0.005), np.log(20), 60))]
    (radius, beta, c), _ = calibrate(
        lambda radius, beta, c: lambda i: i["rare"] < MIN_RARE_SHARE
        or i[radius] >= c * i["m"] ** beta, grid, items)
    print(line(f"anchors >= {c:.3g} m^{beta:g} within {radius:g} (calibrated)",
               lambda i: i["rare"] < MIN_RARE_SHARE or i[radius] >= c * i["m"] ** beta,
               items))
    print(line("the rule without its corner gate (majority of components with 10 "
               "within 0.25)", majority, items))
    n, t, c = calibrated_gates(items)
    print(line(f"corner gate: most components' {n}th highest >= {t:.2f} (calibrated, "
               "neighbour-averaged)", corner_gate(n, t), items))
    print(line(f"infeasibility gate: raw spectral Q >= {c:.3f} per individual off the "
               "simplex (calibrated)", infeasibility_gate(c), items))
    print("\nBalding-Nichols alpha = 10 data sets, spread and anchors:")
    for item in items:
        if item["cell"].startswith("bn-a10-") and item["cell"].endswith(("u0", "u10")):
            print(f"  {item['cell']}/{item['replicate']}: spread {item['spread']:.3f}, "
                  f"near-extreme {item[ANCHOR_RADIUS]}, "
                  f"spectral {item['spectral']:.3f}, ML {item['ml']:.3f}")


def print_groups(rules, groups):
    """A markdown table of each rule's :func:`score` on each group of data sets."""
    print("Per group: within 1.1x / within 1.25x of the better estimator / mean log "
          "ratio / cells whose mean is over 1.1x (n data sets).\n")
    print("| rule | " + " | ".join(groups) + " |")
    print("|---|" + "---|" * len(groups))
    for label, rule in rules.items():
        parts = []
        for group in groups.values():
            w11, w125, log_ratio, failing = score(rule, group)
            parts.append(f"{w11:.1%} / {w125:.1%} / {log_ratio:.4f} / {len(failing)} "
                         f"({len(group)})")
        print(f"| {label} | " + " | ".join(parts) + " |")


def run_other_k(args):
    """The gates calibrated at K = 3, scored on the grid at ``args.K`` (never seen)."""
    n, t, c = calibrated_gates(features())
    choice_grid.use_k(args.K)
    unseen = features(choice_grid.cells(choice_grid.SIMULATORS_K))
    groups = {"all": unseen,
              "spectral stage runs": [i for i in unseen if i["rare"] >= MIN_RARE_SHARE]}
    for m in choice_grid.SIZES:
        groups[f"{m} individuals"] = [i for i in unseen if i["m"] == m]
    print(f"K = {args.K}: {len(unseen)} cached fits; constants calibrated at K = 3 "
          f"(corner gate: {n}th highest >= {t:.2f}; infeasibility gate: {c:.3f})\n")
    print_groups({"the rule without the corner gate": majority,
                  "corner gate": corner_gate(n, t),
                  "infeasibility gate": infeasibility_gate(c)}, groups)
    for label, rule in (("corner gate", corner_gate(n, t)),
                        ("infeasibility gate", infeasibility_gate(c))):
        moved = [i for i in unseen if rule(i) != majority(i)]
        print(f"\n{label} moves {len(moved)} data sets from the rule's decision:")
        for i in moved:
            print(f"  {i['cell']}/{i['replicate']}: spectral {i['spectral']:.4f}, "
                  f"ML {i['ml']:.4f}; the rule {'ML' if majority(i) else 'spectral'}")


def cell_table(rule, items):
    """Per cell: data sets, mean spectral, ML and chosen errors, chosen / better."""
    lines = ["| cell | n | spectral | spectral+ML | chosen | chosen / better "
             "| chose ML |", "|---|---|---|---|---|---|---|"]
    for name in dict.fromkeys(item["cell"] for item in items):
        group = [item for item in items if item["cell"] == name]
        spectral, ml = (np.mean([item[key] for item in group])
                        for key in ("spectral", "ml"))
        chosen = np.mean([item["ml"] if rule(item) else item["spectral"]
                          for item in group])
        ratio = chosen / min(spectral, ml)
        lines.append(f"| {name} | {len(group)} | {spectral:.4f} | {ml:.4f} "
                     f"| {chosen:.4f} | {ratio:.2f}{' ✗' if ratio > 1.1 else ''} | "
                     f"{sum(map(rule, group))}/{len(group)} |")
    return "\n".join(lines)


def run_two(args):
    """The corner gate at K = 2: K = 3's threshold, and one calibrated at K = 2."""
    choice_grid.use_k(2)
    items = features(choice_grid.cells(("mosaic", *choice_grid.SIMULATORS_K)))
    grid = [(t,) for t in CORNERS_TWO]
    (t,), _ = calibrate(lambda t: corner_gate(CORNER_RANK, t), grid,
                        [i for i in items if i["replicate"] == 1],
                        shape=(1, len(grid)))
    reported = [i for i in items if i["replicate"] > 1]
    spectral_runs = [i for i in reported if i["rare"] >= MIN_RARE_SHARE]
    groups = {"calibration (rep. 1)": [i for i in items if i["replicate"] == 1],
              "reported (reps. 2+)": reported,
              "reported, spectral stage runs": spectral_runs}
    for simulator in ("mosaic", "coalescent"):
        groups[f"reported, {simulator}"] = [i for i in reported
                                            if i["cell"].startswith(simulator)]
    print(f"K = 2: {len(items)} cached fits; the K = 2 threshold calibrated on "
          f"replicate 1: {CORNER_RANK}th highest >= {t:.3f}\n")
    rules = {f"K = 3's corner gate ({CORNER_RANK}th >= {CORNER_REACH})":
             corner_gate(CORNER_RANK, CORNER_REACH),
             f"K = 2's ({CORNER_RANK}th >= {t:.3f})": corner_gate(CORNER_RANK, t),
             f"at the corner ({CORNER_RANK}th >= 1)": corner_gate(CORNER_RANK, 1.0)}
    print_groups(rules, groups)
    label, rule = next(iter(rules.items()))
    print(f"\n{label}, reported replicates, the cells where the spectral stage "
          "runs:\n")
    print(cell_table(rule, spectral_runs))


def run_mlfit(args):
    print("| cell | n | spectral / ML error | near-extreme, spectral / ML Q | "
          "on the boundary, spectral / ML Q | mean abs(Q_ML - Q_spectral) |")
    print("|---|---|---|---|---|---|")
    for cell in choice_grid.cells() + choice_grid.suite_cells():
        stats = []
        for replicate in range(1, 6):
            cached = choice_grid.cached_fit(cell, replicate)
            if cached is None or cached[0]["individuals"] != 200 \
                    or cached[0]["rare_allele_share"] < MIN_RARE_SHARE:
                continue
            row, arrays = cached
            Qs, Qm = arrays["Q_spectral"], arrays["Q_ml"]
            stats.append([row["spectral_error"], row["ml_error"],
                          extreme_neighbours(Qs)[1].min(),
                          extreme_neighbours(Qm)[1].min(),
                          np.mean((Qs < 1e-3).any(axis=1)),
                          np.mean((Qm < 1e-3).any(axis=1)), np.abs(Qm - Qs).mean()])
        if stats:
            s = np.mean(stats, axis=0)
            print(f"| {choice_grid.cell_name(cell)} | {len(stats)} | {s[0]:.3f} / "
                  f"{s[1]:.3f} | {s[2]:.1f} / {s[3]:.1f} | {s[4]:.2f} / {s[5]:.2f} | "
                  f"{s[6]:.3f} |")


def run_realdata(args):
    for name, (path, Ks) in REALDATA.items():
        genotypes = read_genotypes(str(path))
        for K in Ks:
            cpu = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = fit_admixture(genotypes, K, seed=0, refine=False, threads=1)
            near = extreme_neighbours(result.Q)[1]
            print(json.dumps({"data": name, "K": K, "spread": spread(result.Q),
                              "near_extreme": near.tolist(),
                              "rare_allele_share":
                                  result.diagnostics.get("rare_allele_share"),
                              "cpu": time.process_time() - cpu}), flush=True)


def run_snps(args):
    for alpha in (0.1, 1.0, 10.0):
        for seed in (101, 102):
            G, Q = realistic_suite.simulate_paper(seed, alpha=alpha, n_snps=80_000)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                spectral = fit_admixture(G, 3, seed=0, refine=False, threads=1)
                ml = fit_ml(G, 3, Q0=spectral.Q, P0=spectral.P, seed=0, threads=1)
            print(json.dumps({
                "alpha": alpha, "seed": seed, "individuals": len(G), "snps": G.shape[1],
                "infeasibility": spectral.diagnostics["infeasibility"] / len(G),
                "spectral": q_error(spectral.Q, Q), "ml": q_error(ml.Q, Q)}), flush=True)


def three_fits(G):
    """The spectral estimate, ML from it and the default on ``G`` (K = 3, one thread)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tuple(fit_admixture(G, 3, seed=0, refine=refine, threads=1)
                     for refine in (False, True, "auto"))


def run_fresh(args):
    """The default's choice on fresh draws of the paper's setting at 200 individuals."""
    for n_snps in (20_000, 60_000):
        for seed in (1, 2, 3):
            sim = simulate_admixture(200, 3, alpha=10.0, n_snps=n_snps, seed=seed)
            spectral, ml, default = three_fits(sim.genotypes)
            statistics = default.diagnostics["choice"]["statistics"]
            print(json.dumps({
                "snps": n_snps, "seed": seed, "path": default.path,
                "near_extreme": statistics["near_extreme"],
                "corner_reach": [round(v, 3) for v in statistics["corner_reach"]],
                "spectral": round(q_error(sim.Q, spectral.Q), 4),
                "ml": round(q_error(sim.Q, ml.Q), 4),
                "default": round(q_error(sim.Q, default.Q), 4)}), flush=True)


def issue_datasets():
    """(name, seed, dosage, true Q) of the fresh draws of issue 19's table."""
    for seed in range(21, 26):
        for alpha in (0.1, 1.0, 10.0):
            sim = simulate_admixture(50, 3, alpha=alpha, n_snps=80_000, seed=seed)
            yield f"paper-a{alpha:g}", seed, sim.genotypes.dosage, sim.Q
    for seed in (31, 32, 33):
        dosage, Q = realistic_suite.simulate_mosaic(
            seed, model="OutOfAfrica_3G09", sources=("YRI", "CEU", "CHB"),
            unadmixed=60 / 260, alpha=0.5, n_individuals=260, n_snps=120_000,
            sequence_length=40e6)
        yield "ooa-260", seed, dosage, Q


def run_issue_cases(args):
    """The default against both estimators on fresh draws of issue 19's table."""
    for name, seed, G, Q in issue_datasets():
        spectral, ml, default = three_fits(G)
        errors = {fit: round(q_error(Q, result.Q), 4) for fit, result in
                  (("spectral", spectral), ("ml", ml), ("default", default))}
        print(json.dumps({
            "data": name, "seed": seed, "shape": list(G.shape), "path": default.path,
            "near_extreme": default.diagnostics["choice"]["statistics"]["near_extreme"],
            **errors,
            "default_over_better": round(errors["default"]
                                         / min(errors["spectral"], errors["ml"]), 3)}),
            flush=True)


def frame_transfer(Q_ml, Q_spectral):
    """``Q_ml A`` on the simplex, ``A`` the least-squares frame onto ``Q_spectral``.

    Rows of both Q sum to 1, so the least-squares ``A`` maps ones to ones.
    """
    A, *_ = np.linalg.lstsq(Q_ml, Q_spectral, rcond=None)
    moved = np.clip(Q_ml @ A, 0.0, None)
    return moved / moved.sum(axis=1, keepdims=True)


def run_transfer(args):
    """Spectral, plain ML, their frame transfer and the default, against the truth."""
    alphas = {"bn": choice_grid.ALPHAS, "mosaic": (0.5, 1.0, 10.0)}
    for replicate in (1, 2):
        for cell in choice_grid.cells(("bn", "mosaic")):
            simulator, alpha, individuals, _ = cell
            if individuals > 200 or alpha not in alphas[simulator]:
                continue
            G, Q = choice_grid.simulate(cell, replicate)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                default = fit_admixture(G, 3, seed=0, threads=1)
                spectral = (default if not default.diagnostics["refine"] else
                            fit_admixture(G, 3, seed=0, refine=False, threads=1))
                ml = fit_ml(G, 3, seed=0, threads=1)
            print(json.dumps({
                "cell": choice_grid.cell_name(cell), "replicate": replicate,
                "default_estimator": default.diagnostics["choice"]["estimator"],
                "spectral": round(q_error(Q, spectral.Q), 4),
                "ml": round(q_error(Q, ml.Q), 4),
                "transfer": round(q_error(Q, frame_transfer(ml.Q, spectral.Q)), 4),
                "default": round(q_error(Q, default.Q), 4)}), flush=True)


def run_small(args):
    """The anchor threshold swept on the data sets of 50 individuals."""
    small = [cell for cell in choice_grid.cells(("mosaic",)) if cell[2] == 50] + [
        ("suite", name, None, None) for name in ("paper50-a0.1", "paper50-a1",
                                                 "paper50-a10")]
    for replicate in range(1, 6):
        for cell in small:
            choice_grid.fits(cell, replicate)
    items = features(small)
    print("| near-extreme threshold | calibration | grid reported | suite reported | "
          "all reported |")
    print("|---|---|---|---|---|")
    for threshold in range(2, MIN_NEAR_EXTREME + 1):
        print(line(str(threshold), corner_gate(CORNER_RANK, CORNER_REACH, threshold),
                   items), flush=True)


ML_CORNERS = (0.95, 0.99)
SPREAD_RANKS = (1, 3)
MAX_SPREADS = (0.2, 0.25, 0.3, 0.35, 0.4)


def plain_ml_q(cell, replicate):
    """Plain ML's Q on a grid data set (the default's ``ml-svd`` fit), cached."""
    name = f"{choice_grid.cell_name(cell)}_{replicate}.npy"
    path = choice_grid.CACHE / "plain_ml" / name
    if not path.exists():
        G, _ = choice_grid.load_data(cell, replicate)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Q = fit_ml(G, 3, seed=0, threads=1).Q
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, Q)
    return np.load(path)


def second_look(Q_ml, Q_spectral, ml_corner, spread_rank, max_spread):
    """(whether the spectral stage would run, whether its estimate would be kept):
    the library's :func:`admixspec.fit.choice.second_look` at these constants,
    its cluster gate left open (the stage applies it apart)."""
    first = premise_absent(0.0)
    constants = dict(ml_corner=ml_corner, spread_rank=spread_rank,
                     max_spread=max_spread)
    if look(Q_ml, first, **constants)[0] != "cluster":
        return False, False
    step, _ = look(Q_ml, first, excess=(0.0, 0.0), Q_spectral=Q_spectral, **constants)
    return True, step == "spectral"


def look_statistics(result):
    """The second look's statistics in a default's record, rounded (those it got to)."""
    statistics = result.diagnostics["choice"]["statistics"]
    return {key: np.round(statistics[key], 3).tolist()
            for key in ("ml_corner_reach", "cluster_excess", "spectral_spread")
            if key in statistics}


def run_premise_absent(args):
    """The second look on the Balding-Nichols cells, then the default on real data."""
    items = []
    for replicate in range(1, 6):
        for cell in choice_grid.cells(("bn",)):
            choice_grid.fits(cell, replicate)  # cached where it has run
            row, arrays = choice_grid.cached_fit(cell, replicate)
            G, Q_true = choice_grid.load_data(cell, replicate)
            Q_ml = plain_ml_q(cell, replicate)
            # the most demanding ML corner looks the most often
            looks, _ = second_look(Q_ml, arrays["Q_spectral"], max(ML_CORNERS), 3, 0.3)
            excess = cluster_excess(G, 3, seed=0)[1] if looks else None
            items.append((row, replicate, Q_ml, arrays["Q_spectral"],
                          q_error(Q_true, Q_ml), excess))
    print("| ML corner | spread rank | max spread | cluster gate | replicates | data "
          "sets | spectral stage runs | switched (right) | within 1.1x | mean log "
          "ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for constants in itertools.product(ML_CORNERS, SPREAD_RANKS, MAX_SPREADS):
        for gate in (None, CLUSTER_EXCESS):
            for label, wanted in (("1", {1}), ("2-5", {2, 3, 4, 5})):
                ratios, runs, switched, right = [], 0, 0, 0
                for row, replicate, Q_ml, Q_spectral, ml_error, excess in items:
                    if replicate not in wanted:
                        continue
                    looks, keep = second_look(Q_ml, Q_spectral, *constants)
                    if gate is not None and looks:
                        looks = excess <= gate
                        keep = keep and looks
                    error = row["spectral_error"] if keep else ml_error
                    ratios.append(error / min(row["spectral_error"], ml_error))
                    runs, switched = runs + looks, switched + keep
                    right += keep and row["spectral_error"] < ml_error
                ratios = np.array(ratios)
                print(f"| {constants[0]} | {constants[1]} | {constants[2]} | "
                      f"{'off' if gate is None else f'<= {gate:g}'} | {label} | "
                      f"{len(ratios)} | {runs} | {switched} ({right}) | "
                      f"{np.mean(ratios <= 1.1):.3f} | {np.mean(np.log(ratios)):.4f} |",
                      flush=True)
    plain = np.array([ml / min(row["spectral_error"], ml)
                      for row, _, _, _, ml, _ in items])
    print(f"plain ML everywhere: {len(plain)} data sets, within 1.1x "
          f"{np.mean(plain <= 1.1):.3f}, mean log ratio {np.mean(np.log(plain)):.4f}")
    reported = [(row, ml) for row, replicate, _, _, ml, _ in items if replicate > 1]
    ratios = np.array([ml / min(row["spectral_error"], row["ml_error"])
                       for row, ml in reported])
    cells = {}
    for row, ml in reported:
        cells.setdefault(row["cell"], []).append(
            (ml, row["spectral_error"], row["ml_error"]))
    over = [name for name, errors in cells.items()
            if np.mean([e[0] for e in errors]) > 1.1 * min(
                np.mean([e[1] for e in errors]), np.mean([e[2] for e in errors]))]
    print(f"plain ML, replicates 2-5, against the better of spectral and spectral+ML "
          f"(the grid's tables): {len(ratios)} data sets, within 1.1x "
          f"{np.mean(ratios <= 1.1):.1%}, within 1.25x {np.mean(ratios <= 1.25):.1%}, "
          f"cells over 1.1x: {len(over)} ({', '.join(over)})")
    for name, Ks in (("hapmap3", range(2, 6)), ("1kg", range(2, 9)),
                     ("1kg-eur", range(2, 6))):
        G = peers.load(name).dosage
        for K in Ks:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = fit_admixture(G, K, seed=0, threads=1)
            print(json.dumps({"data": name, "K": K, "path": result.path}
                             | look_statistics(result) | {"seconds": {
                                 key: round(value, 2)
                                 for key, value in result.timings.items()}}),
                  flush=True)


def run_ascertained(args):
    """The default on array-like (common-SNP) subsets of the grid's mosaics."""
    for replicate in (1, 2):
        for cell in choice_grid.cells(("mosaic",)):
            if cell[1] == 0.1 or cell[2] == 50:
                continue
            G, Q_true = choice_grid.load_data(cell, replicate)
            counted, observed = allele_counts(G)
            common = minor_allele_counts(counted, observed) >= 0.05 * observed
            G = np.ascontiguousarray(G[:, common])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                Q_ml = fit_ml(G, 3, seed=0, threads=1).Q
                spectral = fit_admixture(G, 3, seed=0, refine=False, threads=1)
                default = fit_admixture(G, 3, seed=0, threads=1)
            print(json.dumps({
                "cell": choice_grid.cell_name(cell), "replicate": replicate,
                "snps": int(common.sum()), "ml": round(q_error(Q_true, Q_ml), 4),
                "spectral": round(q_error(Q_true, spectral.Q), 4),
                "default": round(q_error(Q_true, default.Q), 4),
                "path": default.path} | look_statistics(default)), flush=True)


BLEND_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
BLEND_SHARES = tuple(np.round(np.arange(0.01, 0.3, 0.01), 2))


def blend_items():
    """Per cached fit where the anchors decide: the blends' errors and the rule's."""
    items = []
    for cell in choice_grid.cells() + choice_grid.suite_cells():
        for replicate in range(1, 6):
            cached = choice_grid.cached_fit(cell, replicate)
            if cached is None or cached[0]["rare_allele_share"] < MIN_RARE_SHARE:
                continue
            row, arrays = cached
            _, Q_true = choice_grid.load_data(cell, replicate)
            Q_spectral, Q_ml = arrays["Q_spectral"], arrays["Q_ml"]
            Q_ml = Q_ml[:, match_components(Q_spectral, Q_ml)]
            choice = choose_estimator(Q_spectral, row["rare_allele_share"])
            near = np.sort(choice.statistics["near_extreme"])
            items.append({
                "cell": row["cell"], "replicate": replicate, "suite": cell[0] == "suite",
                "near_share": float(near[len(near) // 2]) / len(Q_spectral),
                "ml_chosen": choice.estimator == "spectral+ml",
                "error": {w: q_error(Q_true, (1 - w) * Q_spectral + w * Q_ml)
                          for w in BLEND_WEIGHTS}})
    return items


def blend_score(items, zone=None, weight=0.5):
    """:func:`score` of the rule, with the blend where the near share is in ``zone``."""
    chosen, better, cells = [], [], {}
    for item in items:
        error = item["error"]
        default = error[1.0] if item["ml_chosen"] else error[0.0]
        if zone is not None and zone[0] <= item["near_share"] <= zone[1]:
            default = error[weight]
        chosen.append(default)
        better.append(min(error[0.0], error[1.0]))
        sums = cells.setdefault(item["cell"], np.zeros(3))
        sums += (default, error[0.0], error[1.0])
    ratios = np.array(chosen) / np.array(better)
    failing = [name for name, sums in cells.items() if sums[0] > 1.1 * sums[1:].min()]
    return (float(np.mean(ratios <= 1.1)), float(np.mean(ratios <= 1.25)),
            float(np.mean(np.log(ratios))), failing)


def run_blend(args):
    """The blend's errors per cell, then a calibrated hedge zone, reported."""
    items = blend_items()
    print("Cell means; the blends' errors over the better estimator's.\n")
    print("| cell | spectral | ML | w = 0.25 | 0.5 | 0.75 |")
    print("|---|---|---|---|---|---|")
    for name in dict.fromkeys(item["cell"] for item in items):
        mean = {w: np.mean([i["error"][w] for i in items if i["cell"] == name])
                for w in BLEND_WEIGHTS}
        better = min(mean[0.0], mean[1.0])
        print(f"| {name} | {mean[0.0]:.4f} | {mean[1.0]:.4f} | " + " | ".join(
            f"{mean[w] / better:.2f}" for w in (0.25, 0.5, 0.75)) + " |")
    calibration = [i for i in items if i["replicate"] == 1]
    reported = [i for i in items if i["replicate"] > 1]
    zones = [(a, b) for a, b in itertools.product(BLEND_SHARES, BLEND_SHARES) if a <= b]
    candidates = [(blend_score(calibration, zone, w)[2], zone, w)
                  for zone in zones for w in (0.25, 0.5, 0.75)]
    _, zone, weight = min(candidates)
    print("\nwithin 1.1x / within 1.25x / mean log ratio / cells over 1.1x")
    hedged = (f"blend w = {weight} where the median near share is in "
              f"[{zone[0]}, {zone[1]}]")
    for label, rule in (("the rule", (None, 0.5)), (hedged, (zone, weight))):
        parts = []
        for group in (calibration, reported):
            w11, w125, log_ratio, failing = blend_score(group, *rule)
            parts.append(f"{w11:.1%} / {w125:.1%} / {log_ratio:.4f} / {len(failing)}")
        print(f"{label}: calibration {parts[0]}; reported {parts[1]}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("stage", choices=("rules", "mlfit", "realdata", "snps",
                                          "other-k", "fresh", "issue-cases", "transfer",
                                          "small", "premise-absent", "two",
                                          "ascertained", "blend"))
    parser.add_argument("--K", type=int, default=5,
                        help="other-k: the grid's K (choice_grid.py fits --K)")
    args = parser.parse_args(argv)
    {"rules": run_rules, "mlfit": run_mlfit, "realdata": run_realdata,
     "snps": run_snps, "other-k": run_other_k, "fresh": run_fresh,
     "issue-cases": run_issue_cases,
     "transfer": run_transfer, "small": run_small,
     "premise-absent": run_premise_absent, "two": run_two,
     "ascertained": run_ascertained, "blend": run_blend}[args.stage](args)


if __name__ == "__main__":
    main()
