"""ADMIXTURE's binomial likelihood and its EM map, as fused numba kernels.

The model (Alexander, Novembre & Lange 2009): individual ``i`` carries
``g_ij ~ Binomial(2, f_ij)`` copies of the counted allele at SNP ``j``, with
``f_ij = sum_k Q[i, k] P[j, k]``. The log-likelihood is

.. math:: L(Q, P) = \\sum_{ij\\,\\text{observed}} g_{ij} \\log f_{ij}
          + (2 - g_{ij}) \\log(1 - f_{ij}),

without the binomial coefficients, exactly the value ADMIXTURE prints as
``Loglikelihood:`` (checked on the HapMap3 tutorial data to 1e-8 relative).
Missing genotypes (``-1``) are left out.

All kernels stream over blocks of contiguous SNPs (default 64 SNPs, so that a
block of one individual is one cache line of the int8 dosage matrix), never
form an (individuals x SNPs) float array, and run the blocks in parallel with
``numba.prange``; each thread accumulates its own per-individual sums, which
are added at the end. Parameters are kept inside ADMIXTURE's box:
``P`` in ``[1e-5, 1 - 1e-5]``, ``Q`` rows on the simplex with entries
``>= 1e-5``.
"""

from __future__ import annotations

import contextvars
import logging

import numba
import numpy as np

from ..core.chunks import BLOCK_SIZE, as_chunks, map_sum
from ..core.parameters import check_params, clip_proportions
from ..core.threads import thread_limit
from ..core.validation import Dosage, Frequencies, Interval, validate_params
from ._kernels.likelihood import deviance_kernel, em_kernel, loglik_kernel

__all__ = [
    "Engine",
    "em_step",
    "engine_factory",
    "join_rows",
    "loglikelihood",
    "make_engine",
    "prediction_deviance",
    "snp_blocks",
]

logger = logging.getLogger("admixspec")


def snp_blocks(n_snps: int, block_size: int = BLOCK_SIZE):
    """Starts and lengths (int64 arrays) of contiguous SNP blocks."""
    starts = np.arange(0, n_snps, block_size, dtype=np.int64)
    lengths = np.minimum(block_size, n_snps - starts).astype(np.int64)
    return starts, lengths


class Engine:
    """EM and log-likelihood passes over one dosage matrix, chunk by chunk of SNPs.

    Holds the genotype source, its SNP blocks and per-individual counts so
    that iterative fits (refinement, projection, cross-validation) pay no
    set-up per pass. Every pass runs through the source's
    :meth:`~admixspec.core.chunks.GenotypeChunks.map`: the kernels run on each
    chunk of SNPs with that chunk's P rows, and the per-individual statistics
    are summed over chunks. Call inside
    :func:`admixspec.core.threads.thread_limit` to control the thread count.

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps), or GenotypeChunks
        Checked dosage (see :func:`admixspec.core.genotypes.check_dosage`),
        held in memory as one chunk, or a chunked source (e.g. streamed from
        a ``.bed`` file).
    K : int
        Number of components.
    """

    def __init__(self, G, K: int):
        self.chunks = as_chunks(G)
        self.m, self.n = self.chunks.n_individuals, self.chunks.n_snps
        self.K = int(K)
        self.starts, self.lengths = snp_blocks(self.n)
        self.n_blocks = len(self.starts)
        self.passes = 0
        self.restarts = 0
        self.n_obs = self.chunks.n_observed

    def loglik(self, Q, P) -> float:
        """Log-likelihood of (Q, P) over all SNPs."""
        self.passes += 1
        return float(sum(self.chunks.map(_chunk_loglik, P, Q)))

    def em(self, Q, P, *, blocks=None, update_p=True, update_q=True, want_ll=True,
           Q_fixed_rows=None):
        """One EM step from (Q, P), on all SNPs or on the given block indices.

        Returns ``(Q_new, P_new, loglik)``: P rows outside ``blocks`` are copied
        unchanged; Q is updated from the swept SNPs only; ``loglik`` is the
        log-likelihood of the *input* (Q, P) on the swept SNPs (or NaN when
        ``want_ll`` is false).
        """
        if blocks is None:
            per_snp = P
        else:  # the swept SNPs travel with P as a last column of flags
            swept = np.zeros(self.n_blocks)
            swept[blocks] = 1.0
            per_snp = np.hstack([P, np.repeat(swept, self.lengths)[:, None]])
        rows, (acc, swept_obs, ll) = map_sum(self.chunks, _chunk_em, per_snp, Q,
                                             update_p, want_ll, blocks is not None)
        P_new = join_rows(rows, P) if update_p else P
        self.passes += 1 if blocks is None else len(blocks) / self.n_blocks
        if update_q:
            obs = swept_obs if blocks is not None else self.n_obs
            with np.errstate(invalid="ignore", divide="ignore"):
                Q_new = Q * acc / (2.0 * obs[:, None])
            empty = obs == 0
            if np.any(empty):
                Q_new[empty] = Q[empty]
            clip_proportions(Q_new)
            if Q_fixed_rows is not None:
                rows, values = Q_fixed_rows
                Q_new[rows] = values
        else:
            Q_new = Q
        return Q_new, P_new, (float(ll) if want_ll else float("nan"))


