"""Symmetric third-order tensors and all of their real Z-eigenpairs.

A symmetric tensor ``T`` of shape ``(d, d, d)`` has an eigenpair ``(u, lam)`` when
``T(I, u, u) = lam * u`` and ``||u|| = 1`` (Qi 2005; Lim 2005). ``(u, lam)`` and
``(-u, -lam)`` are the same pair; we report ``lam >= 0``. A generic tensor has at most
``2**d - 1`` of them (Cartwright & Sturmfels 2013).

:func:`eigenpairs` computes them with the orthogonal Newton correction method (O-NCM;
Jaffe, Weiss & Nadler 2017, "Newton correction methods for computing real eigenpairs of
symmetric tensors", SIAM J. Matrix Anal. Appl.) run from many random starts at once:
every array operation acts on all active starts together, so there is no Python loop per
start.
Each O-NCM step moves ``u`` inside the tangent space of the sphere,

    u <- normalise(u + U a),   a = -H_p(u)^{-1} U^T g(u),

where ``g(u) = T(I,u,u) - T(u,u,u) u``, ``U`` is an orthonormal basis of the orthogonal
complement of ``u`` and ``H_p(u) = U^T (2 T(I,I,u) - lam I) U`` is the projected Jacobian
of ``g`` (the seed paper's eq. proj_hessian). We solve the equivalent bordered system
``[[2T(I,I,u) - lam I, u], [u^T, 0]] [s; mu] = [-g; 0]`` (``s = U a``), which avoids
building ``U``. An eigenpair is *Newton-stable* when ``H_p`` has full rank ``d - 1``;
Newton-stable pairs are attracting fixed points of O-NCM with quadratic convergence.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from ..core.exceptions import UsageError
from ._kernels.oncm import oncm

__all__ = [
    "TensorEigenpairs",
    "eigenpairs",
    "multilinear",
    "near_eigenpairs",
    "new_pairs",
    "symmetrize",
    "tensor_apply",
    "third_moment",
]

logger = logging.getLogger("admixspec")


def _check_tensor(T) -> np.ndarray:
    T = np.asarray(T, dtype=np.float64)
    if T.ndim != 3 or not (T.shape[0] == T.shape[1] == T.shape[2]):
        raise UsageError(f"expected a (d, d, d) tensor, got shape {T.shape}")
    return T


def symmetrize(T) -> np.ndarray:
    """Average a 3-tensor over the 6 permutations of its modes.

    Parameters
    ----------
    T : array_like, float, shape (d, d, d)

    Returns
    -------
    numpy.ndarray, float64, shape (d, d, d)
        The symmetric part of ``T``.

    Examples
    --------
    >>> T = np.zeros((2, 2, 2)); T[0, 0, 1] = 3.0
    >>> S = symmetrize(T)
    >>> float(S[0, 1, 0]), float(S[1, 0, 0]), float(S[0, 0, 1])
    (1.0, 1.0, 1.0)
    """
    T = _check_tensor(T)
    return (
        T
        + T.transpose(0, 2, 1)
        + T.transpose(1, 0, 2)
        + T.transpose(1, 2, 0)
        + T.transpose(2, 0, 1)
        + T.transpose(2, 1, 0)
    ) / 6.0


def multilinear(T, A, B, C) -> np.ndarray:
    """Tensor-mode product ``T(A, B, C)``.

    ``T(A, B, C)[i, j, k] = sum_{a,b,c} T[a, b, c] A[a, i] B[b, j] C[c, k]``.

    Parameters
    ----------
    T : array_like, float, shape (d, d, d)
    A, B, C : array_like, float, shapes (d, d1), (d, d2), (d, d3)
        A 1-D argument of length ``d`` is treated as one column and its mode is
        dropped from the result.

    Returns
    -------
    numpy.ndarray, float64, shape (d1, d2, d3) (modes of 1-D arguments removed)

    Examples
    --------
    >>> T = np.zeros((2, 2, 2)); T[1, 1, 1] = 2.0
    >>> float(multilinear(T, [0, 1], [0, 1], [0, 1]))
    2.0
    >>> multilinear(T, np.eye(2), [0, 1], [0, 1])
    array([0., 2.])
    """
    T = _check_tensor(T)
    mats = [np.asarray(M, dtype=np.float64) for M in (A, B, C)]
    drop = tuple(i for i, M in enumerate(mats) if M.ndim == 1)
    mats = [M[:, None] if M.ndim == 1 else M for M in mats]
    out = np.tensordot(T, mats[0], axes=([0], [0]))  # (b, c, i)
    out = np.tensordot(out, mats[1], axes=([0], [0]))  # (c, i, j)
    out = np.tensordot(out, mats[2], axes=([0], [0]))  # (i, j, k)
    return out.squeeze(axis=drop) if drop else out


def tensor_apply(T, u) -> np.ndarray:
    """``T(I, u, u)`` for one vector or for each row of a matrix.

    Parameters
    ----------
    T : array_like, float, shape (d, d, d)
    u : array_like, float, shape (d,) or (p, d)

    Returns
    -------
    numpy.ndarray, float64, shape (d,) or (p, d)
        ``out[..., i] = sum_{j,k} T[i, j, k] u[..., j] u[..., k]``.

    Examples
    --------
    >>> T = np.zeros((2, 2, 2)); T[0, 0, 0] = 1.0; T[1, 1, 1] = 2.0
    >>> tensor_apply(T, [[1.0, 0.0], [0.0, 1.0]])
    array([[1., 0.],
           [0., 2.]])
    """
    T = _check_tensor(T)
    u = np.asarray(u, dtype=np.float64)
    d = T.shape[0]
    flat = u.reshape(-1, d)
    # T(I, u, u)_i = sum_jk T[i,j,k] u_j u_k: contract k with BLAS, then j
    Tk = (flat @ T.reshape(d * d, d).T).reshape(-1, d, d)  # (p, i, j) = T(I, I, u)
    out = np.einsum("pij,pj->pi", Tk, flat)
    return out.reshape(u.shape)


def third_moment(Z, *, block_size: int = 65536) -> np.ndarray:
    """Empirical third moment ``(1/n) sum_j z_j (x) z_j (x) z_j``.

    Accumulated over row blocks with one BLAS product per block, so memory stays at
    ``O(block_size * d**2)``.

    Parameters
    ----------
    Z : array_like, float, shape (n, d)
        One sample per row.
    block_size : int, optional
        Rows per block.

    Returns
    -------
    numpy.ndarray, float64, shape (d, d, d), symmetric

    Examples
    --------
    >>> Z = np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> M = third_moment(Z)
    >>> float(M[0, 0, 0]), float(M[1, 1, 1]), float(M[0, 1, 1])
    (0.5, 4.0, 0.0)
    """
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2:
        raise UsageError(f"Z must be 2-D (n, d), got shape {Z.shape}")
    n, d = Z.shape
    if n == 0:
        raise UsageError("Z has no rows")
    acc = np.zeros((d * d, d))
    step = max(1, int(block_size))
    for start in range(0, n, step):
        Zb = Z[start : start + step]
        outer = (Zb[:, :, None] * Zb[:, None, :]).reshape(len(Zb), d * d)
        acc += outer.T @ Zb
    return acc.reshape(d, d, d) / n


@dataclass
class TensorEigenpairs:
    """All real eigenpairs found by :func:`eigenpairs`.

    Attributes
    ----------
    vectors : numpy.ndarray, float64, shape (p, d)
        Unit eigenvectors (rows), signed so that ``values >= 0``; for ``values == 0`` the
        sign puts the entry of largest magnitude positive.
    values : numpy.ndarray, float64, shape (p,)
        Eigenvalues ``T(u, u, u) >= 0``, sorted descending.
    stable : numpy.ndarray, bool, shape (p,)
        Newton-stable: the projected Jacobian ``H_p(u)`` has full rank ``d - 1``
        (smallest singular value above ``stability_tol``).
    residuals : numpy.ndarray, float64, shape (p,)
        ``||T(I, u, u) - lam u||``.
    margins : numpy.ndarray, float64, shape (p,)
        Smallest singular value of ``H_p(u)`` (the distance to Newton-instability).
    hits : numpy.ndarray, int64, shape (p,)
        How many of the random starts converged to each pair.
    n_starts : int
        Random starts used.
    n_converged : int
        Starts whose iterate reached residual below ``residual_tol``.
    n_new_second_half : int
        Distinct pairs found only by the second half of the starts: a saturation check
        (0 means the first half already found every pair the second half found).
    """

    vectors: np.ndarray
    values: np.ndarray
    stable: np.ndarray
    residuals: np.ndarray
    margins: np.ndarray
    hits: np.ndarray
    n_starts: int
    n_converged: int
    n_new_second_half: int
    params: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.values)


def _dedup(vectors, dedup_tol):
    """Cluster rows that are the same pair up to sign; returns representative index
    per row (label array) and list of representative indices."""
    p = len(vectors)
    labels = -np.ones(p, dtype=np.int64)
    thr = 1.0 - 0.5 * dedup_tol**2  # ||u -+ u'|| < dedup_tol  <=>  |u.u'| > thr
    reps = []
    remaining = np.arange(p)
    while remaining.size:
        i = remaining[0]
        dots = np.abs(vectors[remaining] @ vectors[i])
        same = dots > thr
        labels[remaining[same]] = len(reps)
        reps.append(i)
        remaining = remaining[~same]
    return labels, np.asarray(reps, dtype=np.int64)


def _group_dedup(vectors, values, dedup_tol):
    """De-duplicate within groups of near-equal eigenvalue (fast for many hits)."""
    order = np.argsort(-values, kind="stable")
    v = values[order]
    scale = max(1.0, float(np.max(np.abs(values)))) if len(values) else 1.0
    breaks = np.flatnonzero(np.diff(v) < -1e-6 * scale) + 1
    labels = np.empty(len(values), dtype=np.int64)
    reps = []
    for grp in np.split(order, breaks):
        lab, rep = _dedup(vectors[grp], dedup_tol)
        labels[grp] = lab + len(reps)
        reps.extend(grp[rep].tolist())
    return labels, np.asarray(reps, dtype=np.int64)


def _projected_margins(T, vectors, values):
    """Smallest singular value of U^T (2 T(I,I,u) - lam I) U for each row u."""
    p, d = vectors.shape
    if p == 0 or d == 1:
        return np.full(p, np.inf)
    # Householder reflection mapping e_0 to +-u: its other columns span u-perp
    w = vectors.copy()
    sgn = np.where(w[:, 0] >= 0, 1.0, -1.0)
    w[:, 0] += sgn
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    H = np.eye(d)[None] - 2.0 * w[:, :, None] * w[:, None, :]
    Ub = H[:, :, 1:]  # (p, d, d-1)
    Tu = (vectors @ T.reshape(d * d, d).T).reshape(p, d, d)
    J = 2.0 * Tu - values[:, None, None] * np.eye(d)
    Hp = np.einsum("pai,pab,pbj->pij", Ub, J, Ub)
    ev = np.linalg.eigvalsh(0.5 * (Hp + Hp.transpose(0, 2, 1)))
    return np.min(np.abs(ev), axis=1)


def _sign_normalised(T, V, scale):
    """Eigenvectors with ``lam >= 0`` (``(-u, -lam)`` is the same pair), and lam.

    A zero eigenvalue has no sign to fix; its vector's largest entry is made
    positive instead, so that the representative is deterministic.
    """
    vals = np.einsum("pi,pi->p", tensor_apply(T, V), V)
    flip = np.where(vals < 0, -1.0, 1.0)
    tiny = np.abs(vals) <= 1e-14 * scale
    if tiny.any():
        big = V[np.arange(len(V)), np.argmax(np.abs(V), axis=1)]
        flip = np.where(tiny, np.sign(big) + (big == 0), flip)
    return V * flip[:, None], vals * flip


def eigenpairs(
    T,
    *,
    n_starts: int | None = None,
    first_round: int | None = None,
    tol: float = 1e-12,
    max_iter: int = 100,
    residual_tol: float = 1e-10,
    dedup_tol: float = 1e-4,
    stability_tol: float = 1e-8,
    polish: int = 2,
    seed=None,
) -> TensorEigenpairs:
    """All (Newton-stable) real eigenpairs of a symmetric tensor by batched O-NCM.

    Parameters
    ----------
    T : array_like, float, shape (d, d, d)
        Symmetric tensor (it is symmetrised first; a non-symmetric input is accepted).
    n_starts : int, optional
        Budget of random starting points, uniform on the sphere. Default ``4000 * d``
        as in the authors' code (at least 1000).
    first_round : int, optional
        Starts of the first round; each further round doubles the starts run, and the
        rounds stop at the first whose second half finds no pair the first half
        missed, or at ``n_starts``. Default ``n_starts // 8`` (at least 2);
        ``n_starts`` runs every start in one round.
    tol : float, optional
        Stop a start when its O-NCM step is shorter than this.
    max_iter : int, optional
        Iteration limit per start.
    residual_tol : float, optional
        A start has converged when
        ``||T(I,u,u) - lam u|| <= residual_tol * max(1, ||T||_F)``; only converged starts
        are reported.
    dedup_tol : float, optional
        Two converged vectors are one pair when ``min ||u -+ u'|| < dedup_tol``
        (i.e. ``|u.u'| > 1 - dedup_tol**2 / 2``; the default 1e-4 is far tighter than the
        0.99 overlaps that distinct eigenvectors can have, and far looser than the
        ~1e-12 accuracy of converged pairs).
    stability_tol : float, optional
        Newton-stable when the smallest singular value of ``H_p(u)`` exceeds
        ``stability_tol * max(1, ||T||_F)``.
    polish : int, optional
        Extra Newton steps applied to each distinct pair after de-duplication.
    seed : None, int or numpy.random.Generator
        Seed of the random starts. All ``n_starts`` are drawn, however many run, so a
        generator passed on is left in the same state.

    Returns
    -------
    TensorEigenpairs

    Notes
    -----
    Pairs with ``lam`` in the same ``1e-6`` band are compared by vector overlap;
    the counts are reported in ``n_converged``, ``hits`` and ``n_new_second_half``
    (pairs found only by the second half of the starts run; it is 0 unless the
    budget ran out). The doubling rounds are that saturation check applied as a
    stopping rule: a pair whose basin draws a fraction ``f`` of the starts is
    missed by ``s`` starts with probability about ``exp(-f s)``, so the pairs
    an early stop leaves out have basins so small that the whole budget often
    misses them too. A non-generic tensor can
    have a continuum of eigenvectors (e.g. the zero tensor); those are not
    Newton-stable and are reported only as far as starts land on them.

    Examples
    --------
    Orthogonally decomposable tensor ``e1^3 + 2 e2^3`` has the 3 pairs ``e1`` (lam 1),
    ``e2`` (lam 2) and ``(2 e1 + e2)/sqrt(5)`` (lam 2/sqrt(5)):

    >>> T = np.zeros((2, 2, 2)); T[0, 0, 0] = 1.0; T[1, 1, 1] = 2.0
    >>> r = eigenpairs(T, seed=0)
    >>> np.round(r.values, 6).tolist()
    [2.0, 1.0, 0.894427]
    >>> bool(r.stable.all()), r.n_new_second_half
    (True, 0)
    """
    T = symmetrize(T)
    d = T.shape[0]
    if d < 1:
        raise UsageError("tensor dimension must be >= 1")
    if n_starts is None:
        n_starts = max(1000, 4000 * d)
    n_starts = int(n_starts)
    if n_starts < 2:
        raise UsageError(f"n_starts must be >= 2, got {n_starts}")
    first_round = (min(n_starts, max(2, n_starts // 8)) if first_round is None
                   else int(first_round))
    if not 2 <= first_round <= n_starts:
        raise UsageError(f"first_round must be in [2, n_starts], got {first_round}")
    rng = np.random.default_rng(seed)
    scale = max(1.0, float(np.linalg.norm(T)))

    U = rng.standard_normal((n_starts, d))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    done, end = 0, first_round
    while True:
        oncm(T, U[done:end], float(tol), int(max_iter))  # the round's rows, in place
        labels, reps, conv = _distinct(T, U[:end], scale, residual_tol, dedup_tol)
        n_new = _new_in_second_half(labels, conv, len(reps), end // 2)
        done = end
        if n_new == 0 or end == n_starts:
            break
        end = min(2 * end, n_starts)
    if len(conv) == 0:
        empty = np.zeros((0, d))
        logger.warning("O-NCM: none of %d starts converged", end)
        return TensorEigenpairs(
            empty, np.zeros(0), np.zeros(0, bool), np.zeros(0), np.zeros(0),
            np.zeros(0, np.int64), end, 0, 0,
        )
    hits = np.bincount(labels, minlength=len(reps))
    V = U[conv[reps]]
    if polish > 0:
        oncm(T, V, 0.0, int(polish))
    V, vals = _sign_normalised(T, V, scale)
    res = np.linalg.norm(tensor_apply(T, V) - vals[:, None] * V, axis=1)
    margins = _projected_margins(T, V, vals)
    order = np.argsort(-vals, kind="stable")
    out = TensorEigenpairs(
        vectors=V[order],
        values=vals[order],
        stable=(margins > stability_tol * scale)[order],
        residuals=res[order],
        margins=margins[order],
        hits=hits[order],
        n_starts=end,
        n_converged=len(conv),
        n_new_second_half=n_new,
        params=dict(tol=tol, max_iter=max_iter, residual_tol=residual_tol,
                    dedup_tol=dedup_tol, stability_tol=stability_tol,
                    budget=n_starts, first_round=first_round),
    )
    logger.debug(
        "O-NCM d=%d: %d pairs from %d of %d starts (%d converged, %d new in the "
        "second half)",
        d, len(out), end, n_starts, len(conv), n_new,
    )
    return out


def _distinct(T, U, scale, residual_tol, dedup_tol):
    """Group the converged rows of ``U`` into distinct pairs.

    Returns the group of each converged row, each group's representative (an
    index into the converged rows) and the converged rows' indices into ``U``.
    """
    g1 = tensor_apply(T, U)
    lam = np.einsum("pi,pi->p", g1, U)
    res = np.linalg.norm(g1 - lam[:, None] * U, axis=1)
    conv = np.flatnonzero(np.isfinite(res) & (res <= residual_tol * scale))
    if len(conv) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), conv
    labels, reps = _group_dedup(U[conv], np.abs(lam[conv]), dedup_tol)
    return labels, reps, conv


def _new_in_second_half(labels, conv, n_pairs, half):
    """Pairs found only by starts at index ``half`` or later."""
    first = np.zeros(n_pairs, bool)
    first[labels[conv < half]] = True
    second = np.zeros(n_pairs, bool)
    second[labels[conv >= half]] = True
    return int(np.sum(second & ~first))


def new_pairs(reference: TensorEigenpairs, other: TensorEigenpairs, *,
              dedup_tol: float = 1e-4) -> np.ndarray:
    """Pairs of ``other`` absent from ``reference`` (e.g. a rerun with another seed).

    Parameters
    ----------
    reference, other : TensorEigenpairs
    dedup_tol : float, optional
        Same meaning as in :func:`eigenpairs`.

    Returns
    -------
    numpy.ndarray, int64
        Indices into ``other`` of pairs not in ``reference``.

    Examples
    --------
    >>> T = np.zeros((2, 2, 2)); T[0, 0, 0] = 1.0; T[1, 1, 1] = 2.0
    >>> new_pairs(eigenpairs(T, seed=1), eigenpairs(T, seed=2)).size
    0
    """
    if len(other) == 0:
        return np.zeros(0, np.int64)
    if len(reference) == 0:
        return np.arange(len(other))
    thr = 1.0 - 0.5 * dedup_tol**2
    dots = np.abs(other.vectors @ reference.vectors.T)
    return np.flatnonzero(dots.max(axis=1) <= thr)


def _tangent_basis(U):
    """Orthonormal bases (p, d, d-1) of the complements of U's rows (Householder)."""
    p, d = U.shape
    w = U.copy()
    w[:, 0] += np.where(w[:, 0] >= 0, 1.0, -1.0)
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    H = np.eye(d)[None] - 2.0 * w[:, :, None] * w[:, None, :]
    return H[:, :, 1:]


