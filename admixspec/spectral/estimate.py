"""The spectral admixture estimator (seed paper §5, method.md §2–4).

One *pass* turns a choice of moment SNPs into (Q, P):

1. moments of ``x = g/2`` over the chosen SNPs, streamed in blocks
   (:mod:`admixspec.spectral.moments`), counting each SNP's chosen allele;
2. diagonal completion and whitening of M2, masked least squares for the
   whitened third moment (:mod:`admixspec.spectral.denoise`);
3. all Newton-stable eigenpairs (:mod:`admixspec.spectral.tensor`);
4. candidates rescaled to sum to one, with range scores
   (:mod:`admixspec.spectral.candidates`);
5. likelihood-maximising subset search (:mod:`admixspec.spectral.search`).

Which SNPs feed the moments matters more than anything else: the columns of
``W^+`` are eigenvectors exactly when every counted allele is private to one
ancestral population (method.md §4). Rare alleles are mostly private, so the
passes use SNPs whose sample minor-allele count is small and count the
minor allele, and :func:`spectral_scan` picks the frequency window whose
tensor is closest to orthogonally decomposable. The whitening's column space
(the span of Q, the same for every SNP set) comes from all SNPs, only its
K x K core from the window (:func:`column_space`): a rare window alone
estimates that space badly where rare alleles are shared by descent.
Second passes on SNPs whose counted allele a first estimate's least-squares
P places in one population (:func:`privacy_pass`) are an option of
:func:`spectral_scan`, off by default: on the realistic suite they helped the
mosaics and Balding-Nichols data but hurt the paper's alpha = 1 and 10
settings (``benchmarks/spectral_second_pass.py``, docs/method.md).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..core.frequencies import frequency_blocks, least_squares_p
from ..core.genotypes import allele_counts, check_dosage, minor_allele_counts
from ..core.threads import serial_blas_below
from ..core.validation import SEED, Interval, validate_params
from .candidates import CandidateSet, make_candidates
from .denoise import complete_diagonal, solve_masked_tensor, whiten, whiten_in_subspace
from .moments import (
    add_outer_products,
    fill_upper,
    second_moments,
    unbiased_second_moment,
    whitened_third_moment_terms,
)
from .search import SubsetSearchResult, q_from_candidates, search_subsets
from .tensor import TensorEigenpairs, eigenpairs

__all__ = [
    "SpectralPass",
    "KHint",
    "column_space",
    "k_hint",
    "privacy_pass",
    "private_allele_snps",
    "rare_allele_snps",
    "ScoringSample",
    "snp_sample",
    "spectral_pass",
    "spectral_scan",
    "window_score",
]

logger = logging.getLogger("admixspec")


def rare_allele_snps(counted, observed, *, min_count=2, max_frequency=0.05):
    """SNPs whose sample minor allele is rare, and which allele that is.

    Parameters
    ----------
    counted, observed : numpy.ndarray, shape (n,)
        From :func:`allele_counts`.
    min_count : int
        Smallest minor-allele count kept (singletons carry no covariance).
    max_frequency : float
        Largest minor-allele frequency kept.

    Returns
    -------
    snps : numpy.ndarray of int
        Selected SNP columns.
    flip : numpy.ndarray of bool
        True where the minor allele is the *other* allele (count ``1 - x``).
    """
    minor = minor_allele_counts(counted, observed)
    keep = (minor >= min_count) & (minor <= max_frequency * observed)
    snps = np.flatnonzero(keep)
    flip = counted[snps] > observed[snps] - counted[snps]
    return snps, flip


class ScoringSample(NamedTuple):
    """A random SNP sample for likelihood scoring (:func:`snp_sample`).

    Attributes
    ----------
    dosage : numpy.ndarray, int8, shape (m, size)
        The sampled columns' genotypes, -1 for missing (as int8, not a float
        copy and a mask: at 5,000 individuals and the rescoring sample's
        5,000 SNPs that saves 191 MiB of the spectral stage's peak).
    x : numpy.ndarray, float64, shape (m, size)
        Allele frequencies ``g / 2``, missing imputed by the SNP's mean.
    """

    dosage: np.ndarray
    x: np.ndarray


def snp_sample(dosage, size, rng, *, snps=None) -> ScoringSample:
    """A random SNP sample for likelihood scoring.

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (m, n)
    size : int
    rng : numpy.random.Generator
    snps : numpy.ndarray of int, optional
        Columns to draw from (default all).

    Returns
    -------
    ScoringSample
    """
    pool = np.arange(dosage.shape[1]) if snps is None else np.asarray(snps)
    chosen = np.sort(rng.choice(pool, size=min(size, len(pool)), replace=False))
    block = np.take(dosage, chosen, axis=1)  # C-ordered in one copy, as the kernel reads
    _, x = next(frequency_blocks(block, block_size=max(len(chosen), 1)))
    return ScoringSample(block, x)


@dataclass
class SpectralPass:
    """Result and diagnostics of one spectral pass.

    Attributes
    ----------
    Q : numpy.ndarray, shape (m, K), or None
        Proportions from the chosen candidates (None when fewer than K
        candidates were found).
    candidates : CandidateSet
        All candidates (after optional pruning, in search order).
    eigen : TensorEigenpairs
        Eigenpairs of the whitened tensor.
    search : SubsetSearchResult or None
    n_moment_snps : int
        SNPs the moments were computed from.
    timings : dict
        Seconds per stage.
    details : dict
        Diagonal-completion iterations, CG residual, etc.
    """

    Q: np.ndarray | None
    candidates: CandidateSet
    eigen: TensorEigenpairs
    search: SubsetSearchResult | None
    n_moment_snps: int
    timings: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)


def spectral_pass(
    dosage,
    K,
    snps,
    flip,
    *,
    sample,
    rescore_sample,
    fill=None,
    second=None,
    whitening=None,
    n_starts=None,
    max_candidates=40,
    max_exhaustive=20_000,
    seed=None,
) -> SpectralPass:
    """Run moments -> denoising -> eigenpairs -> candidates -> search once.

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (m, n)
    K : int
        Number of ancestral populations, ``K >= 2``.
    snps, flip : numpy.ndarray
        Moment SNPs and which of them count the other allele.
    sample, rescore_sample : ScoringSample
        Scoring samples from :func:`snp_sample`.
    fill : callable, optional
        Model-based imputation of missing calls for the moments.
    second : numpy.ndarray, shape (m, m), optional
        The second moment of these SNPs, if already accumulated.
    whitening : Whitening, optional
        A whitening of these SNPs' second moment (e.g. from
        :func:`admixspec.spectral.denoise.whiten_in_subspace`); default: the
        diagonal-completed ``second``'s own top-K eigenpairs.
    n_starts : int, optional
        Random starts of the eigenpair solver.
    max_candidates : int
        Candidates kept for the search, most negative curvature first.
    max_exhaustive : int
        Exhaustive-search budget (number of subsets).
    seed : int, optional

    Returns
    -------
    SpectralPass
    """
    timings = {}
    clock = time.perf_counter()
    completion_iterations = 0
    white = whitening
    if white is None:
        own = second is None  # completed in place unless the caller's
        blocks = frequency_blocks(dosage, snps=snps, flip=flip, fill=fill)
        second = second_moments(blocks).M2 if own else second
        R, completion_iterations = complete_diagonal(second, K, overwrite=own)
        white = whiten(R, K)
    terms = whitened_third_moment_terms(
        frequency_blocks(dosage, snps=snps, flip=flip, fill=fill), white.B
    )
    tensor, cg = solve_masked_tensor(terms, white.B)
    timings["moments"] = time.perf_counter() - clock

    clock = time.perf_counter()
    eigen = eigenpairs(tensor, n_starts=n_starts, seed=seed)
    timings["eigenpairs"] = time.perf_counter() - clock

    clock = time.perf_counter()
    candidates = make_candidates(tensor, eigen.vectors, eigen.values, white.K_white,
                                 sample.x)
    # most curved (local maxima) first: the components when the tensor is
    # (nearly) orthogonally decomposable, see candidates.curvatures
    order = np.argsort(candidates.curvature, kind="stable")[:max_candidates]
    candidates = candidates.take(order)
    maxima = np.flatnonzero(candidates.curvature < 0)
    search = None
    Q = None
    if len(maxima) >= K:
        search = search_subsets(
            candidates.vectors[maxima], K, sample, rescore_sample,
            max_exhaustive=max_exhaustive, seed=seed,
        )
        search.subset = maxima[search.subset]
    elif len(candidates) >= K:
        search = search_subsets(
            candidates.vectors, K, sample, rescore_sample, required=maxima,
            max_exhaustive=max_exhaustive, seed=seed,
        )
    if search is not None:
        Q = q_from_candidates(candidates.vectors[search.subset])
    timings["search"] = time.perf_counter() - clock
    details = {
        "diagonal_completion_iterations": completion_iterations,
        "masked_ls_cg_iterations": cg["iterations"],
        "masked_ls_relative_residual": cg["relative_residual"],
        "whitening_eigenvalues": white.eigenvalues.tolist(),
        "local_maxima": int(len(maxima)),
        "chosen_curvature": (
            None if search is None else candidates.curvature[search.subset].tolist()
        ),
    }
    logger.info(
        "spectral pass: %d moment SNPs, %d eigenpairs, %d candidates%s",
        len(snps),
        len(eigen.values),
        len(candidates),
        "" if search is None else (f", {search.n_subsets} subsets ({search.strategy}), "
                                   f"{search.n_feasible} near-feasible"),
    )
    return SpectralPass(Q, candidates, eigen, search, len(snps), timings, details)


#: Upper ends of the minor-allele-frequency windows tried for the moment SNPs.
DEFAULT_WINDOWS = (0.02, 0.05, 0.1, 0.2, 0.5)
#: Windows ending above this minor allele frequency hold common SNPs, whose
#: alleles populations share. Where rare alleles are plentiful
#: ``spectral_scan(..., common_windows=False)`` skips their passes (their SNPs
#: still anchor the column space): on the 155 data sets of the choice grid
#: and the realistic suite with at least 30% rare SNPs, and on coalescent
#: data at K = 4-6 and ADAMIXTURE's demo data at K = 2-8, a common window
#: never won the scan, and it was the costliest (docs/benchmarks.md).
COMMON_WINDOW_END = 0.2
#: Individuals below which :func:`spectral_scan` runs BLAS on one thread. Its
#: BLAS calls are small (K x K cores, m x K products, batched subset
#: solves) between the parallel numba kernels of the tensor eigenpairs and
#: the subset search, and BLAS's threads, busy-waiting between calls, took
#: the cores from those kernels. The spectral stage at two threads, BLAS on
#: two threads against one: ADAMIXTURE's demo data (105 individuals) 1.12-1.19
#: against 0.74-0.89 s; coalescent simulations of 500 and 1,000 individuals
#: even; 2,000 individuals 5.10-5.58 against 6.68-7.32 s (docs/benchmarks.md).
SERIAL_BLAS_BELOW = 1000


def window_score(result: SpectralPass) -> float:
    """Largest distance of a chosen component's curvature from -1 (lower is better).

    The closer the moment SNPs are to private alleles, the closer the
    whitened tensor is to orthogonally decomposable and the chosen local
    maxima to curvature exactly -1; shared alleles pull them towards 0 and
    sampling noise scatters them both ways. A generic K x K x K tensor has at
    most ``2^K - 1`` eigenpairs (Cartwright & Sturmfels 2013); a window whose
    tensor shows more is degenerate (noise-dominated) and scores infinity.
    """
    chosen = result.details.get("chosen_curvature")
    K = result.eigen.vectors.shape[1] if len(result.eigen.values) else 0
    if result.Q is None or not chosen or len(result.eigen.values) > 2**K - 1:
        return np.inf
    return float(np.max(np.abs(np.asarray(chosen) + 1.0)))


def private_allele_snps(dosage, Q, counts, *, threshold=0.9, min_count=2,
                        max_frequency=0.1):
    """SNPs whose counted allele a first estimate places in one population.

    With ``P`` the least-squares frequencies of every SNP given ``Q``, the
    *privacy* of an allele is ``max_k p_k / sum_k p_k`` (1 when only one
    population carries it); of each SNP's two alleles the more private one is
    counted.

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (m, n)
    Q : numpy.ndarray, shape (m, K)
        The first estimate.
    counts : tuple of numpy.ndarray
        :func:`allele_counts` of ``dosage``.
    threshold : float
        Smallest privacy kept.
    min_count, max_frequency
        As for :func:`rare_allele_snps`: the sample minor allele's count and
        frequency bounds.

    Returns
    -------
    snps : numpy.ndarray of int
    flip : numpy.ndarray of bool
        True where the other allele is counted.
    """
    P = least_squares_p(dosage, Q)

    def privacy(F):
        return F.max(axis=1) / np.maximum(F.sum(axis=1), np.finfo(float).tiny)

    counted_privacy, other_privacy = privacy(P), privacy(1.0 - P)
    flip = other_privacy > counted_privacy
    rare, _ = rare_allele_snps(*counts, min_count=min_count, max_frequency=max_frequency)
    keep = rare[np.maximum(counted_privacy, other_privacy)[rare] >= threshold]
    return keep, flip[keep]


def privacy_pass(dosage, K, Q, subspace, *, sample, rescore_sample, counts,
                 threshold=0.9, max_frequency=0.1, fill=None, min_snps=200,
                 n_starts=None, seed=None):
    """A spectral pass on :func:`private_allele_snps` of a previous estimate.

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (m, n)
    K : int
    Q : numpy.ndarray, shape (m, K)
        The previous estimate.
    subspace : numpy.ndarray, shape (m, K)
        :func:`column_space` of all SNPs; the whitening is anchored to it.
    sample, rescore_sample, fill, n_starts, seed
        As for :func:`spectral_pass`.
    counts : tuple of numpy.ndarray
        :func:`allele_counts` of ``dosage``.
    threshold, max_frequency : float
        As for :func:`private_allele_snps`.
    min_snps : int
        Fewer selected SNPs give no pass.

    Returns
    -------
    SpectralPass or None
        None when too few SNPs are selected or their core is not positive
        definite.
    """
    snps, flip = private_allele_snps(dosage, Q, counts, threshold=threshold,
                                     max_frequency=max_frequency)
    if len(snps) < min_snps:
        return None
    one_bin = np.zeros(len(snps), dtype=np.int64)
    _, white = next(_window_whitenings(dosage, K, snps, flip, one_bin, 1, fill,
                                       subspace))
    if isinstance(white, str):
        return None
    result = spectral_pass(dosage, K, snps, flip, sample=sample,
                           rescore_sample=rescore_sample, fill=fill, whitening=white,
                           n_starts=n_starts, seed=seed)
    result.details.update(max_frequency=float(max_frequency), whitening="anchored",
                          privacy_threshold=float(threshold))
    return result


def _bin_blocks(dosage, snps, flip, bins, b, fill):
    """Frequency blocks of the SNPs in rarity bin ``b``."""
    in_bin = bins == b
    for _, x in frequency_blocks(dosage, snps=snps[in_bin], flip=flip[in_bin],
                                 fill=fill):
        yield x


def column_space(dosage, K, snps, flip, *, fill=None):
    """Orthonormal basis of the span of Q from the second moment of ``snps``.

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (m, n)
    K : int
    snps, flip : numpy.ndarray
        SNPs to sum over and which of them count the other allele (the span
        does not depend on the allele counted, since ``Q 1 = 1``).
    fill : callable, optional
        As for :func:`admixspec.core.frequencies.frequency_blocks`.

    Returns
    -------
    U : numpy.ndarray, shape (m, K)
        Top-K eigenvectors of the diagonal-completed second moment.
    n_iter : int
        Diagonal-completion iterations.

    Raises
    ------
    InputError
        If that second moment has rank < K.
    """
    second = second_moments(frequency_blocks(dosage, snps=snps, flip=flip, fill=fill)).M2
    R, n_iter = complete_diagonal(second, K, overwrite=True)
    # K_white's columns: the top-K eigenvectors
    U, _ = np.linalg.qr(whiten(R, K).K_white)
    return U, n_iter


def _window_whitenings(dosage, K, snps, flip, bins, n_windows, fill, subspace):
    """Yield ``(SNP count, Whitening or error message)`` per nested window.

    Without ``subspace`` each window is whitened by its own diagonal-completed
    second moment, one running ``m x m`` sum grown by each bin's SNPs in turn.
    With it only ``U^T M2 U`` and ``diag(M2)`` are accumulated
    (:func:`admixspec.spectral.denoise.whiten_in_subspace`).
    """
    m = dosage.shape[0]
    total = np.zeros((K, K) if subspace is not None else (m, m))
    diagonal = np.zeros(m)
    n_window = 0
    for b in range(n_windows):
        for x in _bin_blocks(dosage, snps, flip, bins, b, fill):
            n_window += x.shape[1]
            if subspace is None:
                add_outer_products(total, x)
            else:
                z = subspace.T @ x
                total += z @ z.T
                diagonal += np.einsum("ij,ij->i", x, x)
        if n_window == 0:
            yield 0, "too few SNPs"
            continue
        try:
            if subspace is None:
                window = fill_upper(total) / n_window
                completed, _ = complete_diagonal(window, K, overwrite=True)
                yield n_window, whiten(completed, K)
            else:
                yield n_window, whiten_in_subspace(total / n_window, diagonal / n_window,
                                                   subspace)
        except ValueError as error:  # rank-deficient second moment
            yield n_window, str(error)


def spectral_scan(
    dosage,
    K,
    *,
    sample,
    rescore_sample,
    windows=DEFAULT_WINDOWS,
    min_count=2,
    min_snps=200,
    fill=None,
    counts=None,
    anchor=True,
    privacy_passes=0,
    common_windows=True,
    n_starts=None,
    seed=None,
    progress=None,
):
    """Run a spectral pass per rarity window and keep the most decomposable.

    Windows are nested sets of SNPs whose sample minor allele count is at
    least ``min_count`` and frequency at most the window's end, counting the
    minor allele. Every SNP is read once per accumulation and at most one
    ``m x m`` sum is held, however many windows are tried.

    With ``anchor`` (the default) the column space of every window's whitening
    is that of all the scanned SNPs' second moment (:func:`column_space`) and
    only the K x K core comes from the window: the rare windows alone
    estimate the space badly. Measured on benchmarks/realistic_suite.py's
    out-of-Africa mosaic (replicate 1), the top-3 eigenspace of the
    MAF <= 0.02 window's second moment was at principal-angle cosines
    (0.98, 0.18, 0.06) from the true span; over 5 replicates the spectral Q
    error fell from 0.298 to 0.076 with the anchored space
    (``benchmarks/spectral_second_pass.py``, docs/method.md).

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (m, n)
    K : int
    sample, rescore_sample : ScoringSample
        Scoring samples from :func:`snp_sample`.
    windows : sequence of float
        Increasing upper ends of the minor-allele frequency windows.
    min_count : int
    min_snps : int
        Windows with fewer SNPs are skipped.
    fill, n_starts, seed
        As for :func:`spectral_pass`.
    counts : tuple of numpy.ndarray, optional
        :func:`allele_counts` of ``dosage``, if already computed.
    anchor : bool
        Whiten every window inside the all-SNP column space (False: each
        window's own top-K eigenspace, as before issue #11).
    privacy_passes : int
        After the windows, this many :func:`privacy_pass` es, each from the
        previous pass's Q (anchored windows only); a pass replaces the best
        window when its :func:`window_score` is lower. Off by default:
        measured on the realistic suite (5 replicates), two passes lowered
        the Balding-Nichols Q error from 0.113 to 0.046 but raised the
        paper's alpha = 1 error from 0.027 to 0.029 and alpha = 10's from
        0.044 to 0.045.
    common_windows : bool
        Run the passes of windows ending above :data:`COMMON_WINDOW_END`
        (False: record them as skipped, unless no window ends below it; their
        SNPs still anchor the column space).
    progress : callable, optional
        Called with a one-line message after each window.

    Returns
    -------
    best : SpectralPass or None
        The pass with the lowest :func:`window_score` (None if no window
        produced K components).
    scan : list of dict
        Per window: its end, SNP count, eigenpairs, local maxima, score.
    """
    with serial_blas_below(dosage.shape[0], SERIAL_BLAS_BELOW):
        counted, observed = allele_counts(dosage) if counts is None else counts
        snps, flip = rare_allele_snps(counted, observed, min_count=min_count,
                                      max_frequency=max(windows))
        minor = (np.minimum(counted, observed - counted)[snps]
                 / np.maximum(observed[snps], 1))
        bins = np.searchsorted(np.asarray(windows), minor, side="left")
        subspace, completion_iterations = None, None
        if anchor and len(snps) >= min_snps:
            try:
                subspace, completion_iterations = column_space(dosage, K, snps, flip,
                                                               fill=fill)
            except ValueError as error:  # rank < K: every window would fail alike
                logger.info("no column space to anchor the windows: %s", error)
        rare_windows = sum(end <= COMMON_WINDOW_END for end in windows)  # a prefix
        # the windows passed; the rest are recorded only
        scored = len(windows) if common_windows or not rare_windows else rare_windows
        best = None
        scan = []
        whitenings = _window_whitenings(dosage, K, snps, flip, bins, scored, fill,
                                        subspace)
        windows_whitened = zip(windows[:scored], whitenings, strict=True)
        for b, (end, (n_window, white)) in enumerate(windows_whitened):
            entry = {"max_frequency": float(end), "snps": n_window}
            scan.append(entry)
            if n_window < min_snps or isinstance(white, str):
                entry["skipped"] = "too few SNPs" if n_window < min_snps else white
                continue
            inside = bins <= b
            result = spectral_pass(
                dosage, K, snps[inside], flip[inside], sample=sample,
                rescore_sample=rescore_sample, fill=fill, whitening=white,
                n_starts=n_starts, seed=seed,
            )
            result.details["max_frequency"] = float(end)
            result.details["whitening"] = ("anchored" if subspace is not None
                                           else "window")
            if subspace is not None:
                result.details["diagonal_completion_iterations"] = completion_iterations
            _record_window(entry, result, progress)
            if best is None or window_score(result) < window_score(best):
                best = result
        for b in range(scored, len(windows)):  # not whitened: no read of their SNPs
            scan.append({"max_frequency": float(windows[b]),
                         "snps": int(np.count_nonzero(bins <= b)),
                         "skipped": "common SNPs, where rare alleles are plentiful"})
        if best is not None and best.Q is not None and subspace is not None:
            best = _privacy_passes(
                dosage, K, best, subspace, privacy_passes, scan, progress, sample=sample,
                rescore_sample=rescore_sample, counts=(counted, observed), fill=fill,
                min_snps=min_snps, n_starts=n_starts, seed=seed,
            )
        return best, scan


def _privacy_passes(dosage, K, best, subspace, n_passes, scan, progress, **options):
    """Chain :func:`privacy_pass` es from ``best``; keep the lowest window score."""
    previous = best
    for number in range(1, n_passes + 1):
        result = privacy_pass(dosage, K, previous.Q, subspace, **options)
        entry = {"privacy_pass": number}
        scan.append(entry)
        if result is None or result.Q is None:
            entry["skipped"] = "too few private SNPs or no K components"
            break
        entry.update(max_frequency=result.details["max_frequency"],
                     snps=int(result.n_moment_snps))
        result.details["privacy_pass"] = number
        result.details["diagonal_completion_iterations"] = \
            best.details["diagonal_completion_iterations"]
        _record_window(entry, result, progress)
        if window_score(result) < window_score(best):
            best = result
        previous = result
    return best


def _record_window(entry, result, progress):
    """Fill a scan entry from a window's pass and report it."""
    entry.update(
        eigenpairs=int(len(result.eigen.values)),
        local_maxima=int(result.details["local_maxima"]),
        score=window_score(result),
    )
    if not np.isfinite(entry["score"]):
        entry["score"] = None  # JSON has no infinity
    if progress is not None:
        score = "none" if entry["score"] is None else f"{entry['score']:.3f}"
        name = (f"privacy pass {entry['privacy_pass']}" if "privacy_pass" in entry
                else f"window MAF <= {entry['max_frequency']:g}")
        progress(
            f"{name}: {entry['snps']} SNPs, "
            f"{entry['eigenpairs']} eigenpairs, {entry['local_maxima']} local maxima, "
            f"score {score}"
        )


@dataclass
class KHint:
    """Number of ancestral populations suggested by the spectrum of M2.

    Attributes
    ----------
    K : int
        Suggested K: the position of the largest eigenvalue ratio
        ``lambda_k / lambda_{k+1}`` for ``k >= 2`` of the second moment with its
        diagonal unbiased (``K = 1`` when no ratio exceeds ``min_ratio``).
    eigenvalues : numpy.ndarray, shape (k_max + 1,)
        Leading eigenvalues of that matrix, descending, divided by the first.
    ratios : numpy.ndarray, shape (k_max - 1,)
        ``lambda_k / max(lambda_{k+1}, noise_edge)`` for ``k = 2 .. k_max``.
    n_snps : int
        SNPs the moment was computed from.
    n_individuals : int
        Individuals it was computed from (at most ``max_individuals`` of
        :func:`k_hint`).
    noise_edge : float
        Magnitude of the most negative eigenvalue, divided by the first: the
        noise's spectrum is symmetric about zero, so no eigenvalue above this
        is told from noise by its size alone.
    """

    K: int
    eigenvalues: np.ndarray
    ratios: np.ndarray
    n_snps: int
    n_individuals: int
    noise_edge: float = 0.0

    def describe(self) -> str:
        """A log line, e.g. ``K = 3 (eigenvalue ratios k=2: 1.9, k=3: 8.1, ...)``."""
        shown = ", ".join(f"k={k}: {r:.1f}"
                          for k, r in enumerate(self.ratios[:6], start=2))
        return (
            f"K = {self.K} (largest eigenvalue gap of M2 with an unbiased diagonal over "
            f"{self.n_snps} SNPs and {self.n_individuals} individuals; "
            f"lambda_k/lambda_k+1 {shown or 'n/a'})"
        )


#: Individuals the K hint's moment is computed on at most (a random sample
#: beyond). Its cost grows as individuals squared: on a 10,000 x 50,000
#: Balding-Nichols cohort (K = 5, 2 threads) the hint took 34.7 s on the
#: default reference's 5,000 and 1.3-1.9 s on 1,000, with the same K and a
#: gap of 21 instead of 43 (docs/benchmarks.md). A population below about 1%
#: of a larger cohort may leave no gap in the sample: the hint picks a range
#: for ``--cv``, it does not test K.
HINT_INDIVIDUALS = 1_000


# the dosage is not declared: the command line's hint reads genotypes that
# were checked when read, and a declaration would scan them again; an int8
# array is taken as checked, anything else is checked here
@validate_params({"k_max": Interval(int, 1), "max_snps": Interval(int, 1),
                  "max_individuals": Interval(int, 1),
                  "min_ratio": Interval(float, 1), "seed": SEED})
def k_hint(dosage, *, individuals=None, k_max=10, max_snps=20_000,
           max_individuals=HINT_INDIVIDUALS, min_ratio=1.5, seed=None) -> KHint:
    """Suggest K from the eigenvalue gap of the second moment, its diagonal unbiased.

    With ``x = g/2`` the population second moment ``E[x x^T] = Q E[p p^T] Q^T``
    has rank K; binomial noise only inflates its diagonal, by a quarter of each
    individual's heterozygous calls per SNP (``E[g(2 - g)] / 4`` is the
    difference between ``E[(g/2)^2]`` and ``pi^2``), which is subtracted. What
    remains is the rank-K matrix plus noise of mean zero, whose eigenvalues
    spread symmetrically about zero: the most negative one measures how far
    the largest noise eigenvalues reach, and every ratio's denominator is
    floored there. The suggested K is where consecutive eigenvalues drop the
    most (the first eigenvalue, which carries the mean allele frequency, is
    left out of the ratios, so the hint is at least 2 unless no ratio exceeds
    ``min_ratio``). A hint, not a test: linkage, relatedness and fine structure
    add eigenvalues, so choose K with ``--cv`` and use this to pick the range.

    Until the hint unbiased the diagonal it completed it at rank ``k_max``
    (:func:`admixspec.spectral.denoise.complete_diagonal`), which on a few
    dozen individuals fits noise at every rank and deflates eigenvalue
    ``k_max + 1``: on Balding-Nichols cohorts of 16 and 24 individuals it
    suggested 8-10 whatever the simulated K (docs/benchmarks.md, "The K hint
    with an unbiased diagonal").

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (m, n), or array_like or Genotypes
        Copies of the counted allele, -1 for missing. An int8 array is used as
        it is (checked genotypes, as a reader returns them); other input is
        checked and converted first, as :func:`admixspec.fit_admixture` does.
    individuals : array_like of int, optional
        Rows of ``dosage`` to draw from (default all); only the drawn rows'
        sampled SNPs are copied.
    k_max : int
        Largest K considered (capped at ``m - 2``).
    max_snps : int
        SNPs drawn at random for the moment (all when fewer).
    max_individuals : int
        Individuals drawn at random for the moment (all when fewer; default
        :data:`HINT_INDIVIDUALS`).
    min_ratio : float
        Smallest eigenvalue ratio counted as a gap.
    seed : int, optional
        Seed of the SNP draw.

    Returns
    -------
    KHint

    Examples
    --------
    >>> from admixspec import simulate_balding_nichols
    >>> sim = simulate_balding_nichols(60, 5000, 3, fst=0.2, alpha=0.3, seed=2)
    >>> k_hint(sim.genotypes.dosage, seed=0).K
    3
    """
    if not (isinstance(dosage, np.ndarray) and dosage.dtype == np.int8):
        # a float array's NaN failed the eigensolver; Genotypes had no shape
        dosage = check_dosage(dosage)
    n = dosage.shape[1]
    rows = None if individuals is None else np.asarray(individuals, dtype=np.int64)
    m = dosage.shape[0] if rows is None else len(rows)
    rng = np.random.default_rng(seed)
    snps = np.sort(rng.choice(n, size=min(n, max_snps), replace=False))
    n_used = len(snps)
    if m > max_individuals:  # drawn after the SNPs: smaller cohorts keep their hint
        drawn = np.sort(rng.choice(m, size=int(max_individuals), replace=False))
        rows, m = (drawn if rows is None else rows[drawn]), len(drawn)
    if rows is not None:
        dosage, snps = dosage[np.ix_(rows, snps)], None
    k_max = min(int(k_max), m - 2)
    if k_max < 2:  # too few individuals for a gap
        return KHint(1, np.ones(1), np.empty(0), n_used, m)
    spectrum = np.linalg.eigvalsh(unbiased_second_moment(dosage, snps=snps))[::-1]
    values = spectrum[: k_max + 1] / spectrum[0]
    noise_edge = max(-float(spectrum[-1]) / spectrum[0], 0.0)
    floor = max(noise_edge, np.finfo(float).eps)
    ratios = values[1:k_max] / np.maximum(values[2 : k_max + 1], floor)
    best = int(np.argmax(ratios))
    K = best + 2 if ratios[best] >= min_ratio else 1
    return KHint(K, values, ratios, n_used, m, noise_edge)
