"""The likelihood engine on a CUDA GPU: the CPU engine's interface, the GPU's kernels.

:class:`CudaEngine` answers the same calls as :class:`admixspec.ml.likelihood.Engine`
(``loglik``, ``em``, the ``passes``/``restarts`` counters, the SNP blocks), and
:class:`CudaBlockNewton` those of :class:`admixspec.ml.newton.BlockNewton`, so
the accelerators and ADMIXTURE's stopping rule of :mod:`admixspec.ml.refine`
drive either unchanged. The genotypes stay on the device (2 bits each, both
orientations, see :mod:`admixspec.backends.gpu.kernels`); Q and P travel to it and
back once per pass, as the float64 arrays the accelerators compute with
(for 500,000 SNPs and K = 5, 20 MB each way).

Each kernel's threads sweep chunks of rows sized for about a million threads
in all (:data:`TARGET_THREADS`), and each chunk's sums are written apart and
added in chunk order (:func:`admixspec.backends.gpu.kernels.sum_chunks`): the partial
sums take about ``TARGET_THREADS`` x (2 K + K(K+1)/2 + 1) float64 (210 MB at
K = 5), and a fit gives the same bits run after run.
"""

from __future__ import annotations

import numpy as np

from ...core.parameters import clip_proportions
from ...ml._kernels.newton import triangle_pairs
from ...ml.likelihood import Engine
from ...ml.newton import BlockNewton
from .kernels import cuda, kernels, launch, sum_chunks, zeros
from .transfer import packed_bytes, to_device

__all__ = ["CudaBlockNewton", "CudaEngine"]

#: Threads a per-SNP or per-individual kernel aims at (an H100 holds 270,000 at once).
TARGET_THREADS = 1 << 20
# Fewest rows a chunk holds by default.
_MIN_CHUNK = 32
# The most blocks a grid's y axis takes (CUDA's limit).
_MAX_GRID_Y = 65_535