def _squared_residual(T, V):
    """``||T(I, v, v) - T(v, v, v) v||^2`` per row of V, shape (p,)."""
    g1 = tensor_apply(T, V)
    lam = np.einsum("pi,pi->p", g1, V)
    return np.sum((g1 - lam[:, None] * V) ** 2, axis=1)


def _minimise_residual(T, U, *, tol, max_iter, scale):
    """Levenberg-Marquardt on the sphere: local minima of the eigen-residual.

    Parameters
    ----------
    T : numpy.ndarray, shape (d, d, d)
        Symmetric tensor.
    U : numpy.ndarray, shape (p, d)
        Unit starts; updated in place and returned.

    Returns
    -------
    numpy.ndarray, shape (p, d)
    """
    d = T.shape[0]
    T2 = T.reshape(d * d, d).T.copy()
    mu = np.full(len(U), 1e-3)
    active = np.arange(len(U))
    eye = np.eye(d - 1)
    for _ in range(max_iter):
        if active.size == 0 or d == 1:
            break
        u = U[active]
        p = len(u)
        B = _tangent_basis(u)
        Tu = (u @ T2).reshape(p, d, d)
        g1 = np.einsum("pij,pj->pi", Tu, u)
        lam = np.einsum("pi,pi->p", g1, u)
        J = 2.0 * Tu - lam[:, None, None] * np.eye(d)
        Hp = np.einsum("pai,pab,pbj->pij", B, J, B)
        gp = np.einsum("pai,pa->pi", B, g1)
        f0 = np.sum(gp**2, axis=1)
        m_ = mu[active]
        A = np.einsum("pij,pkj->pik", Hp, Hp) + m_[:, None, None] * eye
        step = -np.linalg.solve(A, np.einsum("pij,pj->pi", Hp, gp)[..., None])[..., 0]
        un = u + np.einsum("pai,pi->pa", B, step)
        un /= np.linalg.norm(un, axis=1, keepdims=True)
        ok = _squared_residual(T, un) < f0
        moved = np.linalg.norm(un - u, axis=1)
        U[active[ok]] = un[ok]
        mu[active] = np.where(ok, m_ / 3.0, m_ * 4.0)
        done = (ok & (moved < tol)) | (f0 < (1e-13 * scale) ** 2) | (mu[active] > 1e12)
        active = active[~done]
    return U


