"""Quasi-Newton acceleration of the block-relaxation map with several secants.

Zhou, Alexander & Lange (2011, "A quasi-Newton acceleration for
high-dimensional optimization algorithms", Stat. Comput. 21:261-273)
accelerate a fixed-point map F by approximating its differential from the
last ``q`` secant pairs ``u = F(x) - x``, ``v = F(F(x)) - F(x)`` (columns of
U and V): the Newton step for ``x = F(x)`` with the minimum-norm
differential ``M = V (U^T U)^{-1} U^T`` is

    x_new = F(x) - V (U^T (U - V))^{-1} U^T (x - F(x)),

a ``q x q`` solve. SQUAREM's step is the one-secant relative;
ADMIXTURE uses ``q = 3`` by default and ADAMIXTURE its ``--Q_hist 3``.

:class:`SecantChain` runs this on ADMIXTURE's block-relaxation map with
the same two passes per iteration and the same safeguards as
:class:`admixspec.ml.refine._QNChain`: F(x) is known from the previous
pass; one pass computes F(F(x)) (and the log-likelihood of F(x)); one pass
evaluates the map at the quasi-Newton point (and its log-likelihood), which
is kept when it is at least as good as F(x), else F(x) is, whose image is
already known. Where the map expands along its last step (:func:`expanding`)
that point heads back to the saddle the iterates are leaving, and the
iteration moves to F(x) without trying it. When F(x) falls below x (a Newton
step need not climb), the iteration takes the EM map instead and the secant
history restarts.

Both chains also *search along the ridge* (:meth:`MapChain.ridge_search`):
near a saddle of the likelihood the fixed-point steps creep along one
direction at a slowly growing rate (the 379 Europeans of 1000 Genomes at
K = 5: 750 iterations gaining 0.003-0.02 units each, then a climb of 830
units), and a Newton step on ``x = F(x)`` heads for the saddle, which is a
fixed point too. Every :data:`RIDGE_WINDOW` iterations the chain tries
``x + a d`` for the displacement ``d`` over that window, ``a`` =
:data:`RIDGE_FIRST_STEP` doubled while the log-likelihood rises (one pass
each), and moves to the best point if it beats x. A try that fails costs
one pass in ten iterations' twenty.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

#: Iterations between two ridge searches, and over which the displacement is taken.
RIDGE_WINDOW = 10
#: The first step along the ridge, in displacements of the window: a whole one
#: overshot on most tries (the 379 Europeans at K = 5: 6 moves in 47 tries,
#: against 23 in 41 from a quarter).
RIDGE_FIRST_STEP = 0.25
#: Doublings of the step along the ridge, at most.
RIDGE_DOUBLINGS = 10

__all__ = ["MapChain", "SecantChain", "expanding"]


class MapChain(ABC):
    """State shared by the accelerated block-relaxation runs.

    Holds an iterate x = (Q, P), its log-likelihood and its image F(x) under
    the block-relaxation map (one pass, made on construction);
    :meth:`restart` is the step taken when F(x) falls below x (a Newton step
    need not climb; the EM map, an MM step, never descends); subclasses
    supply :meth:`accelerate`.
    """

    def __init__(self, run, Q, P):
        self.run = run
        self.Q, self.P = Q, P
        self.Fx = run.newton(Q, P)
        self.ll = self.Fx[2]
        self.converged = False
        # where the current window began; no copy: the chain never writes into
        # an iterate, each step makes new arrays
        self.anchor = (Q, P)
        self.window = 0
        #: the last iteration's ridge search: (passes, step taken; 0 if it did not move)
        self.ridge = (0, 0.0)

    def advance(self, tol):
        """One iteration; returns ``(stage, loglik before, loglik after)``.

        Computes F(F(x)) (one pass, which also gives the log-likelihood of
        F(x)); when F(x) fell below x, takes the EM map's image of x instead
        (:meth:`restart`), else the subclass's accelerated step
        (:meth:`accelerate`, one more pass).
        """
        Q1, P1 = self.Fx[0], self.Fx[1]
        Q2, P2, ll1 = self.run.newton(Q1, P1)
        if ll1 < self.ll:
            ll_new, stage = self.restart(), "EM"
        else:
            ll_new, stage = self.accelerate(Q1, P1, Q2, P2, ll1), "QN"
        ll_prev, self.ll = self.ll, ll_new
        self.converged = ll_new - ll_prev < tol
        self.window += 1
        self.ridge = (0, 0.0)
        if not self.converged and self.window == RIDGE_WINDOW:
            self.ridge = self.ridge_search()
            self.anchor, self.window = (self.Q, self.P), 0
        return stage, ll_prev, self.ll

    def ridge_search(self):
        """Step along the last window's displacement while the log-likelihood rises.

        Returns ``(passes, step)``: the passes it made and the multiple of
        the displacement it moved by (0 when no point beat x; see the module
        notes). A move replaces x, its image and its log-likelihood.
        """
        run = self.run
        here, there = run.params(self.Q, self.P), run.params(*self.anchor)
        moves = [a - b for a, b in zip(here, there, strict=True)]
        best, best_ll, passes = None, self.ll, 0
        for doubling in range(RIDGE_DOUBLINGS + 1):
            step = RIDGE_FIRST_STEP * 2.0 ** doubling
            Q = self.Q + step * moves[0]
            P = self.P + step * moves[1] if run.update_p else self.P
            Q, P = run.clean(Q, P)
            image = run.newton(Q, P)
            passes += 1
            if not image[2] > best_ll:
                break
            best, best_ll = (Q, P, image, step), image[2]
        if best is None:
            return passes, 0.0
        self.Q, self.P, self.Fx, step = best
        self.ll = best_ll
        return passes, step

    def restart(self):
        """Move to the EM map's image of x; returns its log-likelihood."""
        run = self.run
        run.engine.restarts += 1
        Q1, P1, _ = run.em(self.Q, self.P)
        self.Fx = run.newton(Q1, P1)
        self.Q, self.P = Q1, P1
        return self.Fx[2]

    def keep_better(self, Qj, Pj, Q1, P1, Q2, P2, ll1):
        """Evaluate the map at the jump (one pass) and move to it if it is at
        least as good as F(x), else to F(x); returns (new loglik, jump kept)."""
        Fj = self.run.newton(Qj, Pj)
        if Fj[2] >= ll1:
            self.Q, self.P, self.Fx = Qj, Pj, Fj
            return Fj[2], True
        self.Q, self.P, self.Fx = Q1, P1, (Q2, P2, ll1)
        return ll1, False

    @abstractmethod
    def accelerate(self, Q1, P1, Q2, P2, ll1):
        """Move x to an accelerated point; returns its log-likelihood.

        ``(Q1, P1)`` is F(x), ``(Q2, P2)`` F(F(x)) and ``ll1`` the
        log-likelihood of F(x).
        """


