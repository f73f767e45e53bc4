"""Simulated admixed genotypes with known truth.

Two simulators share one result type, :class:`SimulatedData`:

* :func:`simulate_balding_nichols` — numpy only and fast: ancestral allele
  frequencies from the Balding–Nichols model, proportions from a Dirichlet,
  binomial genotypes. Used by unit tests, doctests and quick benchmarks.
* :func:`simulate_admixture` — the seed paper's coalescent experiment
  (appendix "Genetic admixture simulations") through msprime; needs the
  ``sim`` extra.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .genotypes import MISSING, Genotypes

__all__ = ["SimulatedData", "simulate_balding_nichols"]


@dataclass
class SimulatedData:
    """Simulated genotypes together with the truth that generated them.

    Attributes
    ----------
    genotypes : Genotypes
        Dosages of the counted allele, shape (n_individuals, n_snps).
    Q : numpy.ndarray, float64, shape (n_individuals, K)
        True ancestry proportions (rows sum to one). For the coalescent
        simulator these are the realised fractions of each genome copied from
        each ancestral population.
    P : numpy.ndarray, float64, shape (n_snps, K)
        True ancestral frequencies of the counted allele.
    populations : numpy.ndarray of str, shape (n_individuals,)
        A label per individual (its dominant true component, ``pop1``...).
    parameters : dict
        The simulator's arguments, for provenance.
    """

    genotypes: Genotypes
    Q: np.ndarray
    P: np.ndarray
    populations: np.ndarray
    parameters: dict = field(default_factory=dict)


def _dirichlet_rows(rng, n, K, alpha, unadmixed_fraction):
    """Draw n proportion vectors; a leading share of them one-hot."""
    alpha_vector = np.broadcast_to(np.asarray(alpha, dtype=float), (K,))
    Q = rng.dirichlet(alpha_vector, size=n)
    n_pure = int(round(unadmixed_fraction * n))
    if n_pure:
        Q[:n_pure] = np.eye(K)[np.arange(n_pure) % K]
    return Q


def _assign_alleles(genotypes: Genotypes) -> None:
    """Give SNP j valid, distinct nucleotide alleles (deterministic, no RNG use).

    The counted allele becomes VCF REF / ``.bim`` A2, so simulated data can be
    written as VCF and PLINK and read back identically.
    """
    j = np.arange(genotypes.n_snps)
    bases = np.array(list("ACGT"))
    genotypes.variants["counted"] = bases[j % 4]
    genotypes.variants["other"] = bases[(j % 4 + 1 + (j // 4) % 3) % 4]


def simulate_balding_nichols(
    n_individuals: int = 200,
    n_snps: int = 10_000,
    K: int = 3,
    *,
    fst: float = 0.1,
    alpha: float | np.ndarray = 1.0,
    unadmixed_fraction: float = 0.0,
    min_ancestral_frequency: float = 0.05,
    missing_rate: float = 0.0,
    seed: int | None = None,
) -> SimulatedData:
    """Simulate admixed genotypes under the Balding–Nichols model.

    Each SNP draws an ancestral frequency ``p ~ U(min, 1 - min)``; each
    population's frequency is ``Beta(p (1-F)/F, (1-p)(1-F)/F)``; proportions
    are ``Dirichlet(alpha)``; genotypes are ``Binomial(2, Q P^T)``.

    Parameters
    ----------
    n_individuals, n_snps, K : int
        Matrix size and number of ancestral populations.
    fst : float
        Balding–Nichols F_ST in (0, 1).
    alpha : float or array_like of shape (K,)
        Dirichlet concentration of the proportions.
    unadmixed_fraction : float
        Share of individuals (the first ones) given one-hot proportions,
        cycling through the K populations.
    min_ancestral_frequency : float
        Lower bound of the uniform ancestral frequency.
    missing_rate : float
        Probability that each genotype call is set missing.
    seed : int, optional
        Seed of the random generator; the same seed gives the same data.

    Returns
    -------
    SimulatedData

    Examples
    --------
    >>> sim = simulate_balding_nichols(20, 500, 2, seed=1)
    >>> sim.genotypes.dosage.shape, sim.Q.shape, sim.P.shape
    ((20, 500), (20, 2), (500, 2))
    """
    if not 0 < fst < 1:
        raise ValueError("fst must lie in (0, 1)")
    rng = np.random.default_rng(seed)
    ancestral = rng.uniform(min_ancestral_frequency, 1 - min_ancestral_frequency, n_snps)
    shape = (1 - fst) / fst
    P = rng.beta(ancestral[:, None] * shape, (1 - ancestral[:, None]) * shape, (n_snps, K))
    Q = _dirichlet_rows(rng, n_individuals, K, alpha, unadmixed_fraction)
    F = Q @ P.T
    dosage = rng.binomial(2, F).astype(np.int8)
    if missing_rate > 0:
        dosage[rng.random(dosage.shape) < missing_rate] = MISSING
    populations = np.array([f"pop{k + 1}" for k in Q.argmax(axis=1)])
    genotypes = Genotypes.from_array(dosage)
    _assign_alleles(genotypes)
    parameters = {
        "model": "balding_nichols",
        "n_individuals": n_individuals,
        "n_snps": n_snps,
        "K": K,
        "fst": fst,
        "alpha": np.asarray(alpha).tolist(),
        "unadmixed_fraction": unadmixed_fraction,
        "min_ancestral_frequency": min_ancestral_frequency,
        "missing_rate": missing_rate,
        "seed": seed,
    }
    return SimulatedData(genotypes, Q, P, populations, parameters)