def near_eigenpairs(
    T,
    *,
    n_starts: int | None = None,
    max_residual: float = 0.005,
    max_iter: int = 100,
    tol: float = 1e-10,
    dedup_tol: float = 1e-3,
    seed=None,
) -> TensorEigenpairs:
    """Local minima of ``||g(u)||`` on the sphere, ``g(u) = T(I,u,u) - T(u,u,u) u``.

    Exact eigenpairs are the zeros of ``g``. When a tensor is perturbed (e.g. estimated
    from finite samples), two eigenpairs whose Newton-stability margin is smaller than
    the perturbation can collide and vanish; they leave a local minimum of ``||g||`` with
    a small but nonzero residual close to where they were. This routine finds such minima
    by a batched Levenberg-Marquardt iteration in the tangent space (Gauss-Newton on
    ``||P_u g(u)||^2``), from random starts. It is an addition to the seed paper's
    method, not part of it.

    Parameters
    ----------
    T : array_like, float, shape (d, d, d)
    n_starts : int, optional
        Default ``1000 * d``.
    max_residual : float, optional
        Keep minima with ``||g(u)|| <= max_residual * max(1, ||T||_F)``.
    max_iter : int, optional
    tol : float, optional
        Stop a start when its step is shorter than this.
    dedup_tol : float, optional
        Minima closer than this (up to sign) are one.
    seed : None, int or numpy.random.Generator

    Returns
    -------
    TensorEigenpairs
        ``residuals`` are the minima's ``||g(u)||`` (0 up to round-off for exact
        eigenpairs, which are found too); ``values = T(u,u,u) >= 0``.

    Examples
    --------
    >>> T = np.zeros((2, 2, 2)); T[0, 0, 0] = 1.0; T[1, 1, 1] = 2.0
    >>> r = near_eigenpairs(T, seed=0)
    >>> len(r), bool(r.residuals.max() < 1e-10)
    (3, True)
    """
    T = symmetrize(T)
    d = T.shape[0]
    if n_starts is None:
        n_starts = max(500, 1000 * d)
    rng = np.random.default_rng(seed)
    scale = max(1.0, float(np.linalg.norm(T)))
    U = rng.standard_normal((int(n_starts), d))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    U = _minimise_residual(T, U, tol=tol, max_iter=max_iter, scale=scale)
    res = np.sqrt(_squared_residual(T, U))
    keep = np.flatnonzero(res <= max_residual * scale)
    if keep.size == 0:
        empty = np.zeros((0, d))
        return TensorEigenpairs(empty, np.zeros(0), np.zeros(0, bool), np.zeros(0),
                                np.zeros(0), np.zeros(0, np.int64), int(n_starts), 0, 0)
    V = U[keep]
    vals = np.einsum("pi,pi->p", tensor_apply(T, V), V)
    labels, reps = _group_dedup(V, np.abs(vals), dedup_tol)
    # representative of each cluster: its smallest residual
    best = np.full(len(reps), -1)
    for lab in range(len(reps)):
        members = np.flatnonzero(labels == lab)
        best[lab] = members[np.argmin(res[keep][members])]
    hits = np.bincount(labels, minlength=len(reps))
    V = V[best]
    vals = vals[best]
    flip = np.where(vals < 0, -1.0, 1.0)
    V, vals = V * flip[:, None], vals * flip
    r = res[keep][best]
    margins = _projected_margins(T, V, vals)
    order = np.argsort(-vals, kind="stable")
    return TensorEigenpairs(
        vectors=V[order], values=vals[order], stable=(margins > 1e-8 * scale)[order],
        residuals=r[order], margins=margins[order], hits=hits[order],
        n_starts=int(n_starts), n_converged=len(keep), n_new_second_half=0,
        params=dict(max_residual=max_residual, dedup_tol=dedup_tol),
    )
