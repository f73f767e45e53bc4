"""Several fits of one K: align them, measure how alike they are, group them into modes.

A likelihood surface for admixture has local maxima, so fits from different
starts can end in different solutions; a *mode* is a group of runs that found
the same solution up to label switching (CLUMPP, CLUMPAK, pong and Clumppling
exist for this). :func:`find_modes` takes the runs' Q matrices of one K (and
their log-likelihoods) and

1. aligns every run to a reference run (the best log-likelihood's) by optimal
   assignment of components (:func:`admixspec.core.metrics.assign_components`, the
   Hungarian algorithm);
2. computes every pair's similarity, CLUMPP's *G'*, each pair under its own
   optimal permutation;
3. groups runs whose every pair is at least ``threshold`` alike (complete
   linkage), and orders the modes by size.

:func:`align_mode_panels` then gives each mode's representative one colour per
component across K, as the plots do (:func:`admixspec.core.metrics.align_components`).
Everything here is pure array arithmetic; the files ``PREFIX.K.modes.tsv`` and
``PREFIX.K.mode<M>.Q`` are written by :mod:`admixspec.io.modes`.

The measure and the threshold
-----------------------------
Similarity is CLUMPP's *G'* (Jakobsson & Rosenberg 2007) under the best
permutation of the second run's components,

.. math::

    G'(Q_a, Q_b) = 1 - \\frac{\\lVert Q_a - Q_b \\Pi \\rVert_F}{\\sqrt{2N}},

1 for identical runs, 0 for runs as far apart as two Q matrices can be (every
individual wholly in a different component). It is the measure the
established tools share: CLUMPAK (Kopelman et al. 2015) builds its modes from
CLUMPP's similarity; Clumppling (Liu et al. 2024,
github.com/PopGenClustering/Clumppling, ``clumppling/utils.py``) uses the cost
:math:`C = \\lVert Q_a - Q_b\\Pi\\rVert_F^2 / 2N`, i.e. :math:`G' = 1 - \\sqrt{C}`,
and pong (Behr et al. 2016, github.com/ramachandran-lab/pong, ``dist_metrics.py``)
offers the same *G* per component among its metrics. Being a scaled Frobenius
norm, it weighs a component that moves between a few individuals by how many
individuals and how much of their ancestry moved, which is what a reader of
the bar plot sees.

Runs are in one mode when every pair of them has :math:`G' \\ge 0.97` (the
default ``threshold``). The established tools bracket that line: Clumppling
calls all runs one mode when every pairwise cost is below ``comm_min = 1e-4``
(:math:`G' > 0.99`) and all runs separate when every cost is above
``comm_max = 1e-2`` (:math:`G' < 0.9`), leaving the range between to Louvain
community detection (``clumppling/core.py``, ``detect_communities``); pong's
default similarity threshold is 0.97, on its own per-component scale. Where the
line falls between 0.9 and 0.99 was decided by measurement:

* on the bundled example (``data/example.bed``, 60 individuals) at K = 3, the
  default fit and ML from random starts end in distinct maxima (the same Q at
  a stopping tolerance of 1e-4 and of 1e-7, log-likelihoods up to 3.2 units
  apart) whose pairwise G' is 0.9895 to 0.9956: bar plots nobody can tell
  apart, which 0.99 would have split into two modes;
* on the ADMIXTURE tutorial's HapMap3 data (324 individuals) at K = 4, five
  runs (``docs/make_report_figure.py``) end in four solutions whose
  log-likelihoods are 61 to 861 units apart and whose G' to the major mode's
  is 0.85 to 0.89;
* one individual of 324 moving wholly from one component to another costs
  G' 0.944 (:math:`1 - \\sqrt{2 / 648}`), so at 0.97 that is a different mode,
  while every individual's bar shifting by 0.02 (:math:`G' \\approx 0.98`)
  is not.

Grouping is complete linkage (:func:`scipy.cluster.hierarchy.linkage`) cut at
``1 - threshold``: every two runs of a mode are at least ``threshold`` alike,
as in pong's modes (maximal cliques of the graph of pairs above its
threshold), but deterministic and without pong's greedy pass when cliques
overlap. Clumppling's Louvain community detection adapts to the spread of the
costs instead of a fixed line; with the handful of runs a user makes per K
(3 to 20), a fixed, stated line is easier to read and to test.

References
----------
Jakobsson M, Rosenberg NA (2007). CLUMPP. Bioinformatics 23:1801-1806.
Kopelman NM et al. (2015). CLUMPAK. Mol Ecol Resour 15:1179-1191.
Behr AA et al. (2016). pong. Bioinformatics 32:2817-2823.
Liu X et al. (2024). Clumppling. Mol Ecol Resour 24:e13977.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..core.exceptions import UsageError
from ..core.metrics import align_components, assign_components

__all__ = [
    "DEFAULT_THRESHOLD",
    "LOGLIK_TIE",
    "Mode",
    "ModesResult",
    "align_mode_panels",
    "find_modes",
    "similarity",
]

#: Runs are one mode when every pair has CLUMPP's G' at least this (between
#: Clumppling's single-mode line 0.99 and its all-separate line 0.9; measured in
#: the module docstring).
DEFAULT_THRESHOLD = 0.97

#: Log-likelihoods this close are ties (the log prints six decimals), which go to
#: the earliest run: runs that stop on one maximum often differ by less.
LOGLIK_TIE = 1e-6

#: The name written beside the numbers (log, TSV header comment, report).
MEASURE = "CLUMPP G' (1 - ||Q_a - Q_b P||_F / sqrt(2N), best permutation P)"


def _squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``sum_i (A[i, k] - B[i, l])**2``, shape (K_A, K_B), without an N x K x K array."""
    cross = A.T @ B
    return (A * A).sum(0)[:, None] + (B * B).sum(0)[None, :] - 2.0 * cross


