"""``run --project`` on a target whose SNPs differ from the reference's (issue 21).

The 1000 Genomes phase 1 data (../shared/realdata): K = 3 fitted on the first
half of each population (``run --keep``); the other half written as a VCF with
a tenth of the SNPs removed (at random, ``--seed``) and REF and ALT swapped,
genotypes recoded, on every third SNP left; then ``run --project
ref.3.P`` on that VCF, corrected for P's sampling noise (the default with the
reference's ``.Q`` beside its P) and with ``--plain-projection``. Prints the
log's projection lines, the largest difference from projecting the same
individuals from the .bed on the shared SNPs (bare P, same correction), the
mean Q of YRI, CEU and CHB+JPT, and wall and CPU time (wall is an upper bound
on a shared machine).

Usage::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/project_snp_matching.py [--workdir DIR] [--seed 21]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "realdata" / "1kg_phase1_1092_flashpca"
BED = DATA / "1kg.ref.phase1_release_v3.20101123_thinned_autosomal_overlap.bed"


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _target(genotypes, rows, seed):
    """Individuals ``rows``, a tenth of the SNPs removed, every third one swapped."""
    from admixspec import Genotypes

    rng = np.random.default_rng(seed)
    n = genotypes.n_snps
    kept = np.sort(rng.choice(n, n - n // 10, replace=False))
    part = genotypes.subset(individuals=rows, snps=kept)
    dosage = part.dosage.copy()
    swap = np.arange(len(kept)) % 3 == 0
    dosage[:, swap] = np.where(dosage[:, swap] < 0, dosage[:, swap], 2 - dosage[:, swap])
    variants = part.variants.copy()
    variants.loc[swap, ["counted", "other"]] = variants.loc[
        swap, ["other", "counted"]].to_numpy()
    return Genotypes(dosage, part.samples, variants), kept


def _expected(genotypes, rows, kept, prefix, corrected):
    """The same individuals projected from the .bed on the shared, unambiguous SNPs."""
    from admixspec import project
    from admixspec.io import CLAMP, read_p, read_q
    from admixspec.ml.debias import debiased_project, p_covariance

    P = read_p(f"{prefix}.3.P")
    variants = genotypes.variants
    pair = variants["counted"].str.upper() + variants["other"].str.upper()
    shared = kept[~pair.iloc[kept].isin(["AT", "TA", "CG", "GC"]).to_numpy()]
    G = genotypes.dosage[np.ix_(rows, shared)]
    Q = project(G, P[shared])
    if corrected:
        V = p_covariance(None, read_q(f"{prefix}.3.Q"), P[shared])
        Q = debiased_project(G, P[shared], V, Q)
    return np.clip(Q, *CLAMP)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=ROOT / "out" / "project_1kg")
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args(argv)
    from admixspec.cli import main as cli
    from admixspec.io import read_genotypes, read_q, write_vcf

    args.workdir.mkdir(parents=True, exist_ok=True)
    genotypes = read_genotypes(BED, drop_monomorphic=False)
    labels = pd.read_csv(DATA / "labels.tsv", sep="\t").set_index("sample_id")
    population = labels.loc[genotypes.samples, "population"].to_numpy()
    first = np.zeros(genotypes.n_individuals, dtype=bool)
    for name in np.unique(population):
        members = np.flatnonzero(population == name)
        first[members[: (len(members) + 1) // 2]] = True
    (args.workdir / "half.ids").write_text("".join(f"{s}\n" for s in
                                                   genotypes.samples[first]))
    ref = args.workdir / "ref"
    wall, cpu = time.perf_counter(), _cpu()
    cli(["run", str(BED), "-K", "3", "--keep", str(args.workdir / "half.ids"),
         "--out", str(ref), "-q"])
    print(f"reference fit ({first.sum()} individuals): wall "
          f"{time.perf_counter() - wall:.1f} s, CPU {_cpu() - cpu:.1f} s")
    rows = np.flatnonzero(~first)
    target, kept = _target(genotypes, rows, args.seed)
    vcf = args.workdir / "other_half.vcf.gz"
    write_vcf(vcf, target, index=False)
    print(f"target: {len(rows)} individuals, {target.n_snps} of {genotypes.n_snps} "
          "SNPs, "
          f"{int(np.sum(np.arange(len(kept)) % 3 == 0))} swapped")
    for name, extra in (("corrected", []), ("plain", ["--plain-projection"])):
        out = args.workdir / name
        wall, cpu = time.perf_counter(), _cpu()
        cli(["run", str(vcf), "-K", "3", "--project", f"{ref}.3.P", *extra,
             "--out", str(out), "-q"])
        seconds = (time.perf_counter() - wall, _cpu() - cpu)
        Q = read_q(f"{out}.3.Q")
        expected = _expected(genotypes, rows, kept, ref, name == "corrected")
        gap = np.abs(Q - expected).max()
        print(f"\n{name}: wall {seconds[0]:.1f} s, CPU {seconds[1]:.1f} s; largest "
              f"difference from the .bed projection on the shared SNPs {gap:.1e}")
        for line in Path(f"{out}.3.log").read_text().splitlines():
            if line.startswith(("SNP matching", "Projection")):
                print("   ", line)
        for names in (["YRI"], ["CEU"], ["CHB", "JPT"]):
            mean = Q[np.isin(population[rows], names)].mean(axis=0)
            print(f"    {'+'.join(names)}: mean Q {np.round(mean, 4).tolist()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
