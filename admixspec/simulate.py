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

import warnings
from dataclasses import dataclass, field

import numpy as np

from .core.exceptions import UsageError, import_optional
from .core.genotypes import MISSING, Genotypes
from .core.validation import SEED, Each, Interval, validate_params

__all__ = ["SimulatedData", "simulate_admixture", "simulate_balding_nichols"]


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


def _alpha_vector(alpha, K):
    """The Dirichlet concentration as K numbers (one number is every component's)."""
    vector = np.asarray(alpha, dtype=float)
    if vector.ndim > 1 or vector.size not in (1, K):
        raise UsageError(f"alpha must be one number or K = {K} of them, got "
                         f"shape {vector.shape}")
    return np.broadcast_to(vector, (K,))


def _dirichlet_rows(rng, n, K, alpha, unadmixed_fraction):
    """Draw n proportion vectors; a leading share of them one-hot."""
    Q = rng.dirichlet(_alpha_vector(alpha, K), size=n)
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


_POSITIVE = Interval(float, 0, closed="neither", finite=True)


@validate_params({
    "n_individuals": Interval(int, 1),
    "n_snps": Interval(int, 1),
    "K": Interval(int, 1),
    "fst": Interval(float, 0, 1, closed="neither"),
    "alpha": Each(_POSITIVE),
    "unadmixed_fraction": Interval(float, 0, 1),
    "min_ancestral_frequency": Interval(float, 0, 0.5, closed="neither"),
    "missing_rate": Interval(float, 0, 1, closed="left"),
    "seed": SEED,
})
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
    rng = np.random.default_rng(seed)
    ancestral = rng.uniform(min_ancestral_frequency, 1 - min_ancestral_frequency, n_snps)
    shape = (1 - fst) / fst
    P = rng.beta(ancestral[:, None] * shape, (1 - ancestral[:, None]) * shape,
                 (n_snps, K))
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


#: Default chromosome length of :func:`simulate_admixture` (base pairs). The
#: paper uses 250e6; see the function's Notes for why the default is shorter.
DEFAULT_SEQUENCE_LENGTH = 25e6


def _mosaic_blocks(rng, weights, length, rate_per_bp):
    """Blocks tiling [0, length): (ends, population) drawn as in the paper.

    Returns block end positions (float, last == length) and the population
    index of each block.
    """
    mean = 1.0 / rate_per_bp
    ends = np.empty(0)
    total = 0.0
    while total < length:
        batch = int(max(16, 2 * (length - total) / mean))
        ends = np.concatenate([ends, total + np.cumsum(rng.exponential(mean, batch))])
        total = ends[-1]
    n_blocks = int(np.searchsorted(ends, length, side="left")) + 1
    ends = ends[:n_blocks]
    ends[-1] = length
    populations = rng.choice(len(weights), size=n_blocks, p=weights)
    return ends, populations


def _site_genotypes(dosage, positions, counted, other) -> Genotypes:
    """Genotypes of simulated sites: 1-based positions, ``ind<i>``/``snp<j>`` IDs."""
    n_individuals, n_sites = dosage.shape
    genotypes = Genotypes.from_array(
        np.ascontiguousarray(dosage),
        samples=[f"ind{i + 1}" for i in range(n_individuals)],
    )
    genotypes.variants["pos"] = positions.astype(np.int64) + 1
    genotypes.variants["id"] = [f"snp{j + 1}" for j in range(n_sites)]
    genotypes.variants["counted"] = counted
    genotypes.variants["other"] = other
    return genotypes


def _admixture_proportions(rng, K, n_admixed, alpha, proportions):
    """W: Dirichlet(alpha) draws, or the given proportions with rows normalised."""
    if proportions is None:
        return rng.dirichlet(_alpha_vector(alpha, K), size=n_admixed)
    W = np.asarray(proportions, dtype=float)
    # NaN, infinity or a row of zeros made NaN draw probabilities: numpy's error
    if (W.ndim != 2 or W.shape[1] != K or not np.all(np.isfinite(W)) or np.any(W < 0)
            or not np.all(W.sum(axis=1) > 0)):
        raise UsageError("proportions must be a non-negative (n, K) array of finite "
                         "numbers, each row with a positive sum")
    return W / W.sum(axis=1, keepdims=True)


