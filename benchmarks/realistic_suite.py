"""The realistic benchmark suite of the default estimator choice (issue 11).

Settings (K = 3 throughout, 200 individuals, 20,000 SNPs kept at random among the
polymorphic ones; ``--replicates`` data sets per setting, seeds 1, 2, ...):

``paper-a0.1``, ``paper-a1``, ``paper-a10``
    The seed paper's coalescent setting (:func:`admixspec.simulate.simulate_admixture`:
    three populations split 4,000 generations ago, mosaics with Dirichlet(alpha)
    proportions), 200 admixed individuals.
``american``, ``american-ref``
    stdpopsim HomSap ``AmericanAdmixture_4B18`` (called ``AmericanAdmixture_4B11`` before
    stdpopsim 0.2.1): 200 individuals of its admixed population, or 150 of them plus 50
    unadmixed references (17 AFR, 17 EUR, 16 ASIA; 25%). The truth of an admixed
    individual is the share of its genome that descends, 13 generations ago (just
    before the model's admixture pulse), from each source population, read from
    msprime census nodes.
``ooa``, ``ooa-ref``, ``papuan``, ``papuan-ref``
    Mosaics (as in the paper's setting: Dirichlet(1) proportions, blocks of
    Exponential(20 per Morgan)) of 40 present-day haplotypes from each of three
    sources of a HomSap model: YRI, CEU, CHB of ``OutOfAfrica_3G09`` (CEU and CHB share
    the out-of-Africa bottleneck) and CEU, CHB, Papuan of ``PapuansOutOfAfrica_10J19``
    (all three share it); ``-ref``: 25% of the individuals unadmixed.
``ooa-ref-missing``
    ``ooa-ref`` with 5% of the genotypes set missing at random.
``bn``
    Balding-Nichols (F_ST = 0.1, Dirichlet(1) proportions; array-like: few rare alleles).

stdpopsim's HomSap genetic maps need network access, so every coalescent simulation uses
a uniform recombination rate of 1e-8 per bp per generation and the model's own mutation
rate, run by msprime directly on the stdpopsim model's ``Demography``.

For each data set the script runs ``fit_admixture`` three ways — ``refine=False``
(spectral), ``refine=True`` (spectral+ML) and ``refine="auto"`` (the default, whose
choice is :func:`admixspec.fit.choice.choose_estimator`) — and the peers fastmixture
1.3.0 and ADAMIXTURE 1.8.8 (one thread, their defaults, on the same matrix written as
PLINK files; skipped when not installed), and records Q error against the truth
(:func:`admixspec.core.metrics.q_error`), log-likelihood, wall and CPU time, the error
of reporting everyone at the column means of the true Q (the baseline a good estimator
must beat when individuals carry little information) and the default's statistics.

Usage::

    python benchmarks/realistic_suite.py                    # all settings, 5 replicates
    python benchmarks/realistic_suite.py --settings ooa-ref paper-a1 --replicates 2

Simulated data are cached in ``benchmarks/results/realistic_suite/`` (git-ignored); the
per-data-set CSV goes to ``benchmarks/results/realistic_suite.csv`` and a Markdown table
of means per setting is printed.
"""

from __future__ import annotations

import argparse
import copy
import csv
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ml_speed import (
    run_adamixture,
    run_fastmixture,
)

from admixspec.core.exceptions import ConvergenceWarning
from admixspec.core.filters import filter_monomorphic
from admixspec.core.genotypes import Genotypes
from admixspec.core.metrics import q_error
from admixspec.fit.admixture import fit_admixture
from admixspec.ml.likelihood import loglikelihood
from admixspec.simulate import (
    _mosaic_blocks,
    simulate_admixture,
    simulate_balding_nichols,
)

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "benchmarks" / "results" / "realistic_suite"
CSV_PATH = ROOT / "benchmarks" / "results" / "realistic_suite.csv"
PEERS_PATH = os.environ.get("ADMIXSPEC_PEERS", "/work/peers/bin")
K = 3
N_INDIVIDUALS = 200
N_SNPS = 20_000
N_HAPLOTYPES = 40
RECOMBINATION_RATE = 1e-8
#: Generations before present just older than AmericanAdmixture's pulse (12).
CENSUS_TIME = 13.0