#: How the fits make their likelihood engines: None for the CPU :class:`Engine`,
#: or a callable ``(G, K) -> engine`` set by a back end for the fits inside its
#: block (:func:`admixspec.backends.use_device` sets the GPU's). Lower layers
#: read it here, so they never import the back ends.
engine_factory: contextvars.ContextVar = contextvars.ContextVar(
    "admixspec_engine_factory", default=None)


def make_engine(G, K: int):
    """The likelihood engine of ``G``: the CPU's, or what :data:`engine_factory` makes.

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps), or GenotypeChunks
        Checked dosage, or a chunk source.
    K : int

    Returns
    -------
    Engine
        Or an engine of a back end with the same methods.
    """
    factory = engine_factory.get()
    if factory is not None:
        return factory(G, K)
    logger.info("likelihood engine: CPU")
    return Engine(G, K)


def join_rows(parts, P):
    """The chunks' new P rows as one array (the one chunk's own array if only one)."""
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else P.copy()


def _chunk_loglik(G, P, Q):
    """Log-likelihood of (Q, P) on a chunk of SNPs (:meth:`GenotypeChunks.map` task)."""
    starts, lengths = snp_blocks(G.shape[1])
    return loglik_kernel(G, P, Q, starts, lengths, numba.get_num_threads()).sum()


def _swept_blocks(swept):
    """Starts and lengths of kernel blocks covering the flagged SNPs of a chunk.

    Runs of flagged SNPs are cut into blocks of at most ``BLOCK_SIZE`` from
    their start, which gives the engine's own blocks when the chunk starts on
    a block boundary.
    """
    edges = np.diff(np.concatenate([[0], swept.astype(np.int8), [0]]))
    run_starts = np.flatnonzero(edges == 1)
    run_stops = np.flatnonzero(edges == -1)
    pieces = [snp_blocks(stop - start)
              for start, stop in zip(run_starts, run_stops, strict=True)]
    if not pieces:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.concatenate([s + start for (s, _), start
                             in zip(pieces, run_starts, strict=True)])
    lengths = np.concatenate([length for _, length in pieces])
    return starts.astype(np.int64), lengths.astype(np.int64)


def _chunk_em(G, rows, Q, update_p, want_ll, flagged):
    """One EM sweep of one chunk of SNPs (a :meth:`GenotypeChunks.map` task).

    ``rows`` is the chunk's P, with a last column flagging the SNPs to sweep
    when ``flagged``. Returns the chunk's new P rows (or None) and, to be
    added over chunks (:func:`~admixspec.core.chunks.map_sum`), the Q
    numerators (m, K), observed counts (m,) and log-likelihood.
    """
    if flagged:
        P = np.ascontiguousarray(rows[:, :-1])
        starts, lengths = _swept_blocks(rows[:, -1] > 0.5)
    else:
        P = rows
        starts, lengths = snp_blocks(G.shape[1])
    T = numba.get_num_threads()
    m, K = Q.shape
    Q_acc, n_obs = np.zeros((T, m, K)), np.zeros((T, m))
    P_new = P.copy() if update_p else P
    ll = em_kernel(G, P, Q, starts, lengths, P_new, Q_acc, n_obs, update_p,
                   want_ll).sum()
    return (P_new if update_p else None), (Q_acc.sum(axis=0), n_obs.sum(axis=0), ll)


