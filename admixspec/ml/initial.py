"""Starting points for the maximum-likelihood fit.

* :func:`svd_init` — deterministic-given-seed start from a truncated SVD of the
  centred genotypes followed by alternating least squares on that low-rank
  approximation, with Q kept on the simplex and P in the frequency box (the
  idea of fastmixture's initialisation; our own implementation). The SVD is a
  randomized range finder streamed over SNP blocks: O(m n K) work per pass,
  no (m x n) float array.
* :func:`random_init` — the honest baseline: ``Q ~ Dirichlet(1)``,
  ``P ~ Uniform(0, 1)``.
"""

from __future__ import annotations

import numpy as np

from ..core.frequencies import allele_frequencies
from ..core.parameters import P_MAX, P_MIN, clip_proportions, simplex_projection

__all__ = ["random_init", "svd_init", "svd_starts"]

_CHUNK = 4096


def _centred_block(G, f, j0, scale=None):
    """float32 block of G/2 - f with missing entries set to 0 (the mean).

    With ``scale`` (n_snps,), column j is multiplied by ``scale[j]``.
    """
    block = G[:, j0 : j0 + _CHUNK]
    X = block.astype(np.float32)
    X *= 0.5
    X -= f[j0 : j0 + _CHUNK].astype(np.float32)
    X[block < 0] = 0.0
    if scale is not None:
        X *= scale[j0 : j0 + _CHUNK].astype(np.float32)
    return X


def _randomized_svd(G, f, rank, *, n_power, rng, scale=None):
    """Top singular triplets of X = (G/2 - f) diag(scale) (streamed over SNPs)."""
    m, n = G.shape
    width = min(rank + 10, m, n)
    Y = np.zeros((m, width), dtype=np.float32)
    for j0 in range(0, n, _CHUNK):
        X = _centred_block(G, f, j0, scale)
        Omega = rng.standard_normal((X.shape[1], width)).astype(np.float32)
        Y += X @ Omega
    Qy, _ = np.linalg.qr(Y.astype(np.float64))
    for _ in range(n_power):
        Z = np.empty((n, Qy.shape[1]), dtype=np.float32)
        Y = np.zeros((m, Qy.shape[1]), dtype=np.float64)
        Qy32 = Qy.astype(np.float32)
        for j0 in range(0, n, _CHUNK):
            X = _centred_block(G, f, j0, scale)
            Zb = X.T @ Qy32
            Z[j0 : j0 + X.shape[1]] = Zb
            Y += X @ Zb
        Qy, _ = np.linalg.qr(Y)
    Z = np.empty((n, Qy.shape[1]))
    Qy32 = Qy.astype(np.float32)
    for j0 in range(0, n, _CHUNK):
        X = _centred_block(G, f, j0, scale)
        Z[j0 : j0 + X.shape[1]] = X.T @ Qy32
    # X ~ Qy Z^T;  Z = Uz S Vz^T  =>  X ~ (Qy Vz) S Uz^T
    Uz, S, Vzt = np.linalg.svd(Z, full_matrices=False)
    U = Qy @ Vzt.T
    # all the sketch's singular values: those beyond ``rank`` tell whether
    # the top ``rank`` directions stand out (see svd_starts)
    return U[:, :rank], S, Uz[:, :rank]


def svd_init(G: np.ndarray, K: int, *, seed=None, n_power: int = 4,
             als_iter: int = 500, als_tol: float = 1e-5):
    """Start (Q, P) from a truncated SVD plus constrained alternating least squares.

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)
        Dosage, -1 for missing.
    K : int
        Number of components.
    seed : int, optional
        Seed of the randomized SVD and of the ALS starting P.
    n_power : int
        Power iterations of the randomized range finder.
    als_iter : int
        Maximum ALS iterations (each costs O((m + n) K^2)).
    als_tol : float
        Stop ALS when the RMS change of Q falls below this.

    Returns
    -------
    Q : numpy.ndarray, float64, shape (n_individuals, K)
    P : numpy.ndarray, float64, shape (n_snps, K)

    Examples
    --------
    >>> from admixspec import simulate_balding_nichols, q_error
    >>> sim = simulate_balding_nichols(60, 2000, 3, fst=0.2, alpha=0.3, seed=2)
    >>> Q, P = svd_init(sim.genotypes.dosage, 3, seed=0)
    >>> q_error(sim.Q, Q) < 0.1
    True
    """
    return _svd_als(G, K, seed, n_power=n_power, als_iter=als_iter, als_tol=als_tol)[0]


