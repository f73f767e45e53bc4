"""The default's choice between the spectral estimate and maximum likelihood (issue 19).

The likelihood of ADMIXTURE's model is unchanged by the frame changes
``(Q A, P A^-T)`` that keep Q on the simplex and P in [0, 1]; what pins the
frame down differs between the two estimators:

* **maximum likelihood (ML)** is pinned by the edges of that box: it spreads Q
  until individuals reach the corners of the simplex. That is the truth when
  every component has individuals (nearly) unadmixed in it -- anchors -- and
  an over-spread Q when nobody is (the seed paper's alpha = 10 setting: Q
  error 0.27 against the spectral estimate's 0.13 at 50 individuals);
* **the spectral estimate** is pinned by the moments of rare alleles, which is
  the truth only when rare alleles are private to one population (coalescent
  or sequence data); where they are few and shared (genotyping arrays,
  Balding-Nichols drift) it is biased everywhere (Q error 0.09-0.18).

So the rule asks three questions that need no refit:

1. **Is the spectral premise there at all?** The share of polymorphic SNPs
   whose minor allele frequency is at most 5%
   (:func:`admixspec.fit.default.rare_allele_share`, computed by the spectral stage).
   Below :data:`MIN_RARE_SHARE` -- arrays and Balding-Nichols data, 0.03-0.12,
   against 0.55-0.77 for coalescent data -- ML is chosen.
2. **Do most components have anchors?** The K most extreme individuals of
   the spectral Q by the successive projection algorithm (SPA, the vertex
   finder of separable non-negative factorisation), and for each, how many
   individuals lie within :data:`ANCHOR_RADIUS` of the mean distance between
   the extremes. This is geometry of the point cloud, not of the spectral
   frame: a cluster at a vertex of the cloud is there in any frame. An
   extreme with at least :data:`MIN_NEAR_EXTREME` individuals (itself
   included) near it anchors its component. When more than half of the
   components are anchored, ML is chosen: the anchored vertices pin most of
   the frame, and what ML can still drift along (towards the unanchored
   corners) costs less than the spectral estimate's bias, which touches every
   component. When half or fewer are, the cloud does not reach most corners,
   ML would push it there, and the spectral estimate is kept. (Requiring
   *every* component to be anchored, the rule's first form, kept the
   spectral estimate where one corner of three lacked anchors and ML was
   better: measured in docs/method.md.)
3. **Do the anchored clusters sit at the corners?** A dense cloud has
   clusters near its extremes by chance (the seed paper's alpha = 10 setting
   at 200 individuals: 10 or more near each extreme, ML 2x the spectral
   error). Where the spectral stage runs, rare alleles are plentiful and
   its frame is close to the truth's, so how far its Q would have to be
   stretched to put individuals at the corners is measured there: ML is
   chosen only when, in more than half of the components, the
   :data:`CORNER_RANK`-th highest spectral proportion reaches
   :data:`CORNER_REACH` (:func:`corner_reach`). The spectral frame is that
   estimate's own, so this gate is only as good as the estimate; it was
   kept because it moved the default closer to the better estimator on
   the replicates and on the K = 5 grid that no calibration saw
   (docs/method.md).

Where the first question answers maximum likelihood, the answer is checked
once it is fitted (:func:`second_look`). Without anchors ML runs to the
corners on any data (Balding-Nichols drift at Dirichlet(10): Q error up to 3x
the spectral estimate's), so when plain ML's Q misses any of its corners
(:data:`ML_CORNER`), the individuals form a single unclustered cloud
(:func:`cluster_excess` at most :data:`CLUSTER_EXCESS`) and the spectral
estimate puts nobody near a corner either (:data:`MAX_SPREAD`), the spectral
estimate is kept. The cluster gate is what keeps real array data with
populations in them on maximum likelihood (1000 Genomes and its Europeans,
whose ML fits reach few corners at K >= 5 and K >= 3: excess 0.31-0.58).

The anchor statistics come from what the spectral stage has already computed
(its Q and the allele counts), so that choice costs a few milliseconds and no
pass over the genotypes; the second look reads a sample of them. The
thresholds were calibrated on replicate 1 of benchmarks/choice_grid.py and
replicate 1 of the realistic suite and reported on the other replicates
(docs/method.md, "Choosing the estimator").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..core.frequencies import frequency_blocks
from ..core.genotypes import allele_counts
from ..spectral.moments import second_moments

__all__ = [
    "ANCHOR_RADIUS",
    "CORNER_RANK",
    "CLUSTER_EXCESS",
    "CORNER_REACH",
    "MAX_SPREAD",
    "MIN_NEAR_EXTREME",
    "ML_CORNER",
    "MIN_RARE_SHARE",
    "SECOND_LOOK_INDIVIDUALS",
    "SPREAD_RANK",
    "EstimatorChoice",
    "choose_estimator",
    "cluster_excess",
    "corner_reach",
    "extreme_neighbours",
    "premise_absent",
    "second_look",
    "successive_projection",
]

#: Rare-allele share below which the spectral premise is taken as absent.
#: Measured: Balding-Nichols 0.05-0.07, HapMap3 0.12, 1000 Genomes (thinned
#: array SNPs) 0.03; coalescent mosaics and the seed paper's setting 0.55-0.66,
#: stdpopsim AmericanAdmixture 0.77. 0.3 sits between the two groups.
MIN_RARE_SHARE = 0.3
#: Radius of an extreme's neighbourhood, as a share of the mean distance
#: between the K extremes. With :data:`MIN_NEAR_EXTREME`, calibrated on
#: replicate 1 of benchmarks/choice_grid.py and of the realistic suite (104
#: data sets, K = 3): radii 0.05-0.3 x thresholds 2-10, the pair with the
#: lowest mean log ratio of the default's Q error to the better estimator's,
#: averaged over the pair's neighbours in that grid. Reported on the other
#: replicates (docs/method.md).
ANCHOR_RADIUS = 0.25
#: Individuals (the extreme included) that an extreme needs in its
#: neighbourhood to anchor its component.
MIN_NEAR_EXTREME = 10
#: The individual, by rank within its component, whose spectral proportion
#: must reach :data:`CORNER_REACH` for the component to count as reaching its
#: corner. With :data:`CORNER_REACH`, calibrated on the same replicate 1 as
#: the anchor constants (ranks 1, 3, 5, 10, 20 x proportions 0.5-1 in steps of
#: 0.02, the lowest mean log ratio averaged over each pair's neighbours,
#: ``benchmarks/choice_tried.py rules``); reported on the other replicates and
#: on the K = 5 grid (``choice_tried.py other-k``).
CORNER_RANK = 5
#: Spectral proportion the :data:`CORNER_RANK`-th individual must reach.
CORNER_REACH = 0.76
#: Proportion the :data:`CORNER_RANK`-th individual of plain ML's Q must reach
#: for its component to count as at its corner; the second look runs when
#: any component is not. Asked only where fewer than half were, the look
#: missed ML's spurious corners: at 50 individuals and Dirichlet(10) ML put
#: five individuals at 0.99998 in two of three components (docs/benchmarks.md,
#: "The second look wherever ML misses a corner").
ML_CORNER = 0.95
#: Largest excess of the individuals' k-means R^2 over a Gaussian sample's
#: (:func:`cluster_excess`) for the second look to go on. Measured
#: (docs/benchmarks.md): the 12 Balding-Nichols data sets where the look kept
#: the spectral estimate -0.08 to 0.05; 1000 Genomes at K = 5-8 0.51-0.58 and
#: its 379 Europeans at K = 3-5 0.31-0.35, HapMap3 at K = 4-5 0.44-0.48 and
#: 1000 Genomes at K = 4 0.46, where plain ML misses corners (HapMap3 and 1000
#: Genomes at K = 2-3 and the Europeans at K = 2 reach all of theirs).
CLUSTER_EXCESS = 0.1
#: Rank of the spectral proportion that the second look compares with
#: :data:`MAX_SPREAD`.
SPREAD_RANK = 3
#: Largest share of the way from the simplex's centre to a corner that the
#: :data:`SPREAD_RANK`-th highest spectral proportion may reach, in every
#: component, for the second look to keep the spectral estimate. With
#: :data:`ML_CORNER`, calibrated on replicate 1 of the grid's Balding-Nichols
#: cells (shares 0.25-0.35 choose the better estimator on all 45) and reported
#: on replicates 2-5 (``benchmarks/choice_tried.py premise-absent``).
MAX_SPREAD = 0.3
#: Individuals and SNPs sampled for :func:`cluster_excess` (as the K hint's).
CLUSTER_INDIVIDUALS = 1_000
CLUSTER_SNPS = 20_000
#: Most individuals for which the default takes the second look: its spectral
#: stage holds individuals x individuals moments, which the default keeps to
#: a reference of this size (:data:`admixspec.fit.reference.DEFAULT_REFERENCE_SIZE`).
SECOND_LOOK_INDIVIDUALS = 5_000


@dataclass
class EstimatorChoice:
    """Outcome of :func:`choose_estimator`.

    Attributes
    ----------
    estimator : str
        ``"spectral"``, ``"spectral+ml"`` (maximum likelihood, decided on the
        spectral Q) or ``"ml"`` (decided before the spectral stage, which the
        default then skips: :func:`premise_absent`).
    reason : str
        One sentence a user can read in the log, with the numbers the rule used.
    statistics : dict
        ``rare_allele_share``; ``near_extreme`` (list of K counts, the extreme
        included); ``anchored_components`` (how many of them reach
        ``min_near_extreme``); ``extremes`` (the K extreme individuals' row
        indices); ``extreme_spacing`` (mean distance between the extremes in Q);
        ``corner_reach`` (list of K: :func:`corner_reach` of the spectral Q);
        ``components_at_corner`` (how many of them reach ``corner_reach``).
    thresholds : dict
        ``min_rare_share``, ``anchor_radius``, ``min_near_extreme``,
        ``corner_rank``, ``corner_reach``.
    seconds : float
        Time the choice took.
    """

    estimator: str
    reason: str
    statistics: dict = field(default_factory=dict)
    thresholds: dict = field(default_factory=dict)
    seconds: float = 0.0

    def record(self) -> dict:
        """JSON-ready form (the ``choice`` entry of a fit's diagnostics)."""
        return {"estimator": self.estimator, "reason": self.reason,
                "statistics": self.statistics, "thresholds": self.thresholds,
                "seconds": self.seconds}


def successive_projection(X, k):
    """Rows of ``X`` picked by the successive projection algorithm.

    Each step picks the row of largest norm, then projects every row onto the
    orthogonal complement of the picked one (Araujo et al. 2001; Gillis &
    Vavasis 2014). On rows that are convex combinations of k vertices plus
    noise it returns rows near the vertices.

    Parameters
    ----------
    X : numpy.ndarray, float, shape (n_rows, d)
    k : int
        Rows to pick, ``k <= d``.

    Returns
    -------
    numpy.ndarray, int64, shape (k,)
        Indices of the picked rows, in picking order (fewer if the residual
        vanishes first).
    """
    residual = np.array(X, dtype=np.float64)
    picks = []
    for _ in range(k):
        norms = np.einsum("ij,ij->i", residual, residual)
        j = int(np.argmax(norms))
        if norms[j] <= 0:
            break
        picks.append(j)
        u = residual[j] / np.sqrt(norms[j])
        residual -= np.outer(residual @ u, u)
    return np.asarray(picks, dtype=np.int64)


def extreme_neighbours(Q, *, radius=ANCHOR_RADIUS):
    """The K extreme individuals of Q and how many individuals lie near each.

    Parameters
    ----------
    Q : numpy.ndarray, float, shape (n_individuals, K)
        Ancestry proportions (rows on the simplex), e.g. the spectral estimate.
    radius : float
        Neighbourhood radius as a share of the mean distance between extremes.

    Returns
    -------
    extremes : numpy.ndarray, int64, shape (K,)
        Row indices of the extremes (:func:`successive_projection` on Q).
    near : numpy.ndarray, int64, shape (K,)
        Individuals within ``radius`` times the mean extreme distance of each
        extreme, the extreme itself included.
    spacing : float
        The mean distance between the extremes (0 when they coincide).

    Examples
    --------
    >>> Q = np.array([[1, 0], [0.98, 0.02], [0.5, 0.5], [0, 1], [0.01, 0.99]])
    >>> extremes, near, spacing = extreme_neighbours(Q, radius=0.1)
    >>> sorted(extremes.tolist()), near.tolist()
    ([0, 3], [2, 2])
    """
    Q = np.asarray(Q, dtype=np.float64)
    K = Q.shape[1]
    extremes = successive_projection(Q, K)
    E = Q[extremes]
    pairs = [np.linalg.norm(E[a] - E[b]) for a in range(len(E)) for b in range(a)]
    spacing = float(np.mean(pairs)) if pairs else 0.0
    # (m, K) distances of every individual to every extreme
    distance = np.sqrt(np.maximum(
        np.einsum("ij,ij->i", Q, Q)[:, None] - 2 * Q @ E.T
        + np.einsum("kj,kj->k", E, E)[None, :], 0.0))
    near = np.count_nonzero(distance <= radius * spacing + 1e-12, axis=0)
    return extremes, near.astype(np.int64), spacing


def corner_reach(Q, *, rank=CORNER_RANK):
    """Per component, the ``rank``-th highest proportion of Q.

    How near the component's corner its ``rank`` most extreme individuals
    are (the lowest proportion when Q has fewer than ``rank`` rows).

    Parameters
    ----------
    Q : numpy.ndarray, float, shape (n_individuals, K)
    rank : int

    Returns
    -------
    numpy.ndarray, float64, shape (K,)

    Examples
    --------
    >>> Q = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.5, 0.5]])
    >>> corner_reach(Q, rank=2).tolist()
    [0.8, 0.5]
    """
    Q = np.asarray(Q, dtype=np.float64)
    return np.sort(Q, axis=0)[-min(int(rank), len(Q))]


def premise_absent(rare_share, *,
                   min_rare_share=MIN_RARE_SHARE) -> EstimatorChoice | None:
    """The choice of maximum likelihood where the spectral premise is absent, else None.

    The rule's first question (see the module notes) needs only the allele
    counts, so the default asks it before the spectral stage: with too few
    rare alleles the answer is maximum likelihood whatever the spectral Q.

    Parameters
    ----------
    rare_share : float
        Share of polymorphic SNPs with minor allele frequency <= 5%
        (:func:`admixspec.fit.default.rare_allele_share`).
    min_rare_share : float
        The threshold (default :data:`MIN_RARE_SHARE`).

    Returns
    -------
    EstimatorChoice or None
        Estimator ``"ml"`` when ``rare_share < min_rare_share``.

    Examples
    --------
    >>> premise_absent(0.12).estimator
    'ml'
    >>> premise_absent(0.6) is None
    True
    """
    clock = time.perf_counter()
    if rare_share >= min_rare_share:
        return None
    reason = (f"only {rare_share:.0%} of SNPs have a minor allele frequency <= 5% "
              f"(< {min_rare_share:.0%}): too few rare, population-private alleles "
              "for the spectral estimate (array-like data or shared drift); maximum "
              "likelihood, as ADMIXTURE")
    return EstimatorChoice("ml", reason, {"rare_allele_share": float(rare_share)},
                           {"min_rare_share": min_rare_share},
                           time.perf_counter() - clock)


def choose_estimator(Q_spectral, rare_share, *, min_rare_share=MIN_RARE_SHARE,
                     radius=ANCHOR_RADIUS, min_near_extreme=MIN_NEAR_EXTREME,
                     corner_rank=CORNER_RANK,
                     corner_reach_min=CORNER_REACH) -> EstimatorChoice:
    """Spectral estimate or maximum likelihood (see the module notes).

    Parameters
    ----------
    Q_spectral : numpy.ndarray, float, shape (n_individuals, K)
        The spectral estimate.
    rare_share : float
        Share of polymorphic SNPs with minor allele frequency <= 5%
        (:func:`admixspec.fit.default.rare_allele_share`).
    min_rare_share, radius, min_near_extreme, corner_rank, corner_reach_min
        The thresholds (defaults: the calibrated :data:`MIN_RARE_SHARE`,
        :data:`ANCHOR_RADIUS`, :data:`MIN_NEAR_EXTREME`, :data:`CORNER_RANK`,
        :data:`CORNER_REACH`).

    Returns
    -------
    EstimatorChoice

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> clusters = np.eye(3).repeat(12, axis=0)
    >>> anchored = np.vstack([clusters, rng.dirichlet([1, 1, 1], 30)])
    >>> choose_estimator(anchored, 0.6).estimator
    'spectral+ml'
    >>> choose_estimator(rng.dirichlet([10, 10, 10], 50), 0.6).estimator
    'spectral'
    >>> choose_estimator(rng.dirichlet([10, 10, 10], 50), 0.05).estimator
    'spectral+ml'
    >>> shrunk = 0.3 * anchored + 0.7 / 3  # the same cloud, far from the corners
    >>> choose_estimator(shrunk, 0.6).estimator
    'spectral'
    """
    clock = time.perf_counter()
    extremes, near, spacing = extreme_neighbours(Q_spectral, radius=radius)
    statistics = {"rare_allele_share": float(rare_share),
                  "near_extreme": near.tolist(), "extremes": extremes.tolist(),
                  "extreme_spacing": spacing}
    thresholds = {"min_rare_share": min_rare_share, "anchor_radius": radius,
                  "min_near_extreme": min_near_extreme, "corner_rank": corner_rank,
                  "corner_reach": corner_reach_min}
    counts = "/".join(str(c) for c in near.tolist())
    anchored = int(np.count_nonzero(near >= min_near_extreme)) if spacing > 0 else 0
    statistics["anchored_components"] = anchored
    reach = corner_reach(Q_spectral, rank=corner_rank)
    reached = int(np.count_nonzero(reach >= corner_reach_min))
    statistics["corner_reach"] = reach.tolist()
    statistics["components_at_corner"] = reached
    shown = "/".join(f"{value:.2f}" for value in reach.tolist())
    corner_sentence = (f"the {corner_rank} highest spectral proportions of each "
                       f"component are at least {shown}: {reached} of {len(reach)} "
                       f"components reach {corner_reach_min:g}")
    geometry = (f"{rare_share:.0%} of SNPs have a minor allele frequency <= 5% "
                f"(>= {min_rare_share:.0%}) and the {len(near)} most extreme "
                f"individuals of the spectral Q have {counts} individuals within "
                f"{radius:.0%} of the extremes' spacing: {anchored} of {len(near)} "
                f"components anchored (>= {min_near_extreme} near), ML at more "
                "than half")
    absent = premise_absent(rare_share, min_rare_share=min_rare_share)
    if absent is not None:
        estimator, reason = "spectral+ml", absent.reason
    elif 2 * anchored > len(near) and 2 * reached > len(near):
        estimator = "spectral+ml"
        reason = (f"{geometry}; {corner_sentence}: most components have "
                  "near-unadmixed individuals, which pin maximum likelihood's frame; "
                  "maximum likelihood, as ADMIXTURE")
    elif 2 * anchored > len(near):
        estimator = "spectral"
        reason = (f"{geometry}; but {corner_sentence}: the clusters at the "
                  "cloud's extremes are admixed, and maximum likelihood would push "
                  "them to the simplex's corners; keeping the spectral estimate")
    else:
        estimator = "spectral"
        reason = (f"{geometry}: most components lack near-unadmixed individuals, "
                  "where maximum likelihood would push Q to the simplex's corners; "
                  "keeping the spectral estimate")
    return EstimatorChoice(estimator, reason, statistics, thresholds,
                           time.perf_counter() - clock)


def principal_scores(dosage, d, *, rng, max_individuals=CLUSTER_INDIVIDUALS,
                     max_snps=CLUSTER_SNPS):
    """The top ``d`` principal components of standardised genotypes, on a sample.

    The sampled calls are copied once as int8 and standardised block by block
    (:func:`admixspec.core.frequencies.frequency_blocks`, missing calls at the
    SNP's mean) into the individuals' relationship matrix
    (:func:`admixspec.spectral.moments.second_moments`).

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (n_individuals, n_snps)
        -1 where missing (filled with the SNP's mean).
    d : int
    rng : numpy.random.Generator
        Draws the sampled individuals and SNPs.
    max_individuals, max_snps : int
        Sample sizes (all when there are fewer).

    Returns
    -------
    numpy.ndarray, float64, shape (min(n_individuals, max_individuals), d)
        Scores: eigenvectors of the individuals' genetic relationship matrix,
        each times the square root of its eigenvalue.
    """
    from scipy.linalg import eigh  # SciPy's import is deferred to its use

    m, n = dosage.shape
    rows = np.sort(rng.choice(m, size=min(m, max_individuals), replace=False))
    columns = np.sort(rng.choice(n, size=min(n, max_snps), replace=False))
    sample = dosage[np.ix_(rows, columns)]
    counted, observed = allele_counts(sample)
    frequency = counted / np.maximum(observed, 1)
    variable = np.flatnonzero((frequency > 0.01) & (frequency < 0.99))
    if len(variable) == 0:
        return np.zeros((len(rows), min(d, len(rows))))
    frequency = frequency[variable]
    # (g - 2f) / sqrt(2 f (1 - f)) with x = g / 2
    scale = np.sqrt(2.0 / (frequency * (1.0 - frequency)))
    relationship = second_moments(_standardised(
        frequency_blocks(sample, snps=variable), frequency, scale)).M2
    size = len(relationship)
    values, vectors = eigh(relationship, subset_by_index=(max(size - d, 0), size - 1))
    return vectors[:, ::-1] * np.sqrt(np.maximum(values[::-1], 0.0))


def _standardised(blocks, frequency, scale):
    """Frequency blocks centred and scaled in place, per SNP position."""
    for positions, x in blocks:
        x -= frequency[positions]
        x *= scale[positions]
        yield positions, x


def kmeans_r2(X, k, *, seed, restarts=10):
    """Share of ``X``'s variance between the best of ``restarts`` k-means partitions.

    Parameters
    ----------
    X : numpy.ndarray, float, shape (n, d)
    k : int
    seed : int
    restarts : int

    Returns
    -------
    float
        ``1 - within / total`` sums of squares (0 for a constant ``X``).
    """
    from scipy.cluster.vq import kmeans2  # SciPy's import is deferred to its use

    centred = X - X.mean(axis=0)
    total = float(np.sum(centred**2))
    if total == 0.0:
        return 0.0
    rng = np.random.default_rng(seed)
    within = np.inf
    for _ in range(restarts):
        centroids, labels = kmeans2(centred, k, minit="++", seed=rng)
        within = min(within, float(np.sum((centred - centroids[labels]) ** 2)))
    return 1.0 - within / total


def cluster_excess(dosage, K, *, seed=None):
    """How much more clustered the individuals are than a Gaussian cloud.

    The k-means R^2 (:func:`kmeans_r2`, K clusters) of the individuals' top
    K - 1 principal components (:func:`principal_scores`) minus that of as
    many draws from a standard normal distribution in K - 1 dimensions.
    Populations give clusters (HapMap3 at K = 3: R^2 0.96 against 0.55); a
    Dirichlet cloud of admixed individuals with no population in it gives
    about the Gaussian's.

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (n_individuals, n_snps)
    K : int
    seed : int, optional

    Returns
    -------
    r2, excess : float
    """
    rng = np.random.default_rng(seed)
    scores = principal_scores(dosage, K - 1, rng=rng)
    r2 = kmeans_r2(scores, K, seed=seed)
    gaussian = kmeans_r2(rng.standard_normal(scores.shape), K, seed=seed)
    return r2, r2 - gaussian


def _share_to_corner(Q, rank):
    """Per component, how far its ``rank``-th highest proportion is from the
    simplex's centre (0) towards the corner (1)."""
    centre = 1.0 / Q.shape[1]
    return (corner_reach(Q, rank=rank) - centre) / (1.0 - centre)


def second_look(Q_ml, first: EstimatorChoice, *, excess=None, Q_spectral=None,
                skipped=None, ml_corner=ML_CORNER, corner_rank=CORNER_RANK,
                max_excess=CLUSTER_EXCESS, spread_rank=SPREAD_RANK,
                max_spread=MAX_SPREAD) -> tuple[str, EstimatorChoice]:
    """Whether to keep plain ML's fit where the premise was absent (module notes).

    Asked in three steps by the default, each needing what the one before
    decided to compute: with ``Q_ml`` alone, whether its corners are reached
    (answer ``"ml"``) or ``"cluster"`` (compute :func:`cluster_excess`); with
    ``excess``, ``"ml"`` or ``"spectral-stage"`` (run it); with
    ``Q_spectral`` too, ``"ml"`` or ``"spectral"``.

    Parameters
    ----------
    Q_ml : numpy.ndarray, shape (n_individuals, K)
        Plain maximum likelihood's Q.
    first : EstimatorChoice
        :func:`premise_absent`'s choice, whose record this one extends.
    excess : tuple of float, optional
        ``(r2, excess)`` of :func:`cluster_excess`.
    Q_spectral : numpy.ndarray, shape (n_individuals, K), optional
        The spectral estimate.
    skipped : str, optional
        Why the next step's input cannot be had (too many individuals, no
        spectral estimate): the look then ends at ``"ml"``, saying so.
    ml_corner, corner_rank, max_excess, spread_rank, max_spread
        The thresholds (defaults: :data:`ML_CORNER`, :data:`CORNER_RANK`,
        :data:`CLUSTER_EXCESS`, :data:`SPREAD_RANK`, :data:`MAX_SPREAD`).

    Returns
    -------
    step : str
        ``"ml"``, ``"cluster"``, ``"spectral-stage"`` or ``"spectral"``.
    choice : EstimatorChoice
        ``first`` with the look's statistics, thresholds and reason; its
        estimator is ``"spectral"`` when ``step`` is, else ``"ml"``.

    Examples
    --------
    >>> first = premise_absent(0.05)
    >>> second_look(np.eye(3).repeat(10, axis=0), first)[0]
    'ml'
    >>> cloud = np.random.default_rng(0).dirichlet([10, 10, 10], 60)
    >>> second_look(cloud, first)[0]
    'cluster'
    >>> second_look(cloud, first, excess=(0.6, 0.02))[0]
    'spectral-stage'
    >>> second_look(cloud, first, excess=(0.6, 0.02), Q_spectral=cloud)[0]
    'spectral'
    """
    clock = time.perf_counter()
    K = Q_ml.shape[1]
    reach = corner_reach(Q_ml, rank=corner_rank)
    reached = int(np.count_nonzero(reach >= ml_corner))
    statistics = dict(first.statistics, ml_corner_reach=reach.tolist(),
                      ml_components_at_corner=reached)
    thresholds = dict(first.thresholds, ml_corner=ml_corner, corner_rank=corner_rank)
    sentences = [first.reason.removesuffix("; maximum likelihood, as ADMIXTURE"),
                 f"so maximum likelihood first, then a second look: its Q has its "
                 f"{corner_rank} highest proportions at {ml_corner:g} or more in "
                 f"{reached} of {K} components"]
    step = "ml" if reached == K else "cluster"
    if step == "cluster" and excess is not None:
        r2, extra = excess
        statistics.update(cluster_r2=r2, cluster_excess=extra)
        thresholds["cluster_excess"] = max_excess
        clustered = extra > max_excess
        sentences.append(
            f"the individuals' top {K - 1} principal components have a k-means R^2 "
            f"of {r2:.2f}, {extra:+.2f} from a Gaussian cloud's ("
            + (f"> {max_excess:g}: populations, which pin its frame)" if clustered
               else f"<= {max_excess:g}: one admixed cloud)"))
        step = "ml" if clustered else "spectral-stage"
    if step == "spectral-stage" and Q_spectral is not None:
        spread = _share_to_corner(Q_spectral, spread_rank)
        statistics["spectral_spread"] = spread.tolist()
        thresholds.update(spread_rank=spread_rank, max_spread=max_spread)
        kept = bool(np.all(spread < max_spread))
        shown = "/".join(f"{value:.2f}" for value in spread.tolist())
        sentences.append(
            f"the spectral estimate's {spread_rank} highest proportions of each "
            f"component reach {shown} of the way from the centre to the corner ("
            + (f"all < {max_spread:g})" if kept else f"not all < {max_spread:g})"))
        step = "spectral" if kept else "ml"
    if step in ("cluster", "spectral-stage") and skipped:
        sentences.append(f"the second look stops there ({skipped})")
        step = "ml"
    if step == "spectral":
        sentences.append("nobody is near-unadmixed, where maximum likelihood pushes Q "
                         "to the simplex's corners: keeping the spectral estimate")
    elif step == "ml":
        sentences.append("maximum likelihood, as ADMIXTURE")
    seconds = first.seconds + time.perf_counter() - clock
    choice = EstimatorChoice("spectral" if step == "spectral" else "ml",
                             "; ".join(sentences), statistics, thresholds, seconds)
    return step, choice
