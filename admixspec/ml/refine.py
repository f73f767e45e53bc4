"""Maximum-likelihood fit of ADMIXTURE's model by accelerated EM.

Algorithm (all passes are the fused, SNP-blocked, multi-threaded kernels of
:mod:`admixspec.ml.likelihood`):

1. **Start** from the given (Q, P), or from :func:`admixspec.ml.initial.svd_init`
   (``init="svd"``, default) or :func:`admixspec.ml.initial.random_init`
   (``init="random"``, the baseline).
2. **Mini-batch phase** (when the data have enough SNPs): each epoch visits
   the SNP blocks in a random order split into ``B`` batches and, per batch,
   takes one SQUAREM step (two EM maps restricted to the batch's SNPs, whose
   P rows they update and whose sufficient statistics update every Q row, then
   the squared extrapolation). An epoch ends with a full EM step, whose pass
   also yields the exact log-likelihood. When an epoch gains less than
   ``batch_tol`` relative, ``B`` is halved; at ``B = 1`` the phase ends. This
   stochastic warm-up moves Q many times per data pass, which is what makes
   fastmixture fast; here it only supplies a start.
3. **SQUAREM** (Varadhan & Roland 2008, scheme S3) on all SNPs: two EM
   maps, the squared extrapolation, one stabilising EM map from the
   extrapolated point; the jump is kept only if it is not below the second
   plain EM iterate, otherwise the step length is halved towards plain EM
   (backtracking), and the step bound adapts. ``accel="anderson"`` selects
   Anderson mixing of the last EM images instead (one pass per iteration,
   restarted when the likelihood drops); measured on simulated data it needed
   fewer passes from a good start but 2.4x more from a random one, so SQUAREM
   is the default.
4. **Stopping** as ADMIXTURE: stop when the log-likelihood gained between
   successive iterations is below ``tol`` (default 1e-4, the ``-C`` of
   ADMIXTURE); the returned (Q, P) is the iterate whose log-likelihood is
   reported, so ``loglik == loglikelihood(G, Q, P)``.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from ..exceptions import ConvergenceWarning, UsageError
from ..result import FitResult
from .likelihood import (
    P_MAX,
    P_MIN,
    Engine,
    check_dosage,
    check_params,
    project_q,
    thread_limit,
)
from .initial import p_given_q, q_given_p, random_init, svd_init

__all__ = [
    "IterationInfo",
    "MLResult",
    "fit_ml",
    "format_iteration",
    "format_summary",
]

logger = logging.getLogger("admixspec")

_INITS = ("svd", "random")


class IterationInfo(NamedTuple):
    """What one iteration reports (passed to ``callback``).

    Attributes
    ----------
    iteration : int
        1-based iteration number.
    stage : str
        ``"EM-batch"`` for a mini-batch epoch, ``"EM"`` for a full
        accelerated step.
    elapsed : float
        Seconds spent in this iteration (ADMIXTURE's ``Elapsed``).
    loglik : float
        Log-likelihood of the current iterate.
    delta : float
        Gain over the previous iteration's log-likelihood.
    batches : int
        Number of mini-batches used (1 in the full phase).
    """

    iteration: int
    stage: str
    elapsed: float
    loglik: float
    delta: float
    batches: int


def format_iteration(info: IterationInfo) -> str:
    """ADMIXTURE-style progress line for one iteration.

    Examples
    --------
    >>> format_iteration(IterationInfo(3, "EM", 0.6871, -4216220.5, 40582.9, 1))
    '3 (EM) \\tElapsed: 0.687\\tLoglikelihood: -4.21622e+06\\t(delta): 40582.9'
    """
    return (
        f"{info.iteration} (EM) \tElapsed: {info.elapsed:.3f}\t"
        f"Loglikelihood: {info.loglik:g}\t(delta): {info.delta:g}"
    )


@dataclass
class MLResult(FitResult):
    """Result of :func:`fit_ml` (and of the supervised fit).

    The :class:`~admixspec.result.FitResult` fields (Q, P, loglik, n_iter,
    converged, history, timings, diagnostics), where ``n_iter`` counts
    mini-batch epochs plus full accelerated steps and ``timings`` holds
    ``init``, ``em`` and ``total``; and:

    Attributes
    ----------
    n_passes : float
        Data passes used by the EM (one pass = every genotype read once).
    init : str
        How the start was obtained (``"given"``, ``"svd"``, ``"random"``...).
    """

    n_passes: float = 0.0
    init: str = ""


def format_summary(result: MLResult) -> str:
    """ADMIXTURE-style summary lines ending with ``Loglikelihood: <value>``.

    Examples
    --------
    >>> import numpy as np
    >>> r = MLResult(np.ones((1, 1)), np.ones((1, 1)), -12.5, 7, True,
    ...              timings={"total": 1.25})
    >>> print(format_summary(r))
    Converged in 7 iterations (1.250 sec)
    Loglikelihood: -12.500000
    """
    head = "Converged" if result.converged else "Stopped without converging"
    total = result.timings.get("total", float("nan"))
    return (
        f"{head} in {result.n_iter} iterations ({total:.3f} sec)\n"
        f"Loglikelihood: {result.loglik:.6f}"
    )


# --------------------------------------------------------------------------
# the accelerated EM core (shared with projection and supervised fits)
# --------------------------------------------------------------------------
def _extrapolate(x0, x1, x2, step_max):
    """SQUAREM S3 step length from three iterates (lists of arrays)."""
    r2 = 0.0
    v2 = 0.0
    for a, b, c in zip(x0, x1, x2):
        r = b - a
        v = c - 2.0 * b + a
        r2 += float(np.vdot(r, r))
        v2 += float(np.vdot(v, v))
    if v2 <= 0.0 or r2 <= 0.0:
        return -1.0
    alpha = -math.sqrt(r2 / v2)
    return max(min(alpha, -1.0), -step_max)


def _jump(a, b, c, alpha):
    """x0 - 2 alpha r + alpha^2 v."""
    return a - 2.0 * alpha * (b - a) + alpha * alpha * (c - 2.0 * b + a)


class _Fixed:
    """Rows of Q held at given values (supervised mode)."""

    def __init__(self, rows, values):
        self.rows = rows
        self.values = values

    def apply(self, Q):
        Q[self.rows] = self.values
        return Q

    @property
    def pair(self):
        return (self.rows, self.values)


def accelerated_em(
    engine: Engine,
    Q: np.ndarray,
    P: np.ndarray,
    *,
    tol: float,
    max_iter: int,
    update_p: bool = True,
    fixed: _Fixed | None = None,
    batches: int = 1,
    batch_tol: float = 1e-7,
    rng=None,
    callback: Callable | None = None,
    memory: int = 10,
    patience: int = 2,
    accel: str = "squarem",
):
    """Run the mini-batch warm-up, then guarded SQUAREM (or Anderson) EM.

    Returns ``(Q, P, loglik, n_iter, converged, history)``.
    """
    fixed_pair = None if fixed is None else fixed.pair
    history: list[IterationInfo] = []

    def em(Qx, Px, blocks=None, want_ll=True):
        return engine.em(Qx, Px, blocks=blocks, update_p=update_p, want_ll=want_ll,
                         Q_fixed_rows=fixed_pair)

    def clean(Qx, Px):
        if update_p:
            np.clip(Px, P_MIN, P_MAX, out=Px)
        project_q(Qx)
        if fixed is not None:
            fixed.apply(Qx)
        return Qx, Px

    last = [time.perf_counter()]

    def report(stage, t0, ll, prev, nb):
        now = time.perf_counter()
        elapsed, last[0] = now - last[0], now
        info = IterationInfo(len(history) + 1, stage, elapsed, ll,
                             ll - prev if np.isfinite(prev) else float("nan"), nb)
        history.append(info)
        if logger.isEnabledFor(logging.INFO):
            logger.info(format_iteration(info))
        if callback is not None:
            callback(info)

    ll_prev = -np.inf
    step_max = 1.0
    best = None
    # ---- mini-batch phase --------------------------------------------------
    nb = int(batches)
    if nb > 1 and rng is None:
        rng = np.random.default_rng(0)
    while nb > 1 and len(history) < max_iter:
        t0 = time.perf_counter()
        order = rng.permutation(engine.n_blocks)
        for chunk in np.array_split(order, nb):
            chunk = np.sort(chunk)
            Q1, P1, _ = em(Q, P, chunk, want_ll=False)
            Q2, P2, _ = em(Q1, P1, chunk, want_ll=False)
            if update_p:
                rows = np.concatenate([np.arange(s, s + n) for s, n in
                                       zip(engine.starts[chunk], engine.lengths[chunk])])
                trip = ([Q, P[rows]], [Q1, P1[rows]], [Q2, P2[rows]])
            else:
                trip = ([Q], [Q1], [Q2])
            alpha = _extrapolate(*trip, step_max=64.0)
            Qn = _jump(Q, Q1, Q2, alpha)
            if update_p:
                Pn = P2  # rows outside the batch equal P
                Pn[rows] = _jump(P[rows], P1[rows], P2[rows], alpha)
            else:
                Pn = P
            Q, P = clean(Qn, Pn)
        Q_next, P_next, ll = em(Q, P)
        if best is not None and ll < best[2]:
            Q, P, ll = best
            Q_next, P_next = Q, P
            nb = nb // 2
        else:
            if ll - ll_prev < batch_tol * abs(ll):
                nb = nb // 2
            best = (Q, P, ll)
        report("EM-batch", t0, ll, ll_prev, nb)
        ll_prev = ll
        Q, P = Q_next, P_next
    if len(history) >= max_iter:
        # the mini-batch epochs used up the iteration limit: report the
        # log-likelihood of the iterate returned
        return Q, P, engine.loglik(Q, P), len(history), False, history
    if accel == "squarem":
        return _squarem_phase(em, clean, Q, P, ll_prev, best, tol, max_iter, update_p,
                              history, report)
    # ---- Anderson-accelerated EM on all SNPs -------------------------------
    if np.isfinite(ll_prev):
        # the last epoch's full EM step is part of the batch phase: make sure
        # the stopping rule compares two iterates of this phase
        ll_prev = -np.inf
    converged = False
    ll = ll_prev
    m_q = Q.size

    def pack(Qx, Px):
        return np.concatenate([Qx.ravel(), Px.ravel()]) if update_p else Qx.ravel().copy()

    def unpack(x):
        Qx = x[:m_q].reshape(Q.shape).copy()
        Px = x[m_q:].reshape(P.shape).copy() if update_p else P
        return clean(Qx, Px)

    dF: list = []
    dG: list = []
    x_prev = F_prev = g_prev = None
    safe = None  # (Q, P) of the last EM image, the fallback
    small = 0
    t0 = time.perf_counter()
    Qf, Pf, ll_cur = em(Q, P)
    while True:
        if np.isfinite(ll_prev) and ll_cur < ll_prev and safe is not None:
            # the mixed step lowered the likelihood: restart from the EM image
            engine.restarts += 1
            dF.clear()
            dG.clear()
            x_prev = F_prev = g_prev = None
            Q, P = safe
            safe = None
            Qf, Pf, ll_cur = em(Q, P)
            continue
        if len(history) >= max_iter:
            break
        delta = ll_cur - ll_prev
        report("EM", t0, ll_cur, ll_prev, 1)
        small = small + 1 if (np.isfinite(ll_prev) and delta < tol) else 0
        if small >= patience:
            converged = True
            ll = ll_cur
            break
        if ll_cur > (best[2] if best is not None else -np.inf):
            best = (Q, P, ll_cur)
        ll = ll_cur
        ll_prev = ll_cur
        t0 = time.perf_counter()
        x = pack(Q, P)
        Fx = pack(Qf, Pf)
        g = Fx - x
        if g_prev is not None:
            dG.append(g - g_prev)
            dF.append(Fx - F_prev)
            if len(dG) > memory:
                dG.pop(0)
                dF.pop(0)
        g_prev, F_prev = g, Fx
        safe = (Qf, Pf)
        if dG:
            DG = np.column_stack(dG)
            gram = DG.T @ DG
            gram += 1e-12 * np.trace(gram) * np.eye(len(dG))
            try:
                gamma = np.linalg.solve(gram, DG.T @ g)
                x_new = Fx - np.column_stack(dF) @ gamma
            except np.linalg.LinAlgError:
                x_new = Fx
            Q, P = unpack(x_new)
        else:
            Q, P = Qf, Pf
        Qf, Pf, ll_cur = em(Q, P)
    if not converged and best is not None and best[2] > ll:
        Q, P, ll = best
    return Q, P, float(ll), len(history), converged, history


def _squarem_phase(em, clean, Q, P, ll_prev, best, tol, max_iter, update_p, history,
                   report):
    """Guarded SQUAREM (S3) with backtracking; 2-3 passes per iteration."""
    ll_prev = -np.inf
    step_max = 1e6
    converged = False
    ll = -np.inf
    small = 0
    while len(history) < max_iter:
        t0 = time.perf_counter()
        Q1, P1, ll0 = em(Q, P)
        delta = ll0 - ll_prev
        report("EM", t0, ll0, ll_prev, 1)
        ll = ll0
        small = small + 1 if (np.isfinite(ll_prev) and delta < tol) else 0
        if small >= 1:
            converged = True
            break
        ll_prev = ll0
        Q2, P2, ll1 = em(Q1, P1)
        xs = ([Q, P], [Q1, P1], [Q2, P2]) if update_p else ([Q], [Q1], [Q2])
        alpha = _extrapolate(*xs, step_max=step_max)
        accepted = False
        while alpha < -1.0:
            Qj = _jump(Q, Q1, Q2, alpha)
            Pj = _jump(P, P1, P2, alpha) if update_p else P
            Qj, Pj = clean(Qj, Pj)
            Q3, P3, llj = em(Qj, Pj)
            if llj >= ll0:
                Q, P = Q3, P3
                accepted = True
                if alpha <= -step_max + 1e-9:
                    step_max *= 4.0
                break
            alpha = (alpha - 1.0) / 2.0
            step_max = max(4.0, step_max / 2.0)
        if not accepted:
            Q, P = Q2, P2
    return Q, P, float(ll), len(history), converged, history


def default_batches(n_snps: int, block_size: int = 64) -> int:
    """Initial mini-batch count: a power of two <= 32 with >= 8 blocks per batch."""
    n_blocks = max(1, -(-n_snps // block_size))
    b = 1
    while b * 2 <= 32 and n_blocks // (b * 2) >= 8:
        b *= 2
    return b


def start_values(G, K, *, Q0=None, P0=None, init="svd", seed=None):
    """Starting (Q, P, label) for a fit, completing a partial start.

    Returns float64 arrays inside the parameter box.
    """
    m, n = G.shape
    if Q0 is not None and P0 is not None:
        Q, P = check_params(Q0, P0, m, n)
        return Q, P, "given"
    if Q0 is not None:
        Q = np.asarray(Q0, dtype=np.float64)
        return (*check_params(Q, p_given_q(G, Q), m, n), "given Q")
    if P0 is not None:
        P = np.asarray(P0, dtype=np.float64)
        return (*check_params(q_given_p(G, P), P, m, n), "given P")
    if init == "svd":
        Q, P = svd_init(G, K, seed=seed)
    elif init == "random":
        Q, P = random_init(m, n, K, seed=seed)
    else:
        raise UsageError(f"init must be one of {_INITS}, got {init!r}")
    Q, P = check_params(Q, P, m, n)
    return Q, P, init


def fit_ml(
    dosage,
    K: int,
    *,
    Q0=None,
    P0=None,
    init: str = "svd",
    tol: float = 1e-4,
    max_iter: int = 1000,
    seed=None,
    callback: Callable[[IterationInfo], None] | None = None,
    threads: int | None = None,
    batches: int | None = None,
    accel: str = "squarem",
) -> MLResult:
    """Maximum-likelihood (Q, P) of ADMIXTURE's model by accelerated EM.

    Parameters
    ----------
    dosage : array_like or Genotypes, int8, shape (n_individuals, n_snps)
        Copies of the counted allele, -1 for missing (ignored).
    K : int
        Number of ancestral components (>= 1).
    Q0 : array_like, float, shape (n_individuals, K), optional
        Starting proportions (e.g. the spectral estimate).
    P0 : array_like, float, shape (n_snps, K), optional
        Starting frequencies. If only one of Q0/P0 is given the other is
        completed by least squares.
    init : {"svd", "random"}
        Start used when neither Q0 nor P0 is given: truncated SVD + ALS
        (default) or random (``Q ~ Dirichlet(1)``, ``P ~ U(0, 1)``).
    tol : float
        Stop when an iteration gains less than this log-likelihood
        (ADMIXTURE's ``-C``, default 1e-4).
    max_iter : int
        Iteration limit; reaching it emits :class:`ConvergenceWarning`.
    seed : int, optional
        Seed for the start and the mini-batch order; same seed, same result
        (at a fixed thread count).
    callback : callable, optional
        Called with an :class:`IterationInfo` after every iteration; the same
        information is logged at INFO on logger ``"admixspec"`` as
        :func:`format_iteration` lines.
    threads : int, optional
        Threads for the numba kernels (and BLAS); default: numba's setting.
    batches : int, optional
        Initial number of mini-batches (default: :func:`default_batches`);
        1 disables the mini-batch phase.
    accel : {"squarem", "anderson"}
        Acceleration of the full-data EM phase (see the module notes).

    Returns
    -------
    MLResult

    Examples
    --------
    >>> from admixspec import simulate_balding_nichols, q_error
    >>> sim = simulate_balding_nichols(50, 2000, 2, fst=0.2, alpha=0.5, seed=1)
    >>> res = fit_ml(sim.genotypes.dosage, 2, seed=0)
    >>> res.converged, q_error(sim.Q, res.Q) < 0.05
    (True, True)
    """
    t_start = time.perf_counter()
    G = check_dosage(dosage)
    K = int(K)
    if K < 1:
        raise UsageError(f"K must be >= 1, got {K}")
    if tol <= 0:
        raise UsageError(f"tol must be positive, got {tol}")
    if accel not in ("squarem", "anderson"):
        raise UsageError(f"accel must be 'squarem' or 'anderson', got {accel!r}")
    m, n = G.shape
    with thread_limit(threads):
        engine = Engine(G, K)
        Q, P, how = start_values(G, K, Q0=Q0, P0=P0, init=init, seed=seed)
        t_init = time.perf_counter() - t_start
        if K == 1:
            # closed form: P = observed frequency, Q = 1
            Q1, P1, _ = engine.em(Q, P, want_ll=False)
            ll = engine.loglik(Q1, P1)
            info = IterationInfo(1, "EM", time.perf_counter() - t_start, ll,
                                 float("nan"), 1)
            if callback is not None:
                callback(info)
            logger.info(format_iteration(info))
            total = time.perf_counter() - t_start
            return MLResult(Q1, P1, ll, 1, True, [info],
                            {"init": t_init, "em": total - t_init, "total": total},
                            engine.passes, how)
        nb = default_batches(n) if batches is None else max(1, int(batches))
        rng = np.random.default_rng(seed)
        Q, P, ll, n_iter, converged, history = accelerated_em(
            engine, Q, P, tol=tol, max_iter=max_iter, batches=nb, rng=rng,
            callback=callback, accel=accel,
        )
    total = time.perf_counter() - t_start
    if not converged:
        warnings.warn(
            f"ML fit stopped at max_iter={max_iter} before the log-likelihood gain "
            f"fell below tol={tol}",
            ConvergenceWarning,
            stacklevel=2,
        )
    return MLResult(Q, P, ll, n_iter, converged, history,
                    {"init": t_init, "em": total - t_init, "total": total},
                    engine.passes, how)
