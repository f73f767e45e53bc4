"""Projection that accounts for the sampling noise of the reference's P.

A reference's allele frequencies are estimated from its N individuals:
``P_hat = P + E`` with ``E`` of covariance ``V_j`` (K x K) at SNP j, about
``p (1 - p) / (2 N_k)`` on the diagonal. Projecting a new individual onto
``P_hat`` maximises ``l(q; P_hat)``, whose expectation over ``E`` is, to
second order,

.. math::

    E\\, l(q; \\hat P) \\approx l(q; P) - \\sum_j \\frac{q^T V_j q}{f_j (1 - f_j)},
    \\qquad f_j = q^T p_j,

(the curvature of the binomial log-likelihood in ``f`` at its expectation,
``-2 / (f (1 - f))``, times the variance ``q^T V_j q`` of ``f_j``). The penalty
grows with ``q^T V_j q``, which is largest at the simplex's corners, so the
projected Q is pulled towards the middle: an individual of one ancestry gets
a share of the others (fastmixture issue #7), by about ``1 / (4 F N)`` for a
component of F_ST ``F`` and ``N`` reference individuals (the penalty's
gradient over the likelihood's curvature), whatever the number of SNPs.

:func:`debiased_project` maximises the corrected log-likelihood (Nakamura's
corrected score for covariates measured with error, Biometrika 1990)

.. math::

    l^*(q) = l(q; \\hat P) + \\sum_j \\frac{q^T V_j q}{f_j (1 - f_j)},

whose expectation over ``E`` is ``l(q; P)`` to second order, so its maximiser
has no first-order bias, by Fisher scoring on the simplex from the plain
projection. :func:`p_covariance` gives ``V`` from the reference's genotypes
and Q (the inverse expected information of each SNP's frequencies given Q),
:func:`p_covariance_from_sizes` from the reference's size alone.

The correction is for individuals new to P, whose genotypes ``E`` does not
depend on. For the reference's own individuals it does (P was fitted to
them), and the correction moved their Q away from the truth: they are
projected plainly (:func:`admixspec.fit_admixture`'s ``reference_members``).
"""

from __future__ import annotations

import numpy as np

from ..core.exceptions import InputError
from ..core.parameters import P_MAX, P_MIN, Q_MIN, clip_proportions, simplex_projection

__all__ = ["corrected_loglikelihood", "debiased_project", "effective_sizes",
           "p_covariance", "p_covariance_from_sizes"]

#: Individuals per block: the block's float64 (individuals x SNPs) temporaries.
_BLOCK_ENTRIES = 2_000_000