def _chunks(total: int, size: int) -> int:
    """Chunks of ``size`` rows that cover ``total`` rows (at least one)."""
    return max(1, -(-total // size))


def _chunk_length(threads: int, total: int, size: int | None = None) -> int:
    """Rows of ``total`` one thread sweeps, ``threads`` threads to a chunk.

    ``size`` if given, else enough chunks for ``TARGET_THREADS`` threads in all
    (but none under ``_MIN_CHUNK`` rows); never more than ``_MAX_GRID_Y`` chunks.
    """
    if size is None:
        n_chunks = min(-(-TARGET_THREADS // max(threads, 1)), -(-total // _MIN_CHUNK))
        size = -(-total // max(n_chunks, 1))
    return max(int(size), -(-total // _MAX_GRID_Y), 1)


class CudaBlockNewton(BlockNewton):
    """ADMIXTURE's block relaxation on the device (as ``ml.newton.BlockNewton``).

    One map: the P statistics of every SNP (one sweep), a box-constrained
    Newton step per SNP row, a check of each row's log-likelihood with the
    EM update where the step lowered it (one sweep), then every individual's
    Q statistics with the new P (one sweep over the transposed genotypes)
    and a simplex-constrained Newton step per Q row (on the host: m small
    solves). Counted as one pass, as on the CPU, so that the two engines
    report the same ``n_passes`` for the same fit; ``sweeps`` counts the
    sweeps, each of which reads the genotypes on the device.

    Parameters
    ----------
    engine : CudaEngine
        Holds the genotypes on the device.
    frozen_rows : numpy.ndarray, int64, optional
        Rows of Q held fixed (supervised fits).
    """

    def step(self, Q, P, *, update_p=True):
        """Apply the map once: ``(Q_new, P_new, loglik of the input)``."""
        eng = self.engine
        d_Q, d_P = cuda.to_device(Q), cuda.to_device(P)
        if update_p:
            d_P_new, ll = self._p_step(d_Q, d_P)
            P_new = d_P_new.copy_to_host()
        else:
            d_P_new, P_new = d_P, P
            ll = float(eng.snp_logliks(d_Q, d_P).copy_to_host().sum())
            self.sweeps += 1
        n_chunks = _chunks(eng.n, eng.cols)
        stats = zeros((n_chunks, eng.m, eng.K + len(self.tri_r)))
        launch(eng.kernels.q_stats, eng.m, eng.d_GT, d_Q, d_P_new, *eng.d_tri, eng.cols,
               stats, n_chunks=n_chunks)
        stats = sum_chunks(stats)
        self.sweeps += 1
        eng.passes += 1
        return self.q_step(Q, stats.copy_to_host()), P_new, ll

    def _p_step(self, d_Q, d_P):
        """The P half of the map on the device: new P and the input's log-likelihood."""
        eng = self.engine
        n, K = eng.n, eng.K
        c = _chunks(eng.m, eng.rows)
        gP, A, HP = zeros((c, n, K)), zeros((c, n, K)), zeros((c, n, len(self.tri_r)))
        ll_old = zeros((c, n))
        launch(eng.kernels.p_stats, n, eng.d_G, d_Q, d_P, *eng.d_tri, eng.rows, gP, HP,
               A, ll_old, n_chunks=c)
        gP, A, HP, ll_old = (sum_chunks(x) for x in (gP, A, HP, ll_old))
        d_P_new = cuda.device_array((n, K))
        launch(eng.kernels.p_newton, n, d_P, gP, HP, *eng.d_tri, d_P_new)
        ll_new = eng.snp_logliks(d_Q, d_P_new)
        n_bad = zeros(1, dtype=np.int64)
        launch(eng.kernels.p_fallback, n, d_P, gP, A, ll_old, ll_new, d_P_new, n_bad)
        self.em_rows += int(n_bad.copy_to_host()[0])
        self.sweeps += 2
        return d_P_new, float(ll_old.copy_to_host().sum())


class CudaEngine(Engine):
    """EM and log-likelihood passes with the genotypes held on a CUDA device.

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps), or GenotypeChunks
        Checked dosage (see :func:`admixspec.ml.likelihood.check_dosage`), or
        genotypes streamed from disk (:class:`admixspec.io.streamed.StreamedChunks`;
        a ``.bed`` travels in its own bytes), copied to the device once,
        one chunk of SNPs at a time (:func:`admixspec.backends.gpu.transfer.to_device`).
    K : int
        Number of components.
    rows_per_thread, cols_per_thread : int, optional
        Chunk lengths of the per-SNP and per-individual kernels (default: sized
        by :data:`TARGET_THREADS`; tests give small ones to cover the chunked
        sums on tiny data).

    Notes
    -----
    Device memory: half a byte per genotype (2 bits in each orientation) plus
    O((individuals + SNPs) K^2) float64 statistics (:meth:`device_bytes`).
    Host memory: one chunk of SNPs while the genotypes are copied, then
    O((individuals + SNPs) K) per pass (Q, P and their statistics).
    """

    #: The block-relaxation map for this engine (see :mod:`admixspec.ml.refine`).
    newton_map = CudaBlockNewton

    def __init__(self, G: np.ndarray, K: int, *, rows_per_thread: int | None = None,
                 cols_per_thread: int | None = None):
        super().__init__(G, K)
        self.rows = _chunk_length(self.n, self.m, rows_per_thread)
        self.cols = _chunk_length(self.m, self.n, cols_per_thread)
        self.kernels = kernels(self.K)
        self.d_G, self.d_GT = to_device(G, self.chunks)
        self.d_all = cuda.to_device(np.arange(self.n, dtype=np.int64))
        tri_r, tri_c = triangle_pairs(self.K)
        self.d_tri = (cuda.to_device(tri_r), cuda.to_device(tri_c))

    @staticmethod
    def device_bytes(n_individuals: int, n_snps: int, K: int) -> int:
        """Device memory an engine for these genotypes takes, about (bytes).

        The packed genotypes (:func:`admixspec.backends.gpu.transfer.packed_bytes`),
        the largest pass's chunked sums (block relaxation's P statistics:
        ``2 K + K (K + 1) / 2 + 1`` float64 per SNP and chunk of individuals,
        at least :data:`TARGET_THREADS` threads' worth), and Q and P with
        their updates (four copies each).
        """
        per_thread = 2 * K + K * (K + 1) // 2 + 1
        sums = 8 * per_thread * max(n_snps, n_individuals, TARGET_THREADS)
        parameters = 32 * K * (n_individuals + n_snps)
        return packed_bytes(n_individuals, n_snps) + sums + parameters

    def _columns(self, blocks):
        """Device array of the SNP indices in the given blocks (all SNPs for None)."""
        if blocks is None:
            return self.d_all
        cols = np.concatenate([np.arange(s, s + n) for s, n in
                               zip(self.starts[blocks], self.lengths[blocks],
                                   strict=True)])
        return cuda.to_device(cols.astype(np.int64))

    def snp_logliks(self, d_Q, d_P):
        """Device array (n_snps,) of each SNP's log-likelihood at device (Q, P)."""
        c = _chunks(self.m, self.rows)
        ll = zeros((c, self.n))
        launch(self.kernels.snp_loglik, self.n, self.d_G, d_Q, d_P, self.rows, ll,
               n_chunks=c)
        return sum_chunks(ll)

    def loglik(self, Q, P) -> float:
        """Log-likelihood of (Q, P) over all SNPs."""
        self.passes += 1
        ll = self.snp_logliks(cuda.to_device(Q), cuda.to_device(P))
        return float(ll.copy_to_host().sum())

    def em(self, Q, P, *, blocks=None, update_p=True, update_q=True, want_ll=True,
           Q_fixed_rows=None):
        """One EM step from (Q, P), on all SNPs or on the given block indices.

        As :meth:`admixspec.ml.likelihood.Engine.em`: returns ``(Q_new, P_new,
        loglik)`` with ``loglik`` the log-likelihood of the input on the swept
        SNPs (NaN unless ``want_ll``).
        """
        d_cols = self._columns(blocks)
        n_cols = d_cols.shape[0]
        d_Q, d_P = cuda.to_device(Q), cuda.to_device(P)
        ll = float("nan")
        P_new = P
        if update_p or want_ll:
            c = _chunks(self.m, self.rows)
            A, B = zeros((c, self.n, self.K)), zeros((c, self.n, self.K))
            ll_snp = zeros((c, self.n))
            launch(self.kernels.snp_em, n_cols, self.d_G, d_Q, d_P, d_cols, self.rows, A,
                   B, ll_snp, want_ll, n_chunks=c)
            A, B, ll_snp = sum_chunks(A), sum_chunks(B), sum_chunks(ll_snp)
            if want_ll:
                ll = float(ll_snp.copy_to_host().sum())
            if update_p:
                # rows outside cols keep P: copied on the device, not sent again
                d_P_new = cuda.device_array_like(d_P)
                d_P_new.copy_to_device(d_P)
                launch(self.kernels.p_em, n_cols, d_P, A, B, d_cols, d_P_new)
                P_new = d_P_new.copy_to_host()
        self.passes += 1 if blocks is None else len(blocks) / self.n_blocks
        Q_new = Q
        if update_q:
            Q_new = self._q_update(Q, d_Q, d_P, d_cols, blocks is not None, Q_fixed_rows)
        return Q_new, P_new, ll

    def _q_update(self, Q, d_Q, d_P, d_cols, partial, Q_fixed_rows):
        """The EM update of Q from the swept SNPs (the CPU engine's formula)."""
        c = _chunks(d_cols.shape[0], self.cols)
        acc, obs = zeros((c, self.m, self.K)), zeros((c, self.m))
        launch(self.kernels.ind_em, self.m, self.d_GT, d_Q, d_P, d_cols, self.cols, acc,
               obs, n_chunks=c)
        acc, obs = sum_chunks(acc), sum_chunks(obs)
        acc = acc.copy_to_host()
        obs = obs.copy_to_host() if partial else self.n_obs
        with np.errstate(invalid="ignore", divide="ignore"):
            Q_new = Q * acc / (2.0 * obs[:, None])
        empty = obs == 0
        Q_new[empty] = Q[empty]
        clip_proportions(Q_new)
        if Q_fixed_rows is not None:
            rows, values = Q_fixed_rows
            Q_new[rows] = values
        return Q_new