# --------------------------------------------------------------------------
# public functions
# --------------------------------------------------------------------------
_CHECKS = {"dosage": Dosage(), "P": Frequencies(),
           "threads": Interval(int, 1, allow_none=True)}


@validate_params(_CHECKS)
def loglikelihood(dosage, Q, P, *, threads=None) -> float:
    """ADMIXTURE's binomial log-likelihood of genotypes under (Q, P).

    Parameters
    ----------
    dosage : array_like or Genotypes, int8, shape (n_individuals, n_snps)
        Copies of the counted allele; -1 marks a missing genotype (skipped).
    Q : array_like, float, shape (n_individuals, K)
        Ancestry proportions (rows are moved onto the simplex, entries
        ``>= Q_MIN``, as ADMIXTURE bounds them).
    P : array_like, float, shape (n_snps, K)
        Ancestral frequencies of the counted allele, in [0, 1] (clipped to
        ``[P_MIN, P_MAX]``; a value outside [0, 1] raises
        :class:`~admixspec.UsageError`).
    threads : int, optional
        Number of threads for the parallel kernel.

    Returns
    -------
    float
        ``sum g log f + (2 - g) log(1 - f)`` over observed entries,
        ``f = Q P^T``; no binomial coefficient, as in ADMIXTURE's logs.

    Examples
    --------
    >>> import numpy as np
    >>> G = np.array([[0, 2], [1, -1]], dtype=np.int8)
    >>> Q = np.ones((2, 1)); P = np.full((2, 1), 0.5)
    >>> bool(abs(loglikelihood(G, Q, P) - 6 * np.log(0.5)) < 1e-9)
    True
    """
    G = dosage
    Q, P = check_params(Q, P, *G.shape)
    with thread_limit(threads):
        return Engine(G, Q.shape[1]).loglik(Q, P)


@validate_params(_CHECKS)
def em_step(dosage, Q, P, *, threads=None):
    """One plain EM step of ADMIXTURE's model (both Q and P updated).

    Parameters
    ----------
    dosage : array_like or Genotypes, int8, shape (n_individuals, n_snps)
    Q : array_like, float, shape (n_individuals, K)
    P : array_like, float, shape (n_snps, K)
    threads : int, optional

    Returns
    -------
    Q_new : numpy.ndarray, float64, shape (n_individuals, K)
    P_new : numpy.ndarray, float64, shape (n_snps, K)
    loglik : float
        Log-likelihood of the *input* (Q, P); the EM step never lowers it.

    Examples
    --------
    >>> from admixspec import simulate_balding_nichols
    >>> sim = simulate_balding_nichols(30, 200, 2, seed=0)
    >>> Q1, P1, ll0 = em_step(sim.genotypes.dosage, sim.Q, sim.P)
    >>> loglikelihood(sim.genotypes.dosage, Q1, P1) >= ll0
    True
    """
    G = dosage
    Q, P = check_params(Q, P, *G.shape)
    with thread_limit(threads):
        return Engine(G, Q.shape[1]).em(Q, P)


@validate_params(_CHECKS)
def prediction_deviance(dosage, Q, P, *, threads=None) -> float:
    """Mean binomial deviance of observed genotypes under (Q, P).

    ``d(g, mu) = g log(g / mu) + (2 - g) log((2 - g) / (2 - mu))`` with
    ``mu = 2 Q P^T`` and ``0 log 0 = 0``, averaged over observed entries: the
    quantity ADMIXTURE reports as ``CV error`` when taken over held-out entries
    (see :mod:`admixspec.ml.crossval`).

    Parameters
    ----------
    dosage : array_like or Genotypes, int8, shape (n_individuals, n_snps)
    Q : array_like, float, shape (n_individuals, K)
    P : array_like, float, shape (n_snps, K)
    threads : int, optional

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> G = np.array([[0, 2]], dtype=np.int8)
    >>> round(prediction_deviance(G, np.ones((1, 1)), np.full((2, 1), 0.5)), 6)
    1.386294
    """
    G = dosage
    Q, P = check_params(Q, P, *G.shape)
    with thread_limit(threads):
        total, count = deviance_kernel(G, P, Q, -1, 1, 0)
    return float(total / count) if count else float("nan")