def _ancestral_tree_sequence(msprime, names, *, n_haplotypes, split_time,
                             population_size, sequence_length, recombination_rate,
                             mutation_rate, seeds):
    """K populations split ``split_time`` generations ago, with mutations."""
    demography = msprime.Demography()
    for name in names:
        demography.add_population(name=name, initial_size=population_size)
    if len(names) > 1:
        demography.add_population(name="ancestral", initial_size=population_size)
        demography.add_population_split(time=split_time, derived=names,
                                        ancestral="ancestral")
    ancestry_seed, mutation_seed = seeds
    tree_sequence = msprime.sim_ancestry(
        samples=[msprime.SampleSet(n_haplotypes, population=name, ploidy=1)
                 for name in names],
        demography=demography,
        sequence_length=sequence_length,
        recombination_rate=recombination_rate,
        random_seed=ancestry_seed,
    )
    return msprime.sim_mutations(tree_sequence, rate=mutation_rate,
                                 random_seed=mutation_seed)


def _biallelic_haplotypes(tree_sequence):
    """Haplotypes (K * n_haplotypes, sites), 1 = derived allele, at biallelic sites.

    Returns (haplotypes int8, positions, ancestral alleles, derived alleles,
    number of biallelic sites).
    """
    haplotypes = tree_sequence.genotype_matrix().T  # (samples, sites), allele indices
    biallelic = haplotypes.max(axis=0) == 1
    positions = tree_sequence.tables.sites.position[biallelic]
    ancestral = _ancestral_states(tree_sequence)[biallelic]
    derived = _derived_states(tree_sequence)[biallelic]
    return (haplotypes[:, biallelic].astype(np.int8), positions, ancestral, derived,
            int(biallelic.sum()))


def _mosaic_individuals(rng, W, haplotypes, positions, *, n_haplotypes, length,
                        rate_per_bp):
    """Admixed diploids as mosaics of ancestral haplotype blocks.

    Returns the derived-allele dosage, int8 (n_individuals, sites), and the
    realised ancestry Q (bp fraction from each population).
    """
    n_individuals, K = W.shape
    dosage_alt = np.zeros((n_individuals, haplotypes.shape[1]), dtype=np.int8)
    realised = np.zeros((n_individuals, K))
    # individuals x 2 chromosomes, a handful of blocks each: short Python loops
    for i in range(n_individuals):
        for _ in range(2):
            ends, pops = _mosaic_blocks(rng, W[i], length, rate_per_bp)
            starts = np.concatenate([[0.0], ends[:-1]])
            np.add.at(realised[i], pops, ends - starts)
            sources = pops * n_haplotypes + rng.integers(0, n_haplotypes, size=len(pops))
            block_of_site = np.searchsorted(ends, positions, side="right")
            sites = np.arange(len(positions))
            dosage_alt[i] += haplotypes[sources[block_of_site], sites]
    return dosage_alt, realised / realised.sum(axis=1, keepdims=True)


def _kept_snps(rng, dosage, n_snps):
    """Columns polymorphic among the admixed, subsampled to ``n_snps`` in order."""
    keep = np.flatnonzero(dosage.min(axis=0) != dosage.max(axis=0))
    if n_snps is not None and n_snps < len(keep):
        keep = np.sort(rng.choice(keep, size=n_snps, replace=False))
    return keep


