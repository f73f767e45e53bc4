"""Maximum-likelihood fit of ADMIXTURE's model: block relaxation with quasi-Newton steps.

Algorithm (all passes are fused, SNP-blocked, multi-threaded numba kernels):

1. **Start** from the given (Q, P), or from
   :func:`admixspec.ml.start.subspace_starts` (``init="svd"``, default:
   randomized SVD, then exact constrained ALS in its subspace) or
   :func:`admixspec.ml.initial.random_init` (``init="random"``, the
   baseline). When it chooses its own start, :func:`fit_ml` screens
   ``starts`` (default 5) of them: each runs ``screen_iter`` accelerated
   iterations (SVD starts: none, they are ranked by their own
   log-likelihood; random starts: 5) and the one with the highest
   log-likelihood runs on. The likelihood can have several local maxima
   that no local step rule tells apart -- on the HapMap3 tutorial data at
   K = 4, 5 they differ in which small family of close relatives gets a
   component of its own, and a start's last directions (drawn from a flat
   bulk of singular values) pick one at random; see
   :func:`admixspec.ml.start.subspace_starts` and docs/benchmarks.md.
   ``extra_starts`` are screened beside them.
2. **Mini-batch EM warm-up** (``batches > 1``; the default only for
   ``accel="squarem"``): each epoch visits the SNP blocks in a random order
   split into ``B`` batches and, per batch, takes one SQUAREM step of the EM
   restricted to the batch's SNPs; an epoch ends with a full EM step, whose
   pass also yields the exact log-likelihood. When an epoch gains less than
   ``batch_tol`` relative, ``B`` is halved; at ``B = 1`` the phase ends.
3. **Main phase.** ``accel="newton"`` (default): ADMIXTURE's block relaxation
   (Alexander, Novembre & Lange 2009; :mod:`admixspec.ml.newton`) -- one
   constrained Newton step per SNP row of P, then per individual row of Q,
   from one read of the genotypes -- accelerated by the quasi-Newton scheme
   of Zhou, Alexander & Lange (2011) with ``secants`` (3) secant pairs
   (:class:`admixspec.ml.quasi_newton.SecantChain`); ``secants=1`` is
   SQUAREM's squared extrapolation (Varadhan & Roland 2008), the one-secant
   case (:class:`_QNChain`). Two passes per iteration either way
   (:func:`_newton_qn_phase`). ``accel="squarem"``: the EM map under
   guarded SQUAREM with backtracking, 2-3 passes per iteration (the engine
   before block relaxation, kept as a fallback and for comparison; on the
   HapMap3 tutorial data it needs 4-10x more passes).
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
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..core.exceptions import ConvergenceWarning, UsageError
from ..core.frequencies import least_squares_p, least_squares_q
from ..core.parameters import P_MAX, P_MIN, check_params, clip_proportions
from ..core.result import FitResult
from ..core.threads import serial_blas, thread_limit
from ..core.validation import SEED, Dosage, Interval, Options, validate_params
from .initial import random_init
from .likelihood import Engine, make_engine
from .newton import BlockNewton
from .quasi_newton import MapChain, SecantChain
from .start import subspace_starts

__all__ = [
    "IterationInfo",
    "Maximization",
    "MLResult",
    "fit_ml",
    "format_iteration",
    "format_summary",
]

logger = logging.getLogger("admixspec")

_INITS = ("svd", "random")

#: Starts that :func:`fit_ml` screens when it chooses its own start. HapMap3
#: at K = 4, 5 has several local maxima (the smallest component given to one
#: or another family of close relatives): 10 subspace starts at K = 4 ended in
#: 6 of them. Ranked by their own log-likelihood, 5 starts ended at K = 4 (on
#: the polymorphic SNPs, as fit_admixture fits them) at -3,788,622.4 to
#: -3,788,622.5 for seeds 0, 2, 42 and 43, -3,788,727.9 for seed 3 (all above
#: ADMIXTURE 1.3's published optimum, -3,789,058.7) and -3,789,095.6 for seed 1
#: (about 37 units below it); 1 of the 20 starts of seeds 0, 1, 2 and 42 reached
#: ADAMIXTURE's -3,788,606.4. Ranking after 5 or 10 iterations instead kept
#: seed 1's poor start too (benchmarks/ml_start.py; docs/benchmarks.md): on
#: such data several seeds (``run --runs``) are the remedy, not the screen.
DEFAULT_STARTS = 5
#: Iterations each screened start runs before the best is kept (2-3 passes
#: each): one for SVD starts, 5 for random starts, whose own log-likelihoods
#: say little. An SVD + ALS start is fitted in a (K - 1)-dimensional subspace,
#: and one accelerated iteration tells its basin better than its own
#: log-likelihood: with every start of 29 seeds run to its end (1000 Genomes
#: K = 5 and 8, HapMap3 K = 4 and 5, ADAMIXTURE's demo data K = 7;
#: benchmarks/ml_screen.py --every-start), the start kept after one iteration
#: ended higher than the one its own log-likelihood ranked first for 6 seeds
#: and lower for 1 (1000 Genomes K = 8: 3 of 4 seeds in the 850-unit higher
#: mode, against 1 of 4), for 4 more iterations of the fit.
SCREEN_ITER = 1
SCREEN_ITER_RANDOM = 5
#: Secant pairs of the block-relaxation map's quasi-Newton acceleration
#: (ADMIXTURE's and ADAMIXTURE's default). On 1000 Genomes at K = 5 it
#: converged in 53 iterations from the start SQUAREM's step (1 pair) needed
#: 87 for, at a 0.01 higher log-likelihood (docs/benchmarks.md).
DEFAULT_SECANTS = 3


class IterationInfo(NamedTuple):
    """What one iteration reports (passed to ``callback``).

    Attributes
    ----------
    iteration : int
        1-based iteration number.
    stage : str
        ``"QN"`` for an accelerated block-relaxation step, ``"EM"`` for an
        accelerated EM step (or a block-relaxation iteration that fell back
        to the EM map), ``"EM-batch"`` for a mini-batch epoch.
    elapsed : float
        Seconds spent in this iteration (ADMIXTURE's ``Elapsed``).
    loglik : float
        Log-likelihood of the current iterate.
    delta : float
        Gain over the previous iteration's log-likelihood.
    batches : int
        Number of mini-batches used (1 in the full phase).
    start : int
        Which of the screened starts the iteration advanced (0 when there
        is one; see ``fit_ml``'s ``starts``).
    ridge_passes : int
        Passes of the search along the ridge that ended the iteration (0
        when none ran; every tenth iteration of a block-relaxation chain,
        :meth:`admixspec.ml.quasi_newton.MapChain.ridge_search`).
    ridge_step : float
        How far that search moved, in displacements of the last ten
        iterations (0 when it did not move); ``loglik`` and ``delta``
        include the move.
    """

    iteration: int
    stage: str
    elapsed: float
    loglik: float
    delta: float
    batches: int
    start: int = 0
    ridge_passes: int = 0
    ridge_step: float = 0.0


class Maximization(NamedTuple):
    """Where :func:`accelerated_em` stopped.

    Attributes
    ----------
    Q : numpy.ndarray, float64, shape (n_individuals, K)
    P : numpy.ndarray, float64, shape (n_snps, K)
    loglik : float
        Log-likelihood of (Q, P).
    n_iter : int
        Iterations run (every screened start's included).
    converged : bool
        Whether ADMIXTURE's stopping rule was met before the iteration limit.
    history : list of IterationInfo
    """

    Q: np.ndarray
    P: np.ndarray
    loglik: float
    n_iter: int
    converged: bool
    history: list


def format_iteration(info: IterationInfo) -> str:
    """ADMIXTURE-style progress line for one iteration.

    Block-relaxation iterations are labelled ``(QN/Block)`` as in ADMIXTURE's
    logs, EM iterations ``(EM)``; an iteration of a screened start other than
    the first names it (``(QN/Block, start 2)``), and one that a search along
    the ridge moved says how far (``(QN/Block, ridge x0.5)``).

    Examples
    --------
    >>> format_iteration(IterationInfo(3, "EM", 0.6871, -4216220.5, 40582.9, 1))
    '3 (EM) \\tElapsed: 0.687\\tLoglikelihood: -4.21622e+06\\t(delta): 40582.9'
    >>> info = IterationInfo(20, "QN", 0.5, -6683690.3, 1.2, 1, 0, 3, 0.5)
    >>> format_iteration(info).split("\\t")[0]
    '20 (QN/Block, ridge x0.5) '
    """
    label = "QN/Block" if info.stage == "QN" else "EM"
    if info.start:
        label += f", start {info.start}"
    if info.ridge_step:
        label += f", ridge x{info.ridge_step:g}"
    return (
        f"{info.iteration} ({label}) \tElapsed: {info.elapsed:.3f}\t"
        f"Loglikelihood: {info.loglik:g}\t(delta): {info.delta:g}"
    )


@dataclass
class MLResult(FitResult):
    """Result of :func:`fit_ml` (and of the supervised fit).

    The :class:`~admixspec.core.result.FitResult` fields (Q, P, loglik, n_iter,
    converged, history, timings, diagnostics), where ``n_iter`` counts
    mini-batch epochs plus full accelerated steps and ``timings`` holds
    ``init``, ``em`` and ``total``; and:

    Attributes
    ----------
    n_passes : float
        Passes over the data (one pass = every genotype read from memory
        once; a block-relaxation map is one pass, see
        :mod:`admixspec.ml.newton`).
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
# the accelerated core (shared with projection and supervised fits)
# --------------------------------------------------------------------------
_ACCELS = ("newton", "squarem")


def _extrapolate(x0, x1, x2, step_max):
    """SQUAREM S3 step length from three iterates (lists of arrays)."""
    r2 = 0.0
    v2 = 0.0
    for a, b, c in zip(x0, x1, x2, strict=True):
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


class _Run:
    """The maps, the box, and the iteration log of one fit.

    ``em`` and ``newton`` map (Q, P) to the next iterate and return the
    log-likelihood of their input; ``clean`` moves an extrapolated point back
    into the parameter box; ``report`` logs one iteration.
    """

    def __init__(self, engine, update_p, fixed, callback):
        self.engine = engine
        self.update_p = update_p
        self.fixed = fixed
        self.callback = callback
        self.history: list[IterationInfo] = []
        self._last = time.perf_counter()
        self._newton = None

    def em(self, Q, P, blocks=None, want_ll=True):
        fixed_rows = None if self.fixed is None else self.fixed.pair
        return self.engine.em(Q, P, blocks=blocks, update_p=self.update_p,
                              want_ll=want_ll, Q_fixed_rows=fixed_rows)

    def newton(self, Q, P):
        if self._newton is None:
            rows = None if self.fixed is None else self.fixed.rows
            # an engine on another device brings its own block-relaxation map
            newton_map = getattr(self.engine, "newton_map", BlockNewton)
            self._newton = newton_map(self.engine, frozen_rows=rows)
        return self._newton.step(Q, P, update_p=self.update_p)

    def clean(self, Q, P):
        if self.update_p:
            np.clip(P, P_MIN, P_MAX, out=P)
        clip_proportions(Q)
        if self.fixed is not None:
            self.fixed.apply(Q)
        return Q, P

    def params(self, Q, P):
        """The arrays that move (P only when it is estimated)."""
        return [Q, P] if self.update_p else [Q]

    def report(self, stage, ll, prev, nb=1, start=0, ridge=(0, 0.0)):
        now = time.perf_counter()
        elapsed, self._last = now - self._last, now
        info = IterationInfo(len(self.history) + 1, stage, elapsed, ll,
                             ll - prev if np.isfinite(prev) else float("nan"), nb, start,
                             *ridge)
        self.history.append(info)
        if logger.isEnabledFor(logging.INFO):
            logger.info(format_iteration(info))
        if self.callback is not None:
            self.callback(info)

    @property
    def exhausted(self):
        return len(self.history) >= self._max_iter

    def limit(self, max_iter):
        self._max_iter = max_iter
        return self


@serial_blas()
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
    accel: str = "newton",
    other_starts=(),
    screen_iter: int = 0,
    secants: int | None = None,
):
    """Maximise the likelihood from (Q, P) until ADMIXTURE's stopping rule holds.

    ``accel="newton"`` accelerates the block-relaxation Newton map
    (:func:`_newton_qn_phase`), screening (Q, P) and ``other_starts`` (a
    sequence of (Q, P)) for ``screen_iter`` iterations each when there are
    any, with ``secants`` secant pairs (:data:`DEFAULT_SECANTS` when None;
    1 is SQUAREM's step, :class:`_QNChain`; more, Zhou, Alexander & Lange's
    quasi-Newton step, :class:`admixspec.ml.quasi_newton.SecantChain`);
    ``"squarem"`` runs the EM's mini-batch warm-up
    (:func:`_minibatch_phase`, when ``batches > 1``) and then SQUAREM on the
    EM map (:func:`_squarem_em_phase`). P is held fixed when ``update_p`` is
    false, and the rows of ``fixed`` keep their values.

    Returns
    -------
    Maximization
    """
    run = _Run(engine, update_p, fixed, callback).limit(max_iter)
    Q, P = _minibatch_phase(run, Q, P, int(batches), batch_tol, rng)
    if run.exhausted:
        # the mini-batch epochs used up the iteration limit: report the
        # log-likelihood of the iterate returned
        return Maximization(Q, P, engine.loglik(Q, P), len(run.history), False,
                            run.history)
    if accel == "newton":
        return _newton_qn_phase(run, [(Q, P), *other_starts], tol, screen_iter,
                                DEFAULT_SECANTS if secants is None else int(secants))
    return _squarem_em_phase(run, Q, P, tol)


class _QNChain(MapChain):
    """One SQUAREM-accelerated block-relaxation run; two passes per iteration.

    The state is an iterate x with its log-likelihood and its image F(x)
    under the Newton map, both known from one pass (made on construction).
    An iteration (:meth:`advance`) computes F(F(x)) (one pass, which also
    gives the log-likelihood of F(x)), extrapolates from (x, F(x), F(F(x)))
    as SQUAREM does, and evaluates the map at the jump (one pass). The jump
    becomes the next iterate when its log-likelihood is at least that of
    F(x); otherwise F(x) does, whose image is already known. A Newton step is
    not guaranteed to climb: when F(x) falls below x, that iteration takes the
    EM map instead (an MM step, which never descends).
    """

    def __init__(self, run, Q, P):
        super().__init__(run, Q, P)
        self.step_max = 64.0

    def accelerate(self, Q1, P1, Q2, P2, ll1):
        """SQUAREM's jump from (x, F(x), F(F(x))), kept if at least as good as F(x)."""
        run, Q, P = self.run, self.Q, self.P
        alpha = _extrapolate(run.params(Q, P), run.params(Q1, P1),
                             run.params(Q2, P2), step_max=self.step_max)
        Qj, Pj = run.clean(_jump(Q, Q1, Q2, alpha),
                           _jump(P, P1, P2, alpha) if run.update_p else P)
        ll_new, kept = self.keep_better(Qj, Pj, Q1, P1, Q2, P2, ll1)
        if not kept:
            self.step_max = max(4.0, self.step_max / 4.0)
        elif alpha <= -self.step_max + 1e-9:
            self.step_max *= 4.0
        return ll_new


def _newton_qn_phase(run, starts, tol, screen_iter=0, secants=1):
    """Accelerated block relaxation from the best of several screened starts.

    Every start in ``starts`` (a list of (Q, P)) runs ``screen_iter``
    iterations of its chain (:class:`~admixspec.ml.quasi_newton.SecantChain`
    with ``secants`` pairs, or :class:`_QNChain` for one; fewer when it
    converges first); the one
    with the highest log-likelihood then runs until ADMIXTURE's rule holds.
    Every pass of every start counts in the engine's passes and every
    iteration in the history (``IterationInfo.start`` says whose).
    """
    if secants > 1:
        chains = [SecantChain(run, Q, P, secants) for Q, P in starts]
    else:
        chains = [_QNChain(run, Q, P) for Q, P in starts]
    for _ in range(screen_iter if len(chains) > 1 else 0):
        for k, chain in enumerate(chains):
            if not chain.converged and not run.exhausted:
                stage, prev, ll = chain.advance(tol)
                run.report(stage, ll, prev, start=k, ridge=chain.ridge)
        if all(c.converged for c in chains) or run.exhausted:
            break
    best = max(range(len(chains)), key=lambda k: chains[k].ll)
    chain = chains[best]
    if len(chains) > 1:
        logger.info("screened %d starts: continuing start %d (log-likelihood %g)",
                    len(chains), best, chain.ll)
    while not chain.converged and not run.exhausted:
        stage, prev, ll = chain.advance(tol)
        run.report(stage, ll, prev, start=best, ridge=chain.ridge)
    return Maximization(chain.Q, chain.P, float(chain.ll), len(run.history),
                        chain.converged,
            run.history)


def _minibatch_phase(run, Q, P, nb, batch_tol, rng):
    """EM epochs over shrinking mini-batches of SNP blocks (a warm start).

    Each epoch visits the blocks in a random order split into ``nb`` batches,
    takes one SQUAREM step per batch, and ends with a full EM step; ``nb`` is
    halved when an epoch gains less than ``batch_tol`` relative (or loses),
    and the phase ends at ``nb = 1``. Returns the last iterate.
    """
    engine = run.engine
    # more batches than SNP blocks left batches empty (NumPy's concatenate error)
    nb = min(nb, engine.n_blocks)
    if nb > 1 and rng is None:
        rng = np.random.default_rng(0)
    ll_prev = -np.inf
    best = None
    while nb > 1 and not run.exhausted:
        order = rng.permutation(engine.n_blocks)
        for chunk in np.array_split(order, nb):
            Q, P = _minibatch_step(run, Q, P, np.sort(chunk))
        Q_next, P_next, ll = run.em(Q, P)
        if best is not None and ll < best[2]:
            Q, P, ll = best
            Q_next, P_next = Q, P
            nb = nb // 2
        else:
            if ll - ll_prev < batch_tol * abs(ll):
                nb = nb // 2
            best = (Q, P, ll)
        run.report("EM-batch", ll, ll_prev, nb)
        ll_prev = ll
        Q, P = Q_next, P_next
    return Q, P


def _minibatch_step(run, Q, P, chunk):
    """One SQUAREM step of the EM restricted to the SNP blocks ``chunk``."""
    engine = run.engine
    Q1, P1, _ = run.em(Q, P, chunk, want_ll=False)
    Q2, P2, _ = run.em(Q1, P1, chunk, want_ll=False)
    if not run.update_p:
        alpha = _extrapolate([Q], [Q1], [Q2], step_max=64.0)
        return run.clean(_jump(Q, Q1, Q2, alpha), P)
    rows = np.concatenate([np.arange(s, s + n) for s, n in
                           zip(engine.starts[chunk], engine.lengths[chunk],
                               strict=True)])
    alpha = _extrapolate([Q, P[rows]], [Q1, P1[rows]], [Q2, P2[rows]], step_max=64.0)
    Pn = P2  # rows outside the batch equal P
    Pn[rows] = _jump(P[rows], P1[rows], P2[rows], alpha)
    return run.clean(_jump(Q, Q1, Q2, alpha), Pn)


def _squarem_em_phase(run, Q, P, tol):
    """Guarded SQUAREM (S3) on the EM map with backtracking; 2-3 passes per iteration."""
    ll_prev = -np.inf
    step_max = 1e6
    converged = False
    ll = -np.inf
    while not run.exhausted:
        Q1, P1, ll0 = run.em(Q, P)
        run.report("EM", ll0, ll_prev)
        ll = ll0
        if np.isfinite(ll_prev) and ll0 - ll_prev < tol:
            converged = True
            break
        ll_prev = ll0
        Q2, P2, _ = run.em(Q1, P1)
        alpha = _extrapolate(run.params(Q, P), run.params(Q1, P1), run.params(Q2, P2),
                             step_max=step_max)
        accepted = False
        while alpha < -1.0:
            Qj, Pj = run.clean(_jump(Q, Q1, Q2, alpha),
                               _jump(P, P1, P2, alpha) if run.update_p else P)
            Q3, P3, llj = run.em(Qj, Pj)
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
    return Maximization(Q, P, float(ll), len(run.history), converged, run.history)


def default_batches(n_snps: int, block_size: int = 64) -> int:
    """Initial mini-batch count: a power of two <= 32 with >= 8 blocks per batch."""
    n_blocks = max(1, -(-n_snps // block_size))
    b = 1
    while b * 2 <= 32 and n_blocks // (b * 2) >= 8:
        b *= 2
    return b


def _given_start(array, name, shape, rows):
    """A given start (``Q0``, ``P0``) as float64, checked against the fit's shape.

    A start of another K was fitted at its own K without a word (the result
    had its columns, not K), one of other rows failed in a matrix product, and
    NaN in the SVD of the least squares that completes it.
    """
    try:
        array = np.asarray(array, dtype=np.float64)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be an array of numbers, got "
                         f"{type(array).__name__}") from None
    if array.shape != shape:
        raise UsageError(f"{name} must have shape {shape} ({rows} x K), got "
                         f"{array.shape}")
    if not np.all(np.isfinite(array)):
        raise UsageError(f"{name} must be finite")
    return array


def start_values(G, K, *, Q0=None, P0=None, init="svd", seed=None, starts=1):
    """The starts of a fit: a list of (Q, P) and the label of the first.

    The first start is the given one (completed by least squares when only
    ``Q0`` or ``P0`` is given) or ``init``'s; the other ``starts - 1`` are
    ``init`` starts: subspace ALS starts from seeds spawned from ``seed`` (a
    new randomized SVD each, :func:`admixspec.ml.start.subspace_starts`) or
    random starts from such seeds. Float64 arrays inside the parameter box.
    """
    m, n = G.shape
    first = []
    Q0 = None if Q0 is None else _given_start(Q0, "Q0", (m, K), "individuals")
    P0 = None if P0 is None else _given_start(P0, "P0", (n, K), "SNPs")
    if Q0 is not None and P0 is not None:
        first, how = [check_params(Q0, P0, m, n)], "given"
    elif Q0 is not None:
        first, how = [check_params(Q0, least_squares_p(G, Q0), m, n)], "given Q"
    elif P0 is not None:
        first, how = [check_params(least_squares_q(G, P0), P0, m, n)], "given P"
    else:
        how = init
    n_init = starts - len(first)
    if n_init <= 0:
        pairs = []
    elif init == "svd":
        pairs = subspace_starts(G, K, n_init, seed=seed)
    elif first:
        seeds = np.random.SeedSequence(seed).spawn(n_init)
        pairs = [random_init(m, n, K, seed=np.random.default_rng(s)) for s in seeds]
    else:
        seeds = np.random.SeedSequence(seed).spawn(n_init - 1)
        pairs = [random_init(m, n, K, seed=seed)] + [
            random_init(m, n, K, seed=np.random.default_rng(s)) for s in seeds]
    return first + [check_params(Q, P, m, n) for Q, P in pairs], how


@validate_params({
    "dosage": Dosage(),
    "K": Interval(int, 1),
    "init": Options(*_INITS),
    "tol": Interval(float, 0, closed="neither"),
    "max_iter": Interval(int, 1),
    "threads": Interval(int, 1, allow_none=True),
    "batches": Interval(int, 1, allow_none=True),
    "accel": Options(*_ACCELS),
    "starts": Interval(int, 1, allow_none=True),
    "screen_iter": Interval(int, 0, allow_none=True),
    "secants": Interval(int, 1, allow_none=True),
    "seed": SEED,
})
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
    accel: str = "newton",
    starts: int | None = None,
    screen_iter: int | None = None,
    extra_starts=(),
    secants: int | None = None,
) -> MLResult:
    """Maximum-likelihood (Q, P) of ADMIXTURE's model (block relaxation + quasi-Newton).

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
        Initial number of mini-batches of the EM warm-up (default: none for
        ``accel="newton"``, :func:`default_batches` for ``"squarem"``); 1
        disables the warm-up.
    accel : {"newton", "squarem"}
        The optimiser: ADMIXTURE's block relaxation (Newton steps for P and
        Q) accelerated by quasi-Newton steps (default), or the EM accelerated by
        SQUAREM after a mini-batch warm-up (see the module notes).
    starts : int, optional
        Starts screened by ``accel="newton"``: the given or ``init`` start
        plus ``starts - 1`` further ``init`` starts (see
        :func:`other_starts`) each run ``screen_iter`` iterations, and the
        one with the highest log-likelihood runs on to convergence (their
        passes and iterations all count). Default :data:`DEFAULT_STARTS`
        when neither ``Q0`` nor ``P0`` is given, else 1 (a given start is
        used as it is); always 1 for ``"squarem"``.
    screen_iter : int, optional
        Iterations of each start before the best is chosen (default
        :data:`SCREEN_ITER`, :data:`SCREEN_ITER_RANDOM` for
        ``init="random"``; 0 ranks the starts by their own log-likelihood,
        which costs one pass each).
    extra_starts : sequence of (Q0, P0)
        Further given starts, screened after the others (``accel="newton"``
        only); either array of a pair may be None (completed as ``Q0``/``P0``
        are). The result's ``diagnostics["start"]`` says
        which start the fit continued (``0`` is the first; the extra starts
        come last) and ``diagnostics["starts"]`` how many were screened.
    secants : int, optional
        Secant pairs of the quasi-Newton acceleration of ``accel="newton"``
        (default :data:`DEFAULT_SECANTS`; 1: SQUAREM's step).

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
    G = dosage
    given = Q0 is not None or P0 is not None
    if starts is None:
        starts = DEFAULT_STARTS if accel == "newton" and not given else 1
    extra_starts = list(extra_starts)
    if accel != "newton" and starts + len(extra_starts) > 1:
        raise UsageError(f"starts must be 1 for accel='squarem', got "
                         f"{starts} (+{len(extra_starts)} extra)")
    m, n = G.shape
    with thread_limit(threads):
        engine = make_engine(G, K)
        pairs, how = start_values(G, K, Q0=Q0, P0=P0, init=init, seed=seed,
                                  starts=1 if K == 1 else int(starts))
        if K > 1:
            pairs += [start_values(G, K, Q0=Qe, P0=Pe, starts=1)[0][0]
                      for Qe, Pe in extra_starts]
        Q, P = pairs[0]
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
                            engine.passes, how, diagnostics={"starts": 1, "start": 0})
        if batches is None:
            # the warm-up saves EM passes, not block-relaxation ones (on the
            # HapMap3 tutorial data it made K = 4, 5 take 3-10x more passes)
            batches = default_batches(n) if accel == "squarem" else 1
        nb = max(1, int(batches))
        rng = np.random.default_rng(seed)
        fit = accelerated_em(
            engine, Q, P, tol=tol, max_iter=max_iter, batches=nb, rng=rng,
            callback=callback, accel=accel, other_starts=pairs[1:],
            screen_iter=(screen_iter if screen_iter is not None else
                         SCREEN_ITER_RANDOM if init == "random" else SCREEN_ITER),
            secants=secants,
        )
    total = time.perf_counter() - t_start
    if not fit.converged:
        warnings.warn(
            f"ML fit stopped at max_iter={max_iter} before the log-likelihood gain "
            f"fell below tol={tol}",
            ConvergenceWarning,
            stacklevel=2,
        )
    # the start continued: the one whose last reported iterate is the result
    chosen = next((h.start for h in reversed(fit.history) if h.loglik == fit.loglik), 0)
    return MLResult(fit.Q, fit.P, fit.loglik, fit.n_iter, fit.converged, fit.history,
                    {"init": t_init, "em": total - t_init, "total": total},
                    engine.passes, how,
                    diagnostics={"starts": len(pairs), "start": int(chosen)})
