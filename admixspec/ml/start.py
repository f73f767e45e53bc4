"""The maximum-likelihood start: constrained least squares in the SVD subspace.

:func:`subspace_als` fits ``Q P^T`` to the rank-r approximation
``Y = 1 f^T + U S V^T`` of the genotype frequencies ``X = G / 2`` (from the
randomized SVD of the centred genotypes, :mod:`admixspec.ml.initial`) by
alternating *exact* constrained least squares, run to convergence:

* the P step solves, for every SNP ``j``, ``min ||y_j - Q p||^2`` over the
  box ``[P_MIN, P_MAX]^K``;
* the Q step solves, for every individual ``i``, ``min sum_j w_j (y_ij -
  q . p_j)^2`` over the simplex, with the Fisher weights ``w_j = 1 /
  (f_j (1 - f_j))`` (the binomial likelihood's curvature at the SNP's mean
  frequency, so that rare-variant SNPs count as the likelihood counts them).

A SNP's weight is the same in every individual's residual, so the P step of
the weighted objective is the unweighted one: both steps are exact block
minimisations of one objective, which never increases. Every row is a small
quadratic programme with the shared Gram matrix ``Q^T Q`` (P) or ``P^T W P``
(Q): one solve gives every row's solution without the bounds, and only the
rows it leaves outside them go to the primal active-set solver of the
block-relaxation map (:mod:`admixspec.ml._kernels.least_squares`; the P step,
over every SNP, is one parallel kernel), warm-started at the previous
iteration's active bounds. The right-hand sides
come from the factors alone (``Y P = 1 (f^T P) + U S (V^T P)``), so an
iteration costs ``O((m + n) r K + (m + n) K^2)`` and never reads G; so does
the objective.

The idea (SVD, then alternating least squares on the low-rank matrix) is
fastmixture's and ADAMIXTURE's; what differs here: the subspace has rank
K - 1 (the admixture model's centred frequencies have rank K - 1), both
steps are exact, ALS runs until an iteration lowers the objective by less
than :data:`ALS_TOL` of it and is accelerated by SQUAREM's squared
extrapolation (Varadhan & Roland 2008) of the ALS map, kept only when it
lowers the objective; further starts for the multi-start screening come from
new SVD sketches (:func:`subspace_starts`). The SVD is of the centred genotypes as they
are: scaling the SNPs by the square roots of the Fisher weights first (as
ADAMIXTURE's power iterations do) gave starts with components of 2-5
individuals on ADAMIXTURE's demo data (K = 7), which ended 7,000
log-likelihood units below the unscaled start's optimum.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..core.frequencies import allele_frequencies
from ..core.parameters import P_MAX, P_MIN, Q_MIN, clip_proportions
from ..core.threads import serial_blas
from ._kernels.least_squares import box_ls_p_rows, constrained_ls_rows
from .initial import SVD_GAP, _randomized_svd

__all__ = ["SubspaceStart", "fisher_weights", "subspace_als", "subspace_starts"]

#: Floor of ``f (1 - f)`` in the Fisher weights (a SNP at frequency 0.001).
_VAR_FLOOR = 1e-3
#: ALS stops when an iteration lowers the objective by less than this share
#: of it. The start only has to lie in the optimum's basin: block relaxation
#: climbs the rest. Against 1e-9, 1e-4 took half the ALS maps (4,407 against
#: 8,676) and reached the same optimum in 16 fits of HapMap3 K = 3-5, 1000
#: Genomes K = 5 and 8 and ADAMIXTURE's demo data K = 7 (several seeds each),
#: in about as many likelihood iterations (482 against 529); 1e-3 led one of
#: them to a lower mode (docs/benchmarks.md, "The start's ALS tolerance").
ALS_TOL = 1e-4
#: Relative ridge of the shared Gram matrices (a component ALS empties
#: leaves them singular).
_RIDGE = 1e-10


def _ridged_inverse(C):
    """``C`` with its ridge (:data:`_RIDGE`), and its inverse (None if singular)."""
    K = C.shape[0]
    C = C + (_RIDGE * np.trace(C) / K + 1e-300) * np.eye(K)
    try:
        return C, np.linalg.inv(C)
    except np.linalg.LinAlgError:
        return C, None


def _simplex_rows(X0, B, C, threads):
    """Rows ``argmin x'Cx/2 - b'x`` on the simplex, entries ``>= Q_MIN`` (exact).

    The Q step's solver (the P step's is
    :func:`~admixspec.ml._kernels.least_squares.box_ls_p_rows`). Every row
    shares ``C``: the problem with the sum but without the floors is solved
    for all rows by one solve; only rows whose solution leaves the
    floor go to the active-set kernel
    (:func:`~admixspec.ml._kernels.least_squares.constrained_ls_rows`),
    warm-started at ``X0``.

    Parameters
    ----------
    X0 : numpy.ndarray, float64, shape (n_rows, K)
        Feasible rows (the previous solution).
    B : numpy.ndarray, float64, shape (n_rows, K)
    C : numpy.ndarray, float64, shape (K, K)
    threads : int

    Returns
    -------
    numpy.ndarray, float64, shape (n_rows, K)
    """
    K = C.shape[0]
    C, C_inv = _ridged_inverse(C)
    if C_inv is None:
        bad = np.arange(B.shape[0])
        X = np.empty_like(X0)
    else:
        # one K x K inverse and a product: np.linalg.solve with a right-hand
        # side per row (NumPy's batched gufunc) took 1.7 ms against 0.12 ms on
        # HapMap3's 13,759 SNPs at K = 4
        X = B @ C_inv
        c1 = C_inv.sum(axis=1)
        X -= np.outer((X.sum(axis=1) - 1.0) / c1.sum(), c1)
        bad = np.flatnonzero((X < Q_MIN).any(axis=1))
    if bad.size:
        rows = np.empty((bad.size, K))
        constrained_ls_rows(np.ascontiguousarray(X0[bad]), np.ascontiguousarray(B[bad]),
                            C, Q_MIN, 1.0, True, rows, threads)
        X[bad] = rows
    return X


class SubspaceStart:
    """The ALS problem on one SVD: its maps, objective and solver state.

    Parameters
    ----------
    f : numpy.ndarray, float64, shape (n_snps,)
        Mean frequency of the counted allele per SNP.
    US : numpy.ndarray, float64, shape (n_individuals, r)
        Left singular vectors times singular values of ``G/2 - f``.
    V : numpy.ndarray, float64, shape (n_snps, r)
        Right singular vectors.
    weighted : bool
        Fisher weights in the Q step (see the module notes).
    """

    def __init__(self, f, US, V, *, weighted=True):
        self.f = np.asarray(f, dtype=np.float64)
        self.US = np.ascontiguousarray(US, dtype=np.float64)
        self.V = np.ascontiguousarray(V, dtype=np.float64)
        self.w = fisher_weights(self.f) if weighted else np.ones_like(self.f)
        self.Vw = self.V * self.w[:, None]
        self.fw = self.f * self.w
        self.threads = numba.get_num_threads()
        # ||Y||_W^2 with Y = 1 f^T + US V^T (the objective's constant)
        m = self.US.shape[0]
        cross = self.US.sum(axis=0) @ (self.Vw.T @ self.f)
        gram = np.einsum("ij,ik->jk", self.US, self.US)
        self.y2 = (m * float(self.fw @ self.f) + 2.0 * float(cross)
                   + float(np.sum(gram * (self.V.T @ self.Vw))))

    def p_step(self, Q, P0):
        """Exact box-constrained least-squares P (n_snps, K) for fixed Q, from P0.

        The rows' linear terms ``f_j Q^T 1 + V_j (U S)^T Q``, their solutions
        and the active-set solves of the rows that leave the box are one
        parallel kernel (:func:`~admixspec.ml._kernels.least_squares.box_ls_p_rows`).
        """
        C, C_inv = _ridged_inverse(Q.T @ Q)
        P = np.empty_like(P0)
        box_ls_p_rows(self.f, Q.sum(axis=0), self.V, self.US.T @ Q, C,
                      np.empty((0, 0)) if C_inv is None else C_inv, P_MIN, P_MAX,
                      np.ascontiguousarray(P0), P, self.threads)
        return P

    def q_step(self, P, Q0):
        """Exact simplex-constrained weighted least-squares Q (n_individuals, K)."""
        WP = P * self.w[:, None]
        B = (self.fw @ P)[None, :] + self.US @ (self.V.T @ WP)
        return _simplex_rows(Q0, B, P.T @ WP, self.threads)

    def objective(self, Q, P):
        """``sum_ij w_j (y_ij - q_i . p_j)^2`` from the factors, O((m + n) r K)."""
        WP = P * self.w[:, None]
        YWP = (self.fw @ P)[None, :] + self.US @ (self.V.T @ WP)
        return (self.y2 - 2.0 * float(np.sum(Q * YWP))
                + float(np.sum((Q.T @ Q) * (P.T @ WP))))

    def als(self, Q, P):
        """One ALS iteration: P given Q, then Q given P."""
        P = self.p_step(Q, P)
        return self.q_step(P, Q), P

    def clean(self, Q, P):
        """Move an extrapolated (Q, P) back inside the parameter box (in place)."""
        np.clip(P, P_MIN, P_MAX, out=P)
        return clip_proportions(Q), P


def _squarem_als(prob, Q, P, Q1, P1, step_max):
    """SQUAREM's jump from x = (Q, P) and ALS(x) = (Q1, P1).

    Computes ALS(ALS(x)) and its objective; the jump (followed by one ALS
    map) replaces it when it lowers the objective. Returns ``((Q, P,
    objective), ALS maps used here, new step_max)``.
    """
    Q2, P2 = prob.als(Q1, P1)
    r = [Q1 - Q, P1 - P]
    v = [Q2 - 2.0 * Q1 + Q, P2 - 2.0 * P1 + P]
    r2 = sum(float(np.vdot(a, a)) for a in r)
    v2 = sum(float(np.vdot(a, a)) for a in v)
    best = (Q2, P2, prob.objective(Q2, P2))
    if v2 <= 0.0 or r2 <= 0.0:
        return best, 1, step_max
    alpha = max(min(-math.sqrt(r2 / v2), -1.0), -step_max)
    Qj, Pj = prob.clean(Q - 2.0 * alpha * r[0] + alpha * alpha * v[0],
                        P - 2.0 * alpha * r[1] + alpha * alpha * v[1])
    Qj, Pj = prob.als(Qj, Pj)
    obj_j = prob.objective(Qj, Pj)
    if obj_j < best[2]:
        if alpha <= -step_max + 1e-9:
            step_max *= 2.0
        return (Qj, Pj, obj_j), 2, step_max
    return best, 2, max(2.0, step_max / 2.0)


@serial_blas()
def subspace_als(f, US, V, P0, *, max_iter: int = 1000, tol: float | None = None,
                 accelerate: bool = True, weighted: bool = True):
    """Alternating exact constrained least squares in the SVD subspace.

    Parameters
    ----------
    f : numpy.ndarray, float64, shape (n_snps,)
    US : numpy.ndarray, float64, shape (n_individuals, r)
    V : numpy.ndarray, float64, shape (n_snps, r)
        The approximation ``G/2 ~ 1 f^T + US V^T`` (see :class:`SubspaceStart`).
    P0 : numpy.ndarray, float64, shape (n_snps, K)
        Starting frequencies inside the box.
    max_iter : int
        ALS maps at most (an accelerated iteration counts all its maps).
    tol : float, optional
        Stop when an iteration lowers the objective by less than ``tol``
        times its value (:data:`ALS_TOL` when None).
    accelerate : bool
        SQUAREM extrapolation of the ALS map, kept when it lowers the objective.
    weighted : bool
        Fisher weights in the Q step.

    Returns
    -------
    Q : numpy.ndarray, float64, shape (n_individuals, K)
    P : numpy.ndarray, float64, shape (n_snps, K)
    info : dict
        ``maps`` (ALS maps applied), ``objective`` (final value).
    """
    tol = ALS_TOL if tol is None else tol
    prob = SubspaceStart(f, US, V, weighted=weighted)
    m, K = US.shape[0], P0.shape[1]
    Q = prob.q_step(P0, np.full((m, K), 1.0 / K))
    P = P0
    obj = prob.objective(Q, P)
    maps = 0
    step_max = 16.0
    while maps < max_iter:
        Q1, P1 = prob.als(Q, P)
        maps += 1
        if accelerate:
            (Q1, P1, new_obj), extra, step_max = _squarem_als(prob, Q, P, Q1, P1,
                                                              step_max)
            maps += extra
        else:
            new_obj = prob.objective(Q1, P1)
        gain = obj - new_obj
        Q, P, obj = Q1, P1, new_obj
        if gain < tol * abs(obj):
            break
    return Q, P, {"maps": maps, "objective": obj}


def subspace_starts(G, K, n_starts=1, *, seed=None, n_power=4, standardize=False,
                    mix=False, **options):
    """SVD + converged subspace ALS starts for ``G`` (see the module notes).

    Each start is a randomized SVD of the centred genotypes
    (``standardize=True`` scales each SNP by the square root of its Fisher
    weight first; see the module notes for why that is not the default) and
    ALS in the subspace of its top K - 1 singular directions. On real data
    only the first few directions stand out: beyond them the singular values
    form a flat bulk (HapMap3: 233, 76, then 42.1, 41.8, 41.7, ...), any mix of
    which is an equally good (K - 1)-th direction, and the mix decides which
    local maximum of the likelihood the fit climbs to. Starts 2, 3, ... take
    new sketches (seeds spawned from ``seed``), so other mixes. ``mix=True``
    instead takes the mixes from one sketch without reading the genotypes
    again (the subspace of ``U S^(2 n_power + 1) R`` for a Gaussian R over
    the sketch's top ``2 K`` directions): cheaper, but on HapMap3 at K = 4 the
    fits it led to ended below ADMIXTURE's optimum for 2 of 6 seeds where
    new sketches' did for none (measured on branch engine with
    ``benchmarks/ml_start.py --mix``). When the (K-1)-th
    singular value of the first sketch is at least
    :data:`~admixspec.ml.initial.SVD_GAP` times the K-th, the data determine
    the subspace and one start is returned.

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)
        Dosage, -1 for missing.
    K : int
        Number of components.
    n_starts : int
        Starts wanted (at most; see above).
    seed : int, optional
        Seed of the SVD sketches, the mixes and ALS's starting P.
    n_power : int
        Power iterations of the randomized SVD.
    standardize : bool
        Scale the SNPs by the square roots of the Fisher weights in the SVD.
    mix : bool
        Further starts from mixes of one sketch instead of new sketches.
    **options
        Passed to :func:`subspace_als`.

    Returns
    -------
    list of (Q, P)
        Q (n_individuals, K) and P (n_snps, K) float64.
    """
    m, n = G.shape
    f = allele_frequencies(G)
    if K == 1:
        return [(np.ones((m, 1)), np.clip(f, P_MIN, P_MAX)[:, None].copy())]
    root_w = np.sqrt(fisher_weights(f)) if standardize else None

    def sketch(rng):
        U, S, V = _randomized_svd(G, f, min(2 * K, m, n), n_power=n_power, rng=rng,
                                  scale=root_w)
        if root_w is not None:
            V = V / root_w[:, None]
        return U, S, V, rng.uniform(P_MIN, P_MAX, size=(n, K))

    def als(US, V, P0):
        Q, P, _ = subspace_als(f, US, V, P0, **options)
        return clip_proportions(Q), P

    rng = np.random.default_rng(seed)
    U, S, V, P0 = sketch(rng)
    starts = [als(U[:, : K - 1] * S[: K - 1], V[:, : K - 1], P0)]
    # fewer singular values than K (fewer SNPs than K): the start's subspace
    # is all the data have, so other sketches would span the same one
    if n_starts <= 1 or S.size < K or S[K - 2] >= SVD_GAP * S[K - 1]:
        return starts
    if mix:
        r = U.shape[1]
        US = U * S[:r]
        weights = U * (S[:r] / S[0]) ** (2 * n_power + 1)
        for _ in range(n_starts - 1):
            B = np.linalg.qr(weights @ rng.standard_normal((r, K - 1)))[0]
            # B B^T US V^T: the data's part in the mixed subspace
            starts.append(als(B, V @ (B.T @ US).T, P0))
        return starts
    for child in np.random.SeedSequence(seed).spawn(n_starts - 1):
        U, S, V, P0 = sketch(np.random.default_rng(child))
        starts.append(als(U[:, : K - 1] * S[: K - 1], V[:, : K - 1], P0))
    return starts


def fisher_weights(f):
    """``1 / (f (1 - f))`` (floored at ``_VAR_FLOOR``), scaled to mean one.

    Parameters
    ----------
    f : numpy.ndarray, float64, shape (n_snps,)

    Returns
    -------
    numpy.ndarray, float64, shape (n_snps,)
    """
    w = 1.0 / np.maximum(f * (1.0 - f), _VAR_FLOOR)
    return w / w.mean()