def svd_starts(G: np.ndarray, K: int, n_starts: int, *, seed=None, **options):
    """Several SVD + ALS starts: :func:`svd_init` for ``seed`` and spawned seeds.

    What differs between seeds is the randomized SVD's subspace beyond the
    data's clear structure: on HapMap3 the centred genotypes' singular values
    are 233, 76, then a flat bulk (42.1, 41.8, 41.7, 41.4, ...), so for K >= 4
    the start's last directions are an arbitrary mix of bulk directions (ALS
    from different random P on one SVD converges to the same start). Those
    directions decide which local maximum of the likelihood the fit climbs to
    (which small family of close relatives gets a component of its own), so
    distinct SVDs are the candidates :func:`admixspec.ml.refine.fit_ml`
    screens. When the data determine the directions -- the (K-1)-th singular
    value is at least ``SVD_GAP`` times the K-th, as for HapMap3 at K <= 3
    and for simulated Balding-Nichols data, where other seeds' starts
    measured within 5e-4 of the first -- only the first start is returned,
    and no further SVD is computed. ``options`` as :func:`svd_init`.

    Returns
    -------
    list of (Q, P)
        ``n_starts`` pairs (or one, see above), Q (n_individuals, K) and P
        (n_snps, K) float64; the first is :func:`svd_init`'s for ``seed``.
    """
    first, S = _svd_als(G, K, seed, **options)
    if n_starts <= 1 or K == 1 or S[K - 2] >= SVD_GAP * S[K - 1]:
        return [first]
    others = np.random.SeedSequence(seed).spawn(n_starts - 1)
    return [first] + [_svd_als(G, K, np.random.default_rng(s), **options)[0]
                      for s in others]


#: Ratio of the (K-1)-th to the K-th singular value above which the SVD
#: start's directions are taken as determined by the data (see svd_starts).
#: HapMap3: 3.06 at K = 2, 1.81 at K = 3 (starts coincide), 1.008 at K = 4.
SVD_GAP = 1.2


def _svd_als(G, K, seed, *, n_power: int = 4, als_iter: int = 500,
             als_tol: float = 1e-5):
    """:func:`svd_init`'s start for one seed or Generator, with the singular values."""
    rng = np.random.default_rng(seed)
    m, n = G.shape
    f = allele_frequencies(G)
    if K == 1:
        return (np.ones((m, 1)), np.clip(f, P_MIN, P_MAX)[:, None].copy()), np.ones(1)
    U, S, V = _randomized_svd(G, f, K - 1, n_power=n_power, rng=rng)
    Us = U * S[: K - 1]  # (m, K-1): X ~ 1 f^T + Us V^T
    P = rng.uniform(P_MIN, P_MAX, size=(n, K))
    return _als(Us, V, f, P, als_iter, als_tol), S


def _als(Us, V, f, P, als_iter, als_tol):
    """Constrained ALS of ``1 f^T + Us V^T ~ Q P^T`` from ``P``: Q simplex, P box."""
    m, K = Us.shape[0], P.shape[1]

    def q_step(P):
        PtP = P.T @ P
        rhs = np.outer(np.ones(m), f @ P) + Us @ (V.T @ P)
        try:
            Q = np.linalg.solve(PtP, rhs.T).T
        except np.linalg.LinAlgError:
            # a component that ALS emptied leaves P columns equal (all at the
            # bound): the least-norm solution splits the rows between them
            Q = np.linalg.lstsq(PtP, rhs.T, rcond=None)[0].T
        return simplex_projection(Q)

    Q = q_step(P)
    for _ in range(als_iter):
        Q_old = Q
        QtQ = Q.T @ Q + 1e-10 * np.eye(K)
        rhs = np.outer(f, Q.sum(axis=0)) + V @ (Us.T @ Q)
        P = np.clip(np.linalg.solve(QtQ, rhs.T).T, P_MIN, P_MAX)
        Q = q_step(P)
        if np.sqrt(np.mean((Q - Q_old) ** 2)) < als_tol:
            break
    return clip_proportions(Q), P


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