def p_covariance(G_ref, Q_ref: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Sampling covariance of each SNP's frequencies, from the reference's fit.

    The inverse of the expected information of ``p_j`` given the reference's
    Q: ``I_j = sum_i 2 q_i q_i^T / (f_ij (1 - f_ij))`` over its called
    genotypes.

    Parameters
    ----------
    G_ref : numpy.ndarray, int8, shape (n_reference, n_snps), or None
        The reference's genotypes (-1 missing); None counts every genotype
        as called (a reference known only by its ``.Q`` and ``.P``).
    Q_ref : numpy.ndarray, float, shape (n_reference, K)
    P : numpy.ndarray, float, shape (n_snps, K)
        The reference's fitted frequencies.

    Returns
    -------
    numpy.ndarray, float64, shape (n_snps, K, K)

    Raises
    ------
    InputError
        ``Q_ref`` without rows, or with a row holding a negative or
        non-finite number or summing to 0.

    Examples
    --------
    >>> G = np.array([[0, 1], [2, 1], [1, 1], [2, 0]], dtype=np.int8)
    >>> V = p_covariance(G, np.ones((4, 1)), np.array([[0.625], [0.375]]))
    >>> V[:, 0, 0].round(5).tolist()  # p (1 - p) / (2 N)
    [0.0293, 0.0293]
    """
    Q = _reference_proportions(Q_ref)
    P = np.clip(np.asarray(P, dtype=np.float64), P_MIN, P_MAX)
    n, K = Q.shape
    m = P.shape[0]
    pairs = (Q[:, :, None] * Q[:, None, :]).reshape(n, K * K)
    info = np.zeros((m, K * K))
    step = max(1, _BLOCK_ENTRIES // max(m, 1))
    for start in range(0, n, step):
        rows = slice(start, start + step)
        f = Q[rows] @ P.T
        weight = 2.0 / (f * (1.0 - f))
        if G_ref is not None:
            weight[G_ref[rows] < 0] = 0.0
        info += weight.T @ pairs[rows]
    info = info.reshape(m, K, K)
    # a component without reference individuals has no information: a tiny ridge
    ridge = 1e-9 * np.maximum(np.trace(info, axis1=1, axis2=2), 1.0)[:, None, None]
    return np.linalg.inv(info + ridge * np.eye(K))


def _reference_proportions(Q_ref) -> np.ndarray:
    """The reference's Q with rows summing to exactly 1, refused where it has none.

    A .Q file's 6 decimals leave sums 1 +- 1e-6, which moves 1 - f by 10%
    where f is near 1 - 1e-5 (and not where the same SNP, flipped, has f near
    1e-5). A row of zeros (or NaN) made every V NaN, and the correction then
    never moved Q while the log said it was corrected; no rows made V the
    ridge's inverse, which pushed every Q to a corner.
    """
    Q = np.asarray(Q_ref, dtype=np.float64)
    if len(Q) == 0:
        raise InputError("the reference's Q has no individuals: it cannot tell how "
                         "noisy P is")
    sums = Q.sum(axis=1)
    bad = ~(np.isfinite(Q) & (Q >= 0)).all(axis=1) | ~(sums > 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"the reference's Q must hold ancestry proportions (numbers "
                         f">= 0, each row summing to more than 0): row {i + 1} is "
                         f"{' '.join(f'{x:g}' for x in Q[i])} ({int(bad.sum())} such "
                         f"row{'s' if bad.sum() > 1 else ''})")
    return Q / sums[:, None]


def p_covariance_from_sizes(P: np.ndarray, sizes) -> np.ndarray:
    """Diagonal sampling covariance ``p (1 - p) / (2 N_k)`` from component sizes.

    For a reference whose genotypes are not at hand: ``N_k`` is the number
    of reference individuals' worth of component k, ``sum_i q_ik^2`` (the
    information of unadmixed individuals; admixed ones inform less and their
    components' covariance is left out).

    Parameters
    ----------
    P : numpy.ndarray, float, shape (n_snps, K)
    sizes : array_like, float, shape (K,)

    Returns
    -------
    numpy.ndarray, float64, shape (n_snps, K, K)

    Examples
    --------
    >>> p_covariance_from_sizes(np.array([[0.5, 0.1]]), [10, 50])[0].round(5).tolist()
    [[0.0125, 0.0], [0.0, 0.0009]]
    """
    P = np.clip(np.asarray(P, dtype=np.float64), P_MIN, P_MAX)
    sizes = np.maximum(np.asarray(sizes, dtype=np.float64), 1e-12)
    V = np.zeros(P.shape + (P.shape[1],))
    index = np.arange(P.shape[1])
    V[:, index, index] = P * (1.0 - P) / (2.0 * sizes)
    return V


def effective_sizes(P: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Each component's effective number of reference individuals, from P's covariance.

    The median over SNPs of ``p (1 - p) / (2 V_jkk)``: the number of
    unadmixed individuals that would estimate component k's frequencies as
    precisely, a summary a run can record for projecting onto its P later
    (:func:`p_covariance_from_sizes`). SNPs with ``p`` at the box's bounds
    are left out.

    Parameters
    ----------
    P : numpy.ndarray, float, shape (n_snps, K)
    V : numpy.ndarray, float, shape (n_snps, K, K)

    Returns
    -------
    numpy.ndarray, float64, shape (K,)

    Examples
    --------
    >>> P = np.array([[0.5, 0.1], [0.2, 0.3]])
    >>> effective_sizes(P, p_covariance_from_sizes(P, [10, 50])).round(6).tolist()
    [10.0, 50.0]
    """
    P = np.clip(np.asarray(P, dtype=np.float64), P_MIN, P_MAX)
    variance = np.diagonal(np.asarray(V, dtype=np.float64), axis1=1, axis2=2)
    inside = (P > 2 * P_MIN) & (P < 1 - 2 * P_MIN) & (variance > 0)
    ratio = np.where(inside, P * (1.0 - P) / (2.0 * np.where(inside, variance, 1.0)),
                     np.nan)
    return np.nanmedian(ratio, axis=0)


def _terms(G, Q, P, Vflat):
    """Per entry: observed mask, f, h = f (1 - f) and s = q^T V_j q."""
    K = Q.shape[1]
    observed = G >= 0
    f = np.clip(Q @ P.T, P_MIN, P_MAX)
    h = f * (1.0 - f)
    pairs = (Q[:, :, None] * Q[:, None, :]).reshape(len(Q), K * K)
    s = pairs @ Vflat.T
    return observed, f, h, s


def _objective(G, Q, P, Vflat):
    observed, f, h, s = _terms(G, Q, P, Vflat)
    g = np.where(observed, G, 0).astype(np.float64)
    ll = g * np.log(f) + (2.0 - g) * np.log1p(-f)
    return np.where(observed, ll + s / h, 0.0).sum(axis=1)


def corrected_loglikelihood(G, Q, P, V) -> np.ndarray:
    """Each individual's corrected log-likelihood ``l*(q)`` (module docstring).

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)
    Q : numpy.ndarray, float, shape (n_individuals, K)
    P : numpy.ndarray, float, shape (n_snps, K)
    V : numpy.ndarray, float, shape (n_snps, K, K)

    Returns
    -------
    numpy.ndarray, float64, shape (n_individuals,)
    """
    P = np.clip(np.asarray(P, dtype=np.float64), P_MIN, P_MAX)
    V = np.asarray(V, dtype=np.float64)
    return _objective(G, np.asarray(Q, dtype=np.float64), P,
                      V.reshape(V.shape[0], -1))


def _scoring_step(G, Q, P, Vflat, PP):
    """Fisher-scoring direction of l* on the plane sum(q) = 1, per individual.

    Every sum over SNPs is a matrix product of an (individuals x SNPs) array
    with P, ``PP`` (``p_j p_j^T`` flattened) or ``Vflat``.
    """
    n, K = Q.shape
    observed, f, h, s = _terms(G, Q, P, Vflat)
    g = np.where(observed, G, 0).astype(np.float64)
    inv_h = np.where(observed, 1.0 / h, 0.0)
    # d l / d f, and the correction's derivative in f (V fixed)
    slope = np.where(observed, g / f - (2.0 - g) / (1.0 - f), 0.0)
    slope -= s * (1.0 - 2.0 * f) * inv_h**2
    W = (inv_h @ Vflat).reshape(n, K, K)  # sum_j V_j / h_j
    gradient = slope @ P + 2.0 * np.einsum("nkl,nl->nk", W, Q)
    # expected information of l (2 / h per entry) less the correction's curvature
    info = 2.0 * ((inv_h @ PP).reshape(n, K, K) - W)
    system = np.zeros((n, K + 1, K + 1))
    system[:, :K, :K] = info
    system[:, :K, K] = system[:, K, :K] = 1.0
    rhs = np.zeros((n, K + 1))
    rhs[:, :K] = gradient
    direction = _solve(system, rhs, gradient, info)
    # components on their bound that the step would push out stay there: the
    # step is solved again with them fixed (one active-set pass), so it is not
    # cut short by the simplex's edge, which stalled such individuals
    fixed = (Q <= 1.0001 * Q_MIN) & (direction < 0)
    if fixed.any():
        rows, cols = np.nonzero(fixed)
        system[rows, cols, :] = 0.0
        system[rows, :, cols] = 0.0
        system[rows, cols, cols] = 1.0
        rhs[rows, cols] = 0.0
        direction = _solve(system, rhs, gradient, info)
    return direction


def _solve(system, rhs, gradient, info):
    """Each individual's step from its bordered system (scaled gradient if singular)."""
    K = gradient.shape[1]
    # a singular system (a component no SNP informs) takes the gradient's direction
    try:
        return np.linalg.solve(system, rhs[..., None])[..., :K, 0]
    except np.linalg.LinAlgError:
        centred = gradient - gradient.mean(axis=1, keepdims=True)
        return centred / np.maximum(np.abs(info).max(axis=(1, 2)), 1.0)[:, None]


def debiased_project(G, P, V, Q0, *, tol: float = 1e-9, max_iter: int = 100
                     ) -> np.ndarray:
    """Projected Q that corrects for the sampling noise of P (module docstring).

    Fisher scoring on the corrected log-likelihood ``l*``, each step moved
    onto the simplex and halved until ``l*`` does not decrease, individual by
    individual (vectorised over blocks of individuals).

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)
        The individuals to project, on P's SNPs and counted alleles.
    P : numpy.ndarray, float, shape (n_snps, K)
        The reference's frequencies.
    V : numpy.ndarray, float, shape (n_snps, K, K)
        Their sampling covariance (:func:`p_covariance`,
        :func:`p_covariance_from_sizes`).
    Q0 : numpy.ndarray, float, shape (n_individuals, K)
        Start: the plain projection (:func:`admixspec.ml.project.project`).
    tol : float
        Stop an individual when a full (unhalved) step gains less than this
        (1e-9: at 1e-6, individuals whose optimum lies on the simplex's edge
        stopped up to 3e-3 short of it on 1000 Genomes).
    max_iter : int
        Most steps.

    Returns
    -------
    numpy.ndarray, float64, shape (n_individuals, K)

    Examples
    --------
    A reference of 40 individuals; 200 others projected onto its P, of whom
    those of one ancestry are pulled towards the middle, less so corrected:

    >>> from admixspec import fit_ml, project, simulate_balding_nichols
    >>> sim = simulate_balding_nichols(240, 3000, 2, fst=0.05, alpha=0.3, seed=5)
    >>> G = sim.genotypes.dosage
    >>> ref = fit_ml(G[:40], 2, seed=1)
    >>> plain = project(G[40:], ref.P)
    >>> fixed = debiased_project(G[40:], ref.P, p_covariance(G[:40], ref.Q, ref.P),
    ...                          plain)
    >>> pure = sim.Q[40:].max(axis=1) > 0.99
    >>> bool(fixed[pure].max(axis=1).mean() > plain[pure].max(axis=1).mean() + 0.05)
    True
    """
    P = np.clip(np.asarray(P, dtype=np.float64), P_MIN, P_MAX)
    V = np.asarray(V, dtype=np.float64)
    Vflat = V.reshape(V.shape[0], -1).copy()
    # on the bound to rounding: a flipped row's 1 - 0.99999 is not exactly P_MIN
    edge = 1e-9
    Vflat[(P <= P_MIN + edge).all(axis=1) | (P >= P_MAX - edge).all(axis=1)] = 0.0
    Q = clip_proportions(np.array(Q0, dtype=np.float64))
    n = len(Q)
    step = max(1, _BLOCK_ENTRIES // max(P.shape[0], 1))
    PP = (P[:, :, None] * P[:, None, :]).reshape(P.shape[0], -1)
    for start in range(0, n, step):
        rows = slice(start, start + step)
        Q[rows] = _scoring(G[rows], Q[rows], P, Vflat, PP, tol=tol, max_iter=max_iter)
    return Q


def _scoring(G, Q, P, Vflat, PP, *, tol, max_iter):
    value = _objective(G, Q, P, Vflat)
    active = np.ones(len(Q), dtype=bool)
    for _ in range(max_iter):
        if not active.any():
            break
        index = np.flatnonzero(active)
        direction = _scoring_step(G[index], Q[index], P, Vflat, PP)
        alpha = np.ones(len(index))
        moved = np.zeros(len(index), dtype=bool)
        for _ in range(30):  # step halving, per individual
            todo = ~moved & (alpha > 1e-9)
            if not todo.any():
                break
            rows = index[todo]
            trial = simplex_projection(Q[rows] + alpha[todo, None] * direction[todo])
            np.maximum(trial, Q_MIN, out=trial)
            trial /= trial.sum(axis=1, keepdims=True)
            new = _objective(G[rows], trial, P, Vflat)
            better = new >= value[rows]
            gain = new - value[rows]
            accept = rows[better]
            Q[accept] = trial[better]
            value[accept] = new[better]
            done = np.flatnonzero(todo)[better]
            moved[done] = True
            # converged: a full step gains less than tol (a halved step's small
            # gain says only that the step was too long)
            full = alpha[np.flatnonzero(todo)[better]] == 1.0
            active[accept[(gain[better] < tol) & full]] = False
            alpha[np.flatnonzero(todo)[~better]] *= 0.5
        active[index[~moved]] = False
    return Q