class SecantChain(MapChain):
    """One quasi-Newton-accelerated block-relaxation run with ``secants`` pairs.

    Parameters
    ----------
    run : admixspec.ml.refine._Run
        The maps, the parameter box and the iteration log.
    Q : numpy.ndarray, float64, shape (n_individuals, K)
    P : numpy.ndarray, float64, shape (n_snps, K)
        The start (inside the box).
    secants : int
        Secant pairs kept (the oldest is dropped first).

    Attributes
    ----------
    Q, P : numpy.ndarray
        The current iterate.
    ll : float
        Its log-likelihood.
    converged : bool
        Whether the last iteration gained less than ``tol``.
    """

    def __init__(self, run, Q, P, secants=3):
        super().__init__(run, Q, P)
        self.secants = int(secants)
        self.U: list[np.ndarray] = []
        self.V: list[np.ndarray] = []

    def _flat(self, Q, P):
        return np.concatenate([a.ravel() for a in self.run.params(Q, P)])

    def _unflat(self, x, Q, P):
        """(Q, P) from a flat vector, P as given when it is not estimated."""
        nq = Q.size
        Qn = x[:nq].reshape(Q.shape).copy()
        Pn = x[nq:].reshape(P.shape).copy() if self.run.update_p else P
        return Qn, Pn

    def _qn_point(self, x, x1):
        """F(x) - V (U^T (U - V))^{-1} U^T (x - F(x)) from the stored secants."""
        U = np.stack(self.U, axis=1)
        V = np.stack(self.V, axis=1)
        A = U.T @ (U - V)
        b = U.T @ (x - x1)
        try:
            coef = np.linalg.solve(A, b)
        except np.linalg.LinAlgError:
            coef = np.linalg.lstsq(A, b, rcond=None)[0]
        return x1 - V @ coef

    def restart(self):
        self.U.clear()
        self.V.clear()
        return super().restart()

    def ridge_search(self):
        """:meth:`MapChain.ridge_search`; a move makes the stored secants stale."""
        passes, step = super().ridge_search()
        if step:
            self.U.clear()
            self.V.clear()
        return passes, step

    def accelerate(self, Q1, P1, Q2, P2, ll1):
        """The quasi-Newton point from the secants, kept if at least as good as F(x).

        Where the map expands along its last step (see :func:`expanding`) the
        point is not tried: x moves to F(x), whose image is known, for the
        one pass this iteration made.
        """
        Q, P = self.Q, self.P
        x, x1, x2 = self._flat(Q, P), self._flat(Q1, P1), self._flat(Q2, P2)
        u, v = x1 - x, x2 - x1
        self.U.append(u)
        self.V.append(v)
        if len(self.U) > self.secants:
            del self.U[0], self.V[0]
        if expanding(u, v):
            self.Q, self.P, self.Fx = Q1, P1, (Q2, P2, ll1)
            return ll1
        Qj, Pj = self.run.clean(*self._unflat(self._qn_point(x, x1), Q, P))
        return self.keep_better(Qj, Pj, Q1, P1, Q2, P2, ll1)[0]


def expanding(u, v) -> bool:
    """Whether the map's second step ``v`` goes at least as far along ``u`` as ``u``.

    With ``v = rho u`` (the map's differential stretching its last step by
    rho), the one-secant Newton point for ``x = F(x)`` is
    ``F(x) + rho / (1 - rho) u``: past F(x) for rho < 1, but for rho > 1
    back along ``u``, towards the fixed point the iterates are leaving -- a
    saddle of the likelihood -- and at rho = 1 without a finite length.
    There the point was refused on every try (HapMap3 K = 4, seed 42: the 7
    iterations with ``u.v >= u.u`` in a creep of 19; docs/benchmarks.md).
    The test is on the projection, not on ``|v| >= |u|``: the first
    iterations of a fit often have ``|v| > |u|`` in a new direction, where
    the point climbed by hundreds of units.

    Parameters
    ----------
    u, v : numpy.ndarray, shape (n_parameters,)
        ``F(x) - x`` and ``F(F(x)) - F(x)``.
    """
    return float(u @ v) >= float(u @ u)