SETTINGS = {
    "paper-a0.1": ("paper", {"alpha": 0.1}),
    "paper-a1": ("paper", {"alpha": 1.0}),
    "paper-a10": ("paper", {"alpha": 10.0}),
    "paper50-a0.1": ("paper", {"alpha": 0.1, "n_individuals": 50, "n_snps": None}),
    "paper50-a1": ("paper", {"alpha": 1.0, "n_individuals": 50, "n_snps": None}),
    "paper50-a10": ("paper", {"alpha": 10.0, "n_individuals": 50, "n_snps": None}),
    "american": ("american", {"n_references": 0}),
    "american-ref": ("american", {"n_references": 50}),
    "ooa": ("mosaic", {"model": "OutOfAfrica_3G09", "sources": ("YRI", "CEU", "CHB"),
                       "unadmixed": 0.0}),
    "ooa-ref": ("mosaic", {"model": "OutOfAfrica_3G09", "sources": ("YRI", "CEU", "CHB"),
                           "unadmixed": 0.25}),
    "ooa-ref-missing": ("mosaic", {"model": "OutOfAfrica_3G09",
                                   "sources": ("YRI", "CEU", "CHB"), "unadmixed": 0.25,
                                   "missing": 0.05}),
    "papuan": ("mosaic", {"model": "PapuansOutOfAfrica_10J19",
                          "sources": ("CEU", "CHB", "Papuan"), "unadmixed": 0.0}),
    "papuan-ref": ("mosaic", {"model": "PapuansOutOfAfrica_10J19",
                              "sources": ("CEU", "CHB", "Papuan"), "unadmixed": 0.25}),
    "bn": ("bn", {}),
}


def _keep_snps(dosage, rng, n_snps=N_SNPS):
    """Polymorphic SNPs, ``n_snps`` of them at random (position order kept)."""
    keep = np.flatnonzero(dosage.min(axis=0) != dosage.max(axis=0))
    if len(keep) > n_snps:
        keep = np.sort(rng.choice(keep, size=n_snps, replace=False))
    return np.ascontiguousarray(dosage[:, keep])


def _haplotypes(tree_sequence):
    """Biallelic sites as (haplotypes, sites) int8 copies of the derived allele."""
    haplotypes = tree_sequence.genotype_matrix().T
    biallelic = haplotypes.max(axis=0) == 1
    return haplotypes[:, biallelic].astype(np.int8), tree_sequence.tables.sites.position[
        biallelic]


def _homsap(model_id):
    import stdpopsim

    with warnings.catch_warnings():  # the deprecated-name warning of old model ids
        warnings.simplefilter("ignore", UserWarning)
        return stdpopsim.get_species("HomSap").get_demographic_model(model_id)


def simulate_paper(seed, *, alpha, n_individuals=N_INDIVIDUALS, n_snps=N_SNPS):
    sim = simulate_admixture(n_individuals, K, alpha=alpha, n_snps=n_snps, seed=seed)
    return sim.genotypes.dosage, sim.Q  # polymorphic SNPs only


def simulate_bn(seed):
    sim = simulate_balding_nichols(N_INDIVIDUALS, N_SNPS, K, fst=0.1, alpha=1.0,
                                   seed=seed)
    return sim.genotypes.dosage, sim.Q