def _best_permutation(reference: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Columns of ``other`` matched to ``reference``'s, minimising the Frobenius norm."""
    return assign_components(_squared_distances(reference, other))


def _g_prime(reference: np.ndarray, other: np.ndarray, perm: np.ndarray) -> float:
    n = reference.shape[0]
    distance = math.sqrt(max(float(((reference - other[:, perm]) ** 2).sum()), 0.0))
    return 1.0 - distance / math.sqrt(2.0 * n)


def similarity(Q_a, Q_b) -> float:
    """CLUMPP's G' between two runs, under the permutation that suits them best.

    Parameters
    ----------
    Q_a, Q_b : array_like, float, shape (n_individuals, K)
        Ancestry proportions of the same individuals (same rows, same K).

    Returns
    -------
    float
        :math:`1 - \\lVert Q_a - Q_b\\Pi \\rVert_F / \\sqrt{2N}` with the
        permutation :math:`\\Pi` of ``Q_b``'s components that minimises the
        norm: 1 for identical runs up to label switching, 0 at most apart.

    Raises
    ------
    UsageError
        Shapes that differ or are not 2-d.

    Examples
    --------
    >>> import numpy as np
    >>> Q = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    >>> similarity(Q, Q[:, ::-1])
    1.0
    >>> round(similarity(Q, [[0.1, 0.9], [0.2, 0.8], [0.5, 0.5]]), 4)
    0.6536
    """
    A = np.asarray(Q_a, dtype=float)
    B = np.asarray(Q_b, dtype=float)
    if A.ndim != 2 or A.shape != B.shape:
        raise UsageError(f"Q_a and Q_b need one 2-d shape, got {A.shape} and {B.shape}")
    return _g_prime(A, B, _best_permutation(A, B))


@dataclass(frozen=True)
class Mode:
    """One mode: runs that found the same solution.

    Attributes
    ----------
    mode : int
        1-based number; mode 1 is the major mode (most runs).
    runs : tuple of int
        Indices (0-based, into the runs given to :func:`find_modes`) of its runs,
        ascending.
    share : float
        Fraction of all runs in this mode.
    best_loglik, mean_loglik : float
        Best and mean log-likelihood of its runs (NaN without log-likelihoods).
    similarity_to_major : float
        G' between this mode's representative and the major mode's (1 for the
        major mode).
    representative : int
        The run that stands for the mode: the reported run in its own mode,
        else its best log-likelihood (the earliest of runs within
        :data:`LOGLIK_TIE` of it; without log-likelihoods, the run most alike
        the others on average).
    min_similarity : float
        The smallest G' between two of its runs (1 for a single run).
    """

    mode: int
    runs: tuple[int, ...]
    share: float
    best_loglik: float
    mean_loglik: float
    similarity_to_major: float
    representative: int
    min_similarity: float


@dataclass
class ModesResult:
    """The runs of one K, aligned, and their modes (from :func:`find_modes`).

    Attributes
    ----------
    K : int
        Number of components.
    modes : list of Mode
        By decreasing number of runs, then best log-likelihood; ``modes[0]`` is
        the major mode.
    labels : numpy.ndarray, int64, shape (n_runs,)
        Mode number (1-based) of each run.
    similarity : numpy.ndarray, float64, shape (n_runs, n_runs)
        Pairwise G' (symmetric, 1 on the diagonal).
    permutations : numpy.ndarray, int64, shape (n_runs, K)
        ``Q_r[:, permutations[r]]`` is run ``r`` aligned to the reference run.
    aligned : numpy.ndarray, float64, shape (n_runs, n_individuals, K)
        Every run's Q with its columns so permuted.
    logliks : numpy.ndarray, float64, shape (n_runs,)
        The runs' log-likelihoods (NaN when not given).
    reference : int
        Index of the run the others are aligned to, the one reported (the best
        log-likelihood's unless :func:`find_modes` was given another; run 0
        without log-likelihoods).
    run_names : list of str
        A name per run for files and logs (default ``"1"``, ``"2"``, ...).
    threshold : float
        The G' line used.
    measure : str
        What the similarity is.
    """

    K: int
    modes: list[Mode]
    labels: np.ndarray
    similarity: np.ndarray
    permutations: np.ndarray
    aligned: np.ndarray
    logliks: np.ndarray
    reference: int
    run_names: list[str]
    threshold: float
    measure: str = field(default=MEASURE)

    @property
    def n_runs(self) -> int:
        """Number of runs."""
        return len(self.labels)

    @property
    def best_run(self) -> int:
        """The reported run, :attr:`reference` (by default the best log-likelihood's)."""
        return self.reference

    def representative_Q(self, mode: int) -> np.ndarray:
        """Aligned Q of a mode's representative run, shape (n_individuals, K).

        Parameters
        ----------
        mode : int
            1-based mode number.
        """
        return self.aligned[self._mode(mode).representative]

    def _mode(self, mode: int) -> Mode:
        if not 1 <= mode <= len(self.modes):
            raise UsageError(f"mode must be 1..{len(self.modes)}, got {mode}")
        return self.modes[mode - 1]

    def table(self):
        """One row per mode, the columns of ``PREFIX.K.modes.tsv``.

        Returns
        -------
        pandas.DataFrame
            ``mode`` (1-based), ``n_runs``, ``share``, ``best_loglik``,
            ``mean_loglik``, ``similarity_to_major``, ``min_similarity``,
            ``representative`` (a run name), ``best`` (True on the mode holding
            the best log-likelihood run) and ``runs`` (its run names,
            comma-separated).
        """
        import pandas as pd

        rows = [
            {
                "mode": m.mode,
                "n_runs": len(m.runs),
                "share": m.share,
                "best_loglik": m.best_loglik,
                "mean_loglik": m.mean_loglik,
                "similarity_to_major": m.similarity_to_major,
                "min_similarity": m.min_similarity,
                "representative": self.run_names[m.representative],
                "best": self.reference in m.runs,
                "runs": ",".join(self.run_names[r] for r in m.runs),
            }
            for m in self.modes
        ]
        return pd.DataFrame(rows)

    def run_table(self):
        """One row per run: name, log-likelihood, mode, G' to the reference run.

        Returns
        -------
        pandas.DataFrame
            Columns ``run``, ``loglik``, ``mode``, ``similarity_to_reference``,
            in run order.
        """
        import pandas as pd

        return pd.DataFrame(
            {
                "run": self.run_names,
                "loglik": self.logliks,
                "mode": self.labels,
                "similarity_to_reference": self.similarity[self.reference],
            }
        )

    def record(self) -> dict:
        """A JSON-ready summary, for ``PREFIX.K.json`` under ``"modes"``.

        Returns
        -------
        dict
            ``measure``, ``threshold``, ``n_runs``, ``reference`` (run name),
            ``modes`` (the :meth:`table` rows) and ``runs`` (the
            :meth:`run_table` rows); NaN becomes None.
        """

        def clean(rows):
            return [
                {k: (None if isinstance(v, float) and math.isnan(v) else v)
                 for k, v in row.items()}
                for row in rows
            ]

        modes = self.table()
        modes["best"] = modes["best"].astype(bool)
        return {
            "measure": self.measure,
            "threshold": self.threshold,
            "n_runs": self.n_runs,
            "reference": self.run_names[self.reference],
            "modes": clean(modes.astype(object).to_dict("records")),
            "runs": clean(self.run_table().astype(object).to_dict("records")),
        }

    def log_lines(self) -> list[str]:
        """Lines for ``PREFIX.K.log``: the modes, their shares and log-likelihoods.

        Examples
        --------
        >>> import numpy as np
        >>> Q = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
        >>> modes = find_modes([Q, Q[:, ::-1]], logliks=[-5.0, -5.5])
        >>> for line in modes.log_lines():  # doctest: +NORMALIZE_WHITESPACE
        ...     print(line)
        Modes (K=2): 1 mode over 2 runs (CLUMPP G' >= 0.97 between every two runs)
        Mode 1: 2 runs (100%): 1,2; representative run 1;
            loglikelihood best -5.000000, mean -5.250000
        """
        count = len(self.modes)
        lines = [
            f"Modes (K={self.K}): {count} mode{'s' if count != 1 else ''} over "
            f"{self.n_runs} run{'s' if self.n_runs != 1 else ''} "
            f"(CLUMPP G' >= {self.threshold:g} between every two runs)"
        ]
        for m in self.modes:
            names = ",".join(self.run_names[r] for r in m.runs)
            plural = "s" if len(m.runs) != 1 else ""
            text = (f"Mode {m.mode}: {len(m.runs)} run{plural} ({100 * m.share:.0f}%): "
                    f"{names}; representative run {self.run_names[m.representative]}")
            if not math.isnan(m.best_loglik):
                text += (f"; loglikelihood best {m.best_loglik:.6f}, "
                         f"mean {m.mean_loglik:.6f}")
            if m.mode > 1:
                text += f"; G' to mode 1 {m.similarity_to_major:.4f}"
            lines.append(text)
        return lines


def _check_runs(Qs) -> list[np.ndarray]:
    mats = [np.asarray(Q, dtype=float) for Q in Qs]
    if not mats:
        raise UsageError("find_modes needs at least one run")
    shape = mats[0].shape
    if len(shape) != 2 or shape[1] < 1 or shape[0] < 1:
        raise UsageError(f"each Q must be 2-d (individuals x K), got {shape}")
    for index, Q in enumerate(mats):
        if Q.shape != shape:
            raise UsageError(
                f"every run needs the same shape: run {index + 1} has {Q.shape}, "
                f"run 1 has {shape}"
            )
        if not np.all(np.isfinite(Q)):
            raise UsageError(f"run {index + 1}'s Q has NaN or infinite values")
    return mats


def _pairwise(mats: list[np.ndarray]) -> np.ndarray:
    """Symmetric G' matrix, each pair under its own best permutation."""
    R = len(mats)
    S = np.ones((R, R))
    for a in range(R):
        for b in range(a + 1, R):
            S[a, b] = S[b, a] = _g_prime(mats[a], mats[b],
                                         _best_permutation(mats[a], mats[b]))
    return S


def _cluster(S: np.ndarray, threshold: float) -> np.ndarray:
    """Complete-linkage groups (arbitrary ids) cut so every pair is >= threshold."""
    R = S.shape[0]
    if R == 1:
        return np.zeros(1, dtype=np.int64)
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    distance = np.clip(1.0 - S, 0.0, None)
    np.fill_diagonal(distance, 0.0)
    tree = linkage(squareform(distance, checks=False), method="complete")
    # fcluster keeps merges at height <= t; a pair at exactly the threshold is alike.
    cut = (1.0 - threshold) * (1 + 1e-12) + 1e-15
    return fcluster(tree, t=cut, criterion="distance").astype(np.int64)


def _first_best(ll: np.ndarray, members: np.ndarray) -> int:
    """The earliest of ``members`` within :data:`LOGLIK_TIE` of their best."""
    values = ll[members]
    return int(members[np.flatnonzero(values >= np.nanmax(values) - LOGLIK_TIE)[0]])


def find_modes(Qs, *, logliks=None, threshold: float = DEFAULT_THRESHOLD,
               run_names=None, reference: int | None = None) -> ModesResult:
    """Align several runs of one K and group them into modes.

    See the module docstring for the measure (CLUMPP's G') and the default
    threshold (0.97) and why.

    Parameters
    ----------
    Qs : sequence of array_like, float, shape (n_individuals, K)
        Each run's ancestry proportions, for the same individuals in the same
        row order. Run 0 should be the default start (it wins ties).
    logliks : sequence of float, shape (n_runs,), optional
        Each run's log-likelihood. The best run is the reference the others
        are aligned to and its mode's representative (of runs within
        :data:`LOGLIK_TIE` of the best, the earliest); modes of equal size are
        ordered by their best log-likelihood. Without them, run 0 is the
        reference and a mode's representative is its run most alike the others.
    threshold : float
        Runs are one mode when every pair of them has G' >= ``threshold``;
        in (0, 1].
    run_names : sequence of str, optional
        A name per run for the table and log (the seeds, say); default
        ``"1"``, ``"2"``, ...
    reference : int, optional
        The run reported as the result, when it is not the best
        log-likelihood's (:func:`admixspec.fit.runs.fit_runs` keeps the
        default's spectral estimate, whose log-likelihood every maximum
        likelihood run exceeds): the others are aligned to it, and it
        represents its mode.

    Returns
    -------
    ModesResult

    Raises
    ------
    UsageError
        No run, shapes that differ, NaN values, a threshold outside (0, 1],
        ``logliks``/``run_names`` of the wrong length, or a ``reference``
        that is no run.

    Examples
    --------
    >>> from admixspec import simulate_balding_nichols
    >>> Q = simulate_balding_nichols(60, 100, 3, seed=1).Q
    >>> other = np.roll(Q, 1, axis=0)            # a different solution
    >>> result = find_modes([Q, Q[:, [2, 0, 1]], other], logliks=[-10.0, -10.0, -12.0])
    >>> [m.runs for m in result.modes], result.labels.tolist()
    ([(0, 1), (2,)], [1, 1, 2])
    >>> result.table()[["mode", "n_runs", "share", "representative", "best"]]
       mode  n_runs     share representative   best
    0     1       2  0.666667              1   True
    1     2       1  0.333333              3  False
    """
    mats = _check_runs(Qs)
    R, K = len(mats), mats[0].shape[1]
    if not 0.0 < threshold <= 1.0:
        raise UsageError(f"threshold must be in (0, 1], got {threshold}")
    if logliks is None:
        ll = np.full(R, np.nan)
    else:
        ll = np.asarray(logliks, dtype=float).ravel()
        if ll.shape != (R,):
            raise UsageError(f"{ll.size} log-likelihoods for {R} runs")
        if np.isnan(ll).all():
            ll = np.full(R, np.nan)
    names = [str(r + 1) for r in range(R)] if run_names is None else [
        str(name) for name in run_names]
    if len(names) != R:
        raise UsageError(f"{len(names)} run names for {R} runs")
    has_ll = not np.isnan(ll).all()
    given = reference is not None
    if not given:
        # the default start, run 0, wins ties
        reference = _first_best(ll, np.arange(R)) if has_ll else 0
    elif not 0 <= int(reference) < R:
        raise UsageError(f"reference run {reference} of {R} runs")
    reference = int(reference)

    S = _pairwise(mats)
    groups = _cluster(S, threshold)

    def representative(members: np.ndarray) -> int:
        if (given or has_ll) and reference in members:  # the reported run stands for it
            return reference
        if has_ll and not np.isnan(ll[members]).all():
            return _first_best(ll, members)
        return int(members[np.argmax(S[np.ix_(members, members)].mean(axis=1))])

    drafts = []
    for group in np.unique(groups):
        members = np.flatnonzero(groups == group)
        rep = representative(members)
        best = float(np.nanmax(ll[members])) if has_ll else math.nan
        drafts.append((members, rep, best))
    drafts.sort(key=lambda d: (-len(d[0]),
                               -d[2] if not math.isnan(d[2]) else 0.0,
                               int(d[0][0])))
    major_rep = drafts[0][1]
    labels = np.zeros(R, dtype=np.int64)
    modes = []
    for number, (members, rep, best) in enumerate(drafts, start=1):
        labels[members] = number
        within = S[np.ix_(members, members)]
        modes.append(
            Mode(
                mode=number,
                runs=tuple(int(r) for r in members),
                share=len(members) / R,
                best_loglik=best,
                mean_loglik=float(np.nanmean(ll[members])) if has_ll else math.nan,
                similarity_to_major=float(S[rep, major_rep]),
                representative=rep,
                min_similarity=float(within.min()),
            )
        )
    permutations = np.empty((R, K), dtype=np.int64)
    for r, Q in enumerate(mats):
        permutations[r] = (np.arange(K) if r == reference
                           else _best_permutation(mats[reference], Q))
    aligned = np.stack([Q[:, permutations[r]] for r, Q in enumerate(mats)])
    return ModesResult(
        K=K, modes=modes, labels=labels, similarity=S, permutations=permutations,
        aligned=aligned, logliks=ll, reference=reference, run_names=names,
        threshold=float(threshold),
    )


def align_mode_panels(panels) -> list[np.ndarray]:
    """Permutations that colour every K's modes consistently, as the plots do.

    The first panel of each K (its main Q: the best run, or the major mode) is
    aligned across K by :func:`admixspec.core.metrics.align_components`; every other
    panel of that K (a minor mode's representative) is then aligned to its K's
    aligned main panel with the same function, so a minor mode is compared
    with the main solution of its own K and not with whatever panel precedes
    it.

    Parameters
    ----------
    panels : sequence of array_like, float, shape (n_individuals, K_j)
        Q matrices of the same individuals at any K; within one K the first
        one given is that K's main panel.

    Returns
    -------
    list of numpy.ndarray, int64, shape (K_j,)
        In input order: ``Q[:, perm]`` is the aligned panel.

    Examples
    --------
    >>> import numpy as np
    >>> Q2 = np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5]])
    >>> Q3 = np.array([[0.0, 0.1, 0.9], [0.8, 0.1, 0.1], [0.1, 0.4, 0.5]])
    >>> [p.tolist() for p in align_mode_panels([Q2, Q3, Q3[:, [1, 2, 0]]])]
    [[0, 1], [2, 0, 1], [1, 2, 0]]
    """

    mats = [np.asarray(Q, dtype=float) for Q in panels]
    if not mats:
        return []
    main: dict[int, int] = {}
    for index, Q in enumerate(mats):
        if Q.ndim != 2:
            raise UsageError(f"panel {index} must be 2-d, got shape {Q.shape}")
        main.setdefault(Q.shape[1], index)
    order = sorted(main)
    across = align_components([mats[main[K]] for K in order])
    perms: list[np.ndarray | None] = [None] * len(mats)
    for K, perm in zip(order, across, strict=True):
        perms[main[K]] = perm
    for index, Q in enumerate(mats):
        if perms[index] is None:
            K = Q.shape[1]
            reference = mats[main[K]][:, perms[main[K]]]
            perms[index] = align_components([reference, Q])[1]
    return perms  # type: ignore[return-value]
