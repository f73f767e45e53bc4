"""The spectral estimate under shared drift: anchored whitening and a privacy second pass.

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
    the K x K core from the window (:func:`admixspec.spectral.denoise.whiten_in_subspace`;
    the default now).
``anchored-min1000``
    ``anchored`` with windows of fewer than 1,000 SNPs skipped (the default skips
    those under 200: ``admixspec.model._MIN_MOMENT_SNPS``).
``privacy-<t>-<f>-x<i>``
    ``anchored``, then ``i`` second passes whose moment SNPs are those whose counted
    allele is private to one component under the previous estimate: with P the
    least-squares frequencies of *all* SNPs given the previous Q, the allele (of the
    two) with the larger ``max_k p_k / sum_k p_k`` is counted, and SNPs are kept where
    that share is at least ``t`` and the minor-allele frequency at most ``f``
    (whitening anchored as above). Kept here, not in the library: it did not help
    consistently (see docs/method.md, "Anchored whitening").

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

from admixspec import model
from admixspec.genotypes import allele_counts
from admixspec.metrics import q_error
from admixspec.ml.initial import p_given_q
from admixspec.spectral.denoise import whiten_in_subspace
from admixspec.spectral.estimate import (
    column_space,
    rare_allele_snps,
    snp_sample,
    spectral_pass,
    spectral_scan,
)
from admixspec.spectral.moments import frequency_blocks

ROOT = Path(__file__).resolve().parent.parent
CSV_PATH = ROOT / "benchmarks" / "results" / "spectral_second_pass.csv"
K = 3
SEED = 0
DEFAULT_SETTINGS = ("ooa", "papuan", "american", "bn", "paper-a1", "paper-a10")
#: (share threshold t, largest minor-allele frequency f, passes i) of the second pass.
PRIVACY_VARIANTS = ((0.9, 0.1, 1), (0.9, 0.5, 1), (0.9, 0.1, 2))


#: Scan variants: name -> (anchor, smallest window in SNPs; None: the default's).
SCAN_VARIANTS = {"window": (False, None), "anchored": (True, None),
                 "anchored-min1000": (True, 1000)}


def spectral_q(dosage, *, anchor, min_snps=None):
    """Q of the default spectral estimate, with the windows anchored or not."""
    scan = functools.partial(spectral_scan, anchor=anchor)
    floor = model._MIN_MOMENT_SNPS if min_snps is None else min_snps
    with mock.patch.object(model, "spectral_scan", scan), \
            mock.patch.object(model, "_MIN_MOMENT_SNPS", floor):
        return model.fit_admixture(dosage, K, refine=False, seed=SEED, threads=1).Q


def private_allele_snps(dosage, Q, counts, *, threshold, max_frequency):
    """SNPs whose counted allele's estimated frequency sits in one component.

    Returns
    -------
    snps : numpy.ndarray of int
    flip : numpy.ndarray of bool
        Count the other allele where its share is the more concentrated one.
    """
    P = p_given_q(dosage, Q)  # (n, K), least squares from all individuals

    def share(F):
        return F.max(axis=1) / np.maximum(F.sum(axis=1), 1e-12)

    counted_share, other_share = share(P), share(1.0 - P)
    flip = other_share > counted_share
    privacy = np.where(flip, other_share, counted_share)
    rare, _ = rare_allele_snps(*counts, max_frequency=max_frequency)
    keep = rare[privacy[rare] >= threshold]
    return keep, flip[keep]


def second_pass(dosage, Q, subspace, counts, sample, rescore, *, threshold, max_frequency):
    """One spectral pass on :func:`private_allele_snps`, whitened in ``subspace``."""
    snps, flip = private_allele_snps(dosage, Q, counts, threshold=threshold,
                                     max_frequency=max_frequency)
    projected = np.zeros((K, K))
    diagonal = np.zeros(dosage.shape[0])
    for _, x in frequency_blocks(dosage, snps=snps, flip=flip):
        z = subspace.T @ x
        projected += z @ z.T
        diagonal += np.einsum("ij,ij->i", x, x)
    white = whiten_in_subspace(projected / len(snps), diagonal / len(snps), subspace)
    result = spectral_pass(dosage, K, snps, flip, sample=sample, rescore_sample=rescore,
                           whitening=white, seed=SEED)
    return result.Q, len(snps)


def privacy_passes(dosage, Q, counts):
    """Q error inputs of every :data:`PRIVACY_VARIANTS` entry, from the anchored Q."""
    m, n = dosage.shape
    rng = np.random.default_rng(SEED)
    size = int(np.clip(model._SCORING_ENTRIES // m, 500, n))  # as the default's scan
    sample = snp_sample(dosage, size, rng)
    rescore = snp_sample(dosage, min(n, 10 * size), rng)
    rare, flip = rare_allele_snps(*counts, max_frequency=0.5)
    subspace, _ = column_space(dosage, K, rare, flip)
    out = {}
    for threshold, max_frequency, passes in PRIVACY_VARIANTS:
        current = Q
        for _ in range(passes):
            estimate, _ = second_pass(dosage, current, subspace, counts, sample, rescore,
                                      threshold=threshold, max_frequency=max_frequency)
            if estimate is None:  # fewer than K candidates: keep the previous Q
                break
            current = estimate
        out[f"privacy-{threshold:g}-{max_frequency:g}-x{passes}"] = current
    return out


def evaluate(name, replicate):
    """One row: Q error and seconds of every variant on one cached data set."""
    dosage, Q_true = load_setting(name, replicate)
    row = {"setting": name, "replicate": replicate}
    estimates = {}
    for variant, (anchor, min_snps) in SCAN_VARIANTS.items():
        clock = time.perf_counter()
        estimates[variant] = spectral_q(dosage, anchor=anchor, min_snps=min_snps)
        row[f"{variant}_seconds"] = time.perf_counter() - clock
        row[f"{variant}_error"] = q_error(Q_true, estimates[variant])
    clock = time.perf_counter()
    for variant, Q in privacy_passes(dosage, estimates["anchored"],
                                     allele_counts(dosage)).items():
        row[f"{variant}_error"] = q_error(Q_true, Q)
    row["privacy_seconds"] = time.perf_counter() - clock
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