@validate_params({
    "n_admixed": Interval(int, 1),
    "K": Interval(int, 1),
    "alpha": Each(_POSITIVE),
    "n_haplotypes": Interval(int, 1),
    "split_time": _POSITIVE,
    "population_size": _POSITIVE,
    "mutation_rate": _POSITIVE,
    "recombination_rate": Interval(float, 0, finite=True),
    "sequence_length": _POSITIVE,
    "block_rate": _POSITIVE,
    "bp_per_morgan": _POSITIVE,
    "n_snps": Interval(int, 1, allow_none=True),
    "seed": SEED,
})
def simulate_admixture(
    n_admixed: int = 50,
    K: int = 3,
    *,
    alpha: float | np.ndarray = 1.0,
    proportions: np.ndarray | None = None,
    n_haplotypes: int = 40,
    split_time: float = 4000,
    population_size: float = 1e4,
    mutation_rate: float = 1e-8,
    recombination_rate: float = 1e-8,
    sequence_length: float = DEFAULT_SEQUENCE_LENGTH,
    block_rate: float = 20.0,
    bp_per_morgan: float = 1e8,
    n_snps: int | None = None,
    seed: int | None = None,
) -> SimulatedData:
    """Simulate the seed paper's coalescent admixture experiment (msprime).

    Following the appendix "Genetic admixture simulations": ``K`` ancestral
    populations of effective size ``population_size`` split from one
    ancestor ``split_time`` generations ago; ``n_haplotypes`` chromosomes of
    ``sequence_length`` bp are sampled from each (msprime, mutation and
    recombination rates per bp per generation). Admixed individuals get
    proportions ``W ~ Dirichlet(alpha)``; each of their two chromosomes is a
    mosaic built left to right: draw a population from ``W``, one of its
    haplotypes uniformly, a block length ``~ Exponential(block_rate per
    Morgan)`` (``bp_per_morgan`` bp per Morgan), copy that block; repeat to
    the chromosome end.

    Parameters
    ----------
    n_admixed : int
        Number of admixed individuals (paper: m = 50).
    K : int
        Number of ancestral populations (paper: d = 3).
    alpha : float or array_like of shape (K,)
        Dirichlet concentration of the proportions (paper: 0.1, 1, 10).
    proportions : array_like, shape (n_individuals, K), optional
        Use these proportions instead of Dirichlet draws (rows are normalised;
        ``n_admixed`` is then ignored). A one-hot row gives an unadmixed
        individual whose blocks all come from one population.
    n_haplotypes : int
        Chromosomes simulated per ancestral population (paper: 40).
    split_time : float
        Generations since the split (paper: 4000).
    population_size : float
        Effective size of every population (paper: N0 = 1e4).
    mutation_rate, recombination_rate : float
        Per bp per generation (paper: 1e-8 each).
    sequence_length : float
        Chromosome length in bp (paper: 250e6; default 25e6, see Notes).
    block_rate : float
        Rate of the exponential block lengths per Morgan (paper: 20).
    bp_per_morgan : float
        Physical length of one Morgan (paper: 1e8).
    n_snps : int, optional
        Keep this many SNPs, chosen uniformly at random (in position order),
        among the usable ones; ``None`` keeps all. Where fewer are usable,
        all are kept and a :class:`UserWarning` says how many (a longer
        ``sequence_length`` holds more).
    seed : int, optional
        Seed; the same seed gives the same data.

    Returns
    -------
    SimulatedData
        ``genotypes``: dosage int8 (n_individuals, n_snps) of the ancestral
        allele, which is VCF REF / ``.bim`` A2 when written (alleles are
        nucleotides from msprime's JC69 model). Only sites biallelic among
        the ancestral haplotypes and polymorphic among the admixed
        individuals are kept, so the truth aligns with the data after the
        default monomorphic filter. ``Q``: the *realised* fraction of each
        individual's two chromosomes (in bp) copied from each population.
        ``P``: frequency of the counted allele among each population's
        ``n_haplotypes`` haplotypes, shape (n_snps, K). ``parameters`` also
        holds ``dirichlet_proportions`` (the drawn W).

    Raises
    ------
    UsageError
        No usable SNP in ``sequence_length``, fewer than 2 individuals, or
        mosaic blocks shorter than 1 bp on average (``block_rate >
        bp_per_morgan``).

    Warns
    -----
    UserWarning
        Fewer usable SNPs than ``n_snps``.

    Notes
    -----
    Requires the ``sim`` extra (msprime, tskit). The paper used SCRM; msprime
    simulates the same coalescent with recombination (Hudson's algorithm;
    msprime's SMC' model was 10x slower here). Its cost grows faster than
    linearly with the chromosome length: on the 2-core development machine
    (shared, load ~4) the ancestry step took 8-9 s for 25 Mb and 45 s for
    50 Mb, and did not finish 100 Mb within 5 minutes, so the paper's 250 Mb
    cannot meet the 2-minute budget of ``admixspec simulate``. The default is
    25 Mb (about 70,000 SNPs for the paper's other values, mosaics of about
    5 blocks per chromosome); every other default is the paper's.

    Examples
    --------
    >>> sim = simulate_admixture(6, 2, n_haplotypes=4, sequence_length=1e6, seed=1)
    >>> sim.Q.shape[1], sim.P.shape[1], bool(np.allclose(sim.Q.sum(axis=1), 1))
    (2, 2, True)
    """
    if block_rate > bp_per_morgan:  # draws of ~ length x rate blocks per chromosome
        raise UsageError(
            f"block_rate={block_rate:g} per Morgan of bp_per_morgan={bp_per_morgan:g} "
            "bp makes mosaic blocks shorter than 1 bp on average (--block-rate, "
            "--bp-per-morgan)")
    msprime = import_optional("msprime", extra="sim", needed_for="simulate_admixture")
    rng = np.random.default_rng(seed)
    W = _admixture_proportions(rng, K, n_admixed, alpha, proportions)
    n_individuals = W.shape[0]
    if n_individuals < 2:  # no SNP is polymorphic among one: none would be kept
        raise UsageError("one admixed individual has no SNP polymorphic among the "
                         "admixed individuals, the SNPs kept: simulate at least 2 "
                         "(n_admixed, --n-admixed)")
    names = [f"pop{k + 1}" for k in range(K)]
    tree_sequence = _ancestral_tree_sequence(
        msprime, names, n_haplotypes=n_haplotypes, split_time=split_time,
        population_size=population_size, sequence_length=sequence_length,
        recombination_rate=recombination_rate, mutation_rate=mutation_rate,
        seeds=tuple(int(x) for x in rng.integers(1, 2**31 - 1, size=2)),
    )
    haplotypes, positions, ancestral, derived, n_biallelic = _biallelic_haplotypes(
        tree_sequence
    )
    dosage_alt, Q = _mosaic_individuals(
        rng, W, haplotypes, positions, n_haplotypes=n_haplotypes,
        length=sequence_length, rate_per_bp=block_rate / bp_per_morgan,
    )
    dosage = (2 - dosage_alt).astype(np.int8)  # copies of the ancestral allele
    keep = _kept_snps(rng, dosage, n_snps)
    if not len(keep):  # files of no SNP, which no reader accepts
        raise UsageError(f"the simulated {sequence_length:g} bp held no usable SNP: "
                         "raise the sequence length (--length)")
    if n_snps is not None and len(keep) < n_snps:
        warnings.warn(
            f"the simulated {sequence_length:g} bp held only {len(keep)} usable SNPs "
            f"of the {n_snps} asked for; all {len(keep)} are kept: raise the "
            "sequence length (--length) for more", UserWarning, stacklevel=2)
    P = 1.0 - haplotypes.reshape(K, n_haplotypes, -1).mean(axis=1).T[keep]
    genotypes = _site_genotypes(dosage[:, keep], positions[keep], ancestral[keep],
                                derived[keep])
    populations = np.array([names[k] for k in Q.argmax(axis=1)])
    parameters = {
        "model": "msprime_admixture",
        "n_admixed": n_individuals,
        "K": K,
        "alpha": np.asarray(alpha).tolist(),
        "proportions_given": proportions is not None,
        "n_haplotypes": n_haplotypes,
        "split_time": split_time,
        "population_size": population_size,
        "mutation_rate": mutation_rate,
        "recombination_rate": recombination_rate,
        "sequence_length": sequence_length,
        "block_rate": block_rate,
        "bp_per_morgan": bp_per_morgan,
        "n_snps": n_snps,
        "seed": seed,
        "msprime_version": msprime.__version__,
        "dirichlet_proportions": W.tolist(),
        "n_sites_simulated": int(tree_sequence.num_sites),
        "n_biallelic_sites": n_biallelic,
    }
    return SimulatedData(genotypes, Q, P, populations, parameters)


def _ancestral_states(tree_sequence) -> np.ndarray:
    tables = tree_sequence.tables.sites
    import tskit

    return np.asarray(tskit.unpack_strings(tables.ancestral_state,
                                           tables.ancestral_state_offset))


def _derived_states(tree_sequence) -> np.ndarray:
    """The (single) derived allele of each site; "" where not biallelic."""
    import tskit

    mutations = tree_sequence.tables.mutations
    states = np.asarray(
        tskit.unpack_strings(mutations.derived_state, mutations.derived_state_offset)
    )
    result = np.full(tree_sequence.num_sites, "", dtype=object)
    # The last mutation at a biallelic site carries the only non-ancestral allele
    # seen in the samples, unless a back mutation restored the ancestral state;
    # take the first mutation whose state differs from the ancestral one.
    ancestral = _ancestral_states(tree_sequence)
    differs = states != ancestral[mutations.site]
    sites = mutations.site[differs]
    order = np.unique(sites, return_index=True)
    result[order[0]] = states[differs][order[1]]
    return result.astype(str)
