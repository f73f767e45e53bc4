"""Starting points for the maximum-likelihood fit, and the SVD they are built on.

* :func:`_randomized_svd` — a randomized range finder of the centred genotypes
  streamed over SNP blocks: O(m n r) work per pass, no (m x n) float array
  (the start of :mod:`admixspec.ml.start` runs its ALS in that subspace).
* :func:`random_init` — the honest baseline: ``Q ~ Dirichlet(1)``,
  ``P ~ Uniform(0, 1)``.
"""

from __future__ import annotations

import numpy as np

from ..core.parameters import P_MAX, P_MIN, clip_proportions
from ..core.threads import serial_blas_below
from ._kernels.centring import centre_block

__all__ = ["random_init"]

_CHUNK = 4096
#: Individuals below which the randomized SVD runs BLAS on one thread. Its
#: products are (individuals x 4,096) by (4,096 x 2K + 10) per block, between
#: calls of the parallel centring kernel; below this size BLAS's threads,
#: busy-waiting between the calls, take the cores from the kernel. Sketch
#: times at two threads, BLAS on two threads against one: HapMap3 (324
#: individuals) 0.20-0.22 against 0.12-0.15 s, 1000 Genomes (1,092) 0.42-0.46
#: against 0.31-0.38 s, 2,000 x 100,000 4.07-4.21 against 3.74-4.21 s, 10,000 x
#: 60,000 8.08-8.69 against 9.79-10.12 s (docs/benchmarks.md).
SERIAL_BLAS_BELOW = 2000
# centre_block's "no per-SNP factors"
_NO_SCALE = np.empty(0, dtype=np.float32)


def _centred_block(G, f, j0, scale=None, buffers=None):
    """float32 block of G/2 - f with missing entries set to 0 (the mean).

    With ``scale`` (n_snps,), column j is multiplied by ``scale[j]``.
    ``buffers`` (a dict by block width) keeps the blocks' arrays from one call
    to the next: the array returned is overwritten by the next call of the
    same width, and the pages of a fresh array cost as much as filling it.
    """
    block = G[:, j0 : j0 + _CHUNK]
    columns = slice(j0, j0 + block.shape[1])
    factors = _NO_SCALE if scale is None else scale[columns].astype(np.float32)
    buffers = {} if buffers is None else buffers
    X = buffers.get(block.shape[1])
    if X is None:
        X = buffers[block.shape[1]] = np.empty(block.shape, dtype=np.float32)
    centre_block(block, f[columns].astype(np.float32), factors, X)
    return X


def _randomized_svd(G, f, rank, *, n_power, rng, scale=None):
    """Top singular triplets of X = (G/2 - f) diag(scale) (streamed over SNPs)."""
    with serial_blas_below(G.shape[0], SERIAL_BLAS_BELOW):
        return _range_svd(G, f, rank, n_power=n_power, rng=rng, scale=scale)


def _range_svd(G, f, rank, *, n_power, rng, scale=None):
    """:func:`_randomized_svd` under the BLAS threads it chose."""
    m, n = G.shape
    width = min(rank + 10, m, n)
    buffers: dict = {}  # each block is used up before the next is made
    Y = np.zeros((m, width), dtype=np.float32)
    for j0 in range(0, n, _CHUNK):
        X = _centred_block(G, f, j0, scale, buffers)
        Omega = rng.standard_normal((X.shape[1], width)).astype(np.float32)
        Y += X @ Omega
    Qy, _ = np.linalg.qr(Y.astype(np.float64))
    for _ in range(n_power):
        Z = np.empty((n, Qy.shape[1]), dtype=np.float32)
        Y = np.zeros((m, Qy.shape[1]), dtype=np.float64)
        Qy32 = Qy.astype(np.float32)
        for j0 in range(0, n, _CHUNK):
            X = _centred_block(G, f, j0, scale, buffers)
            Zb = X.T @ Qy32
            Z[j0 : j0 + X.shape[1]] = Zb
            Y += X @ Zb
        Qy, _ = np.linalg.qr(Y)
    Z = np.empty((n, Qy.shape[1]))
    Qy32 = Qy.astype(np.float32)
    for j0 in range(0, n, _CHUNK):
        X = _centred_block(G, f, j0, scale, buffers)
        Z[j0 : j0 + X.shape[1]] = X.T @ Qy32
    # X ~ Qy Z^T;  Z = Uz S Vz^T  =>  X ~ (Qy Vz) S Uz^T
    Uz, S, Vzt = np.linalg.svd(Z, full_matrices=False)
    U = Qy @ Vzt.T
    # all the sketch's singular values: those beyond ``rank`` tell whether
    # the top ``rank`` directions stand out (see SVD_GAP)
    return U[:, :rank], S, Uz[:, :rank]


#: Ratio of the (K-1)-th to the K-th singular value above which the SVD
#: start's directions are taken as determined by the data (see
#: admixspec.ml.start.subspace_starts).
#: HapMap3: 3.06 at K = 2, 1.81 at K = 3 (starts coincide), 1.008 at K = 4.
SVD_GAP = 1.2


def random_init(m: int, n: int, K: int, *, seed=None):
    """Random start: ``Q ~ Dirichlet(1_K)`` rows, ``P ~ Uniform(P_MIN, P_MAX)``.

    Returns
    -------
    Q : numpy.ndarray, float64, shape (m, K)
    P : numpy.ndarray, float64, shape (n, K)
    """
    rng = np.random.default_rng(seed)
    Q = clip_proportions(rng.dirichlet(np.ones(K), size=m))
    P = rng.uniform(P_MIN, P_MAX, size=(n, K))
    return Q, P
