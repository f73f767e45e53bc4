"""Make the bundled example data set in data/ (fixed seed; needs the `sim` extra).

60 individuals x 10,000 SNPs, K = 3, simulated with
:func:`admixspec.simulate.simulate_admixture` (the seed paper's msprime
admixture design on a shorter chromosome): 10 unadmixed individuals from
each ancestral population (their mosaics copy only that population's
haplotypes) and 30 admixed individuals with Dirichlet(1, 1, 1) proportions.

Writes, next to this script:

* ``example.vcf.gz`` + ``example.vcf.gz.tbi`` (REF = counted allele),
* ``example.bed/.bim/.fam`` (byte-identical to
  ``plink1.9 --vcf example.vcf.gz --keep-allele-order --make-bed``),
* ``example.truth.Q`` (realised ancestry fractions, 60 x 3) and
  ``example.truth.P`` (REF frequency in each population, 10,000 x 3),
* ``example.labels.tsv`` (``sample_id``, ``population``: pop1, pop2, pop3 or
  admixed), ``example.params.json``.

Run from the project root: ``python data/make_example.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from admixspec.io import write_simulation
from admixspec.simulate import simulate_admixture

SEED = 20180710  # ICML 2018, the seed paper's conference
K = 3
N_REFERENCE_PER_POPULATION = 10
N_ADMIXED = 30
N_SNPS = 10_000
SEQUENCE_LENGTH = 25e6
PREFIX = Path(__file__).resolve().parent / "example"


def make_proportions(
    rng: np.random.Generator,
) -> tuple[np.ndarray, list[str], list[str]]:
    """Proportions, sample IDs and population labels of the 60 individuals."""
    rows, samples, labels = [], [], []
    for k in range(K):
        for i in range(N_REFERENCE_PER_POPULATION):
            rows.append(np.eye(K)[k])
            samples.append(f"pop{k + 1}-{i + 1:02d}")
            labels.append(f"pop{k + 1}")
    for i in range(N_ADMIXED):
        rows.append(rng.dirichlet(np.ones(K)))
        samples.append(f"adm-{i + 1:02d}")
        labels.append("admixed")
    return np.array(rows), samples, labels


def main() -> None:
    rng = np.random.default_rng(SEED)
    proportions, samples, labels = make_proportions(rng)
    sim = simulate_admixture(
        K=K,
        proportions=proportions,
        sequence_length=SEQUENCE_LENGTH,
        n_snps=N_SNPS,
        seed=SEED,
    )
    sim.genotypes.samples = np.array(samples)
    sim.populations = np.array(labels)
    sim.parameters["script"] = "data/make_example.py"
    for path in write_simulation(sim, PREFIX):
        print(path.relative_to(PREFIX.parent.parent), path.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