def simulate_american(seed, *, n_references, sequence_length=10e6):
    """AmericanAdmixture_4B18 with census-based truth (see the module docstring)."""
    import msprime

    model = _homsap("AmericanAdmixture_4B18")
    demography = copy.deepcopy(model.model)
    demography.add_census(time=CENSUS_TIME)
    demography.sort_events()
    per_source = [n_references // 3 + (k < n_references % 3) for k in range(3)]
    samples = {"ADMIX": N_INDIVIDUALS - n_references, "AFR": per_source[0],
               "EUR": per_source[1], "ASIA": per_source[2]}
    rng = np.random.default_rng(seed)
    ts = msprime.sim_ancestry(
        samples={name: count for name, count in samples.items() if count},
        demography=demography, sequence_length=sequence_length,
        recombination_rate=RECOMBINATION_RATE, random_seed=int(rng.integers(1, 2**31)))
    ts = msprime.sim_mutations(ts, rate=model.mutation_rate,
                               random_seed=int(rng.integers(1, 2**31)))
    haplotypes, _ = _haplotypes(ts)
    # diploids of consecutive haplotypes, counting the ancestral allele
    dosage = (2 - haplotypes[0::2] - haplotypes[1::2]).astype(np.int8)
    return _keep_snps(dosage, rng), _census_ancestry(ts, demography)


def _census_ancestry(ts, demography):
    """Share of each diploid's genome below a census node of AFR, EUR, ASIA."""
    nodes = ts.tables.nodes
    census = np.flatnonzero(np.isclose(nodes.time, CENSUS_TIME))
    samples = ts.samples()
    edges = ts.tables.link_ancestors(samples, census)
    sources = [demography[name].id for name in ("AFR", "EUR", "ASIA")]
    component = np.searchsorted(sources, nodes.population[edges.parent])
    haplotype = np.searchsorted(samples, edges.child)
    span = np.zeros((len(samples), K))
    np.add.at(span, (haplotype, component), edges.right - edges.left)
    Q = span[0::2] + span[1::2]
    return Q / Q.sum(axis=1, keepdims=True)


def simulate_mosaic(seed, *, model, sources, unadmixed, missing=0.0,
                    sequence_length=10e6, block_rate=20.0, bp_per_morgan=1e8,
                    alpha=1.0, n_individuals=N_INDIVIDUALS, n_snps=N_SNPS):
    """Mosaics of present-day haplotypes of the ``sources`` of a stdpopsim model.

    ``alpha`` (Dirichlet concentration of the admixed individuals' proportions),
    ``n_individuals`` and ``n_snps`` default to the suite's settings;
    benchmarks/choice_grid.py varies them, and its K = 2 grid gives two sources.
    """
    import msprime

    K = len(sources)  # the suite's three; the same draws as with the module's K
    homsap = _homsap(model)
    rng = np.random.default_rng(seed)
    ts = msprime.sim_ancestry(
        samples=[msprime.SampleSet(N_HAPLOTYPES, population=name, ploidy=1)
                 for name in sources],
        demography=homsap.model, sequence_length=sequence_length,
        recombination_rate=RECOMBINATION_RATE, random_seed=int(rng.integers(1, 2**31)))
    ts = msprime.sim_mutations(ts, rate=homsap.mutation_rate,
                               random_seed=int(rng.integers(1, 2**31)))
    haplotypes, positions = _haplotypes(ts)
    W = rng.dirichlet(np.full(K, alpha), size=n_individuals)
    n_pure = int(round(unadmixed * n_individuals))
    W[:n_pure] = np.eye(K)[np.arange(n_pure) % K]
    dosage = np.full((n_individuals, haplotypes.shape[1]), 2, dtype=np.int8)
    realised = np.zeros((n_individuals, K))
    sites = np.arange(len(positions))
    for i in range(n_individuals):  # a handful of blocks per chromosome
        for _ in range(2):
            ends, pops = _mosaic_blocks(rng, W[i], sequence_length,
                                        block_rate / bp_per_morgan)
            np.add.at(realised[i], pops, ends - np.concatenate([[0.0], ends[:-1]]))
            copied = pops * N_HAPLOTYPES + rng.integers(0, N_HAPLOTYPES, size=len(pops))
            block = np.searchsorted(ends, positions, side="right")
            dosage[i] -= haplotypes[copied[block], sites]
    dosage = _keep_snps(dosage, rng, n_snps)
    if missing:
        dosage[rng.random(dosage.shape) < missing] = -1
    return dosage, realised / realised.sum(axis=1, keepdims=True)


SIMULATORS = {"paper": simulate_paper, "american": simulate_american,
              "mosaic": simulate_mosaic, "bn": simulate_bn}


def load_setting(name, replicate):
    """(dosage, true Q) of one replicate, simulated once and cached."""
    path = CACHE / f"{name}_{replicate}.npz"
    if path.exists():
        data = np.load(path)
        return data["dosage"], data["Q"]
    kind, kwargs = SETTINGS[name]
    clock = time.perf_counter()
    dosage, Q = SIMULATORS[kind](1000 * replicate + 17, **kwargs)
    print(f"  simulated {name} replicate {replicate}: {dosage.shape} in "
          f"{time.perf_counter() - clock:.0f} s", flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, dosage=dosage, Q=Q)
    return dosage, Q


ESTIMATORS = ("spectral", "spectral+ml", "default")


def _timed_fit(dosage, seed, refine):
    clock, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():  # an unconverged fit is recorded, not fatal
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = fit_admixture(dosage, K, seed=seed, refine=refine, threads=1)
    return result, time.perf_counter() - clock, time.process_time() - cpu


def _record(row, estimator, Q_true, result, seconds, cpu_seconds):
    row[f"{estimator}_seconds"] = seconds
    row[f"{estimator}_cpu_seconds"] = cpu_seconds
    row[f"{estimator}_error"] = q_error(Q_true, result.Q)
    row[f"{estimator}_loglik"] = result.loglik
    row[f"{estimator}_converged"] = result.converged


#: Peers run on the suite's matrices: name -> (runner in ml_speed.py, executable).
PEERS = {"fastmixture": (run_fastmixture, "fastmixture"),
         "adamixture": (run_adamixture, "adamixture")}


def peer_row(name, dosage, Q_true, workdir):
    """A peer (fastmixture 1.3.0, ADAMIXTURE 1.8.8; one thread, its defaults).

    Returns (Q error, log-likelihood, wall seconds, CPU seconds), or None when
    the peer is not installed (they are benchmark-only tools: on PATH, beside
    this Python, or in ``ADMIXSPEC_PEERS``, default /work/peers/bin). Both
    refuse SNPs monomorphic among the observed genotypes (5% missing leaves a
    few): they get the others, and the log-likelihood is theirs.
    """
    runner, program = PEERS[name]
    exe = shutil.which(program) or shutil.which(
        program, path=f"{Path(sys.executable).parent}:{PEERS_PATH}")
    if exe is None:
        return None
    genotypes = filter_monomorphic(Genotypes.from_array(dosage))
    fit, log = runner(exe, genotypes, K, 1, workdir)
    if fit is None:
        raise RuntimeError(f"{name} failed: {log}")
    Q, P, seconds, cpu = fit
    return q_error(Q_true, Q), loglikelihood(genotypes.dosage, Q, P), seconds, cpu


def evaluate(name, replicate, *, seed=0):
    """One CSV row: every estimator's Q error, log-likelihood and wall time."""
    dosage, Q_true = load_setting(name, replicate)
    row = {"setting": name, "replicate": replicate,
           "unadmixed_share": float(np.mean(Q_true.max(axis=1) > 0.99)),
           "column_mean_error": q_error(Q_true, np.tile(Q_true.mean(axis=0),
                                                        (len(Q_true), 1)))}
    spectral, *seconds = _timed_fit(dosage, seed, False)
    _record(row, "spectral", Q_true, spectral, *seconds)
    row["rare_allele_share"] = spectral.diagnostics["rare_allele_share"]
    _record(row, "spectral+ml", Q_true, *_timed_fit(dosage, seed, True))
    default, *seconds = _timed_fit(dosage, seed, "auto")
    _record(row, "default", Q_true, default, *seconds)
    choice = default.diagnostics["choice"]
    row["default_path"] = default.path
    # absent where too few rare alleles decided on ML before the spectral stage
    row["near_extreme_min"] = min(choice["statistics"].get("near_extreme", [np.nan]))
    row["choice_seconds"] = choice["seconds"]
    for name in PEERS:
        with tempfile.TemporaryDirectory() as workdir:
            peer = peer_row(name, dosage, Q_true, workdir)
        if peer is not None:
            for key, value in zip(("error", "loglik", "seconds", "cpu_seconds"), peer,
                                  strict=True):
                row[f"{name}_{key}"] = value
    return row


def summarise(rows):
    """Markdown table of per-setting means (Q error, time) and the default's choices."""
    peers = ESTIMATORS + tuple(PEERS)
    lines = ["| setting | reps | spectral | spectral+ML | default | fastmixture | "
             "ADAMIXTURE | default ÷ better | column means | default chose ML | "
             "near-extreme (median) | log-lik default − ML | CPU s spectral / +ML / "
             "default / fastmixture / ADAMIXTURE |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in dict.fromkeys(row["setting"] for row in rows):
        group = [row for row in rows if row["setting"] == name]

        def mean(key, group=group):
            return float(np.mean([float(row.get(key) or "nan") for row in group]))

        chose_ml = sum(row["default_path"] != "spectral" for row in group)
        better = min(mean("spectral_error"), mean("spectral+ml_error"))
        lines.append(
            f"| {name} | {len(group)} | {mean('spectral_error'):.4f} | "
            f"{mean('spectral+ml_error'):.4f} | {mean('default_error'):.4f} | "
            f"{mean('fastmixture_error'):.4f} | {mean('adamixture_error'):.4f} | "
            f"{mean('default_error') / better:.2f} | "
            f"{mean('column_mean_error'):.4f} | {chose_ml}/{len(group)} | "
            f"{np.median([float(row['near_extreme_min']) for row in group]):.0f} | "
            f"{mean('default_loglik') - mean('spectral+ml_loglik'):.0f} | "
            + " / ".join(f"{mean(f'{e}_cpu_seconds'):.1f}" for e in peers) + " |")
    lines.append("")
    for kind, suffix in (("wall", "seconds"), ("CPU", "cpu_seconds")):
        totals = {e: sum(float(row.get(f"{e}_{suffix}") or "nan") for row in rows)
                  for e in peers}
        lines.append(f"Total {kind} time: "
                     + ", ".join(f"{e} {t:.0f} s" for e, t in totals.items()))
    return "\n".join(lines)


def _read_csv(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS),
                        default=list(SETTINGS))
    parser.add_argument("--replicates", type=int, default=5)
    parser.add_argument("--out", type=Path, default=CSV_PATH)
    parser.add_argument("--table-only", action="store_true",
                        help="print the table of an existing --out CSV")
    args = parser.parse_args(argv)
    if not args.table_only:
        done = {(r["setting"], int(r["replicate"])) for r in _read_csv(args.out)} \
            if args.out.exists() else set()
        for name in args.settings:
            for replicate in range(1, args.replicates + 1):
                if (name, replicate) in done:  # resumable: rows already measured stay
                    continue
                row = evaluate(name, replicate)
                print(f"{name} {replicate}: " + ", ".join(
                    f"{e} {row[f'{e}_error']:.4f} ({row[f'{e}_seconds']:.1f} s)"
                    for e in ESTIMATORS) + f", near-extreme {row['near_extreme_min']}",
                      flush=True)
                new = not args.out.exists()
                args.out.parent.mkdir(parents=True, exist_ok=True)
                with open(args.out, "a", newline="") as handle:
                    writer = csv.DictWriter(handle, fieldnames=list(row))
                    if new:
                        writer.writeheader()
                    writer.writerow(row)
    print(summarise(_read_csv(args.out)))


if __name__ == "__main__":
    main()
