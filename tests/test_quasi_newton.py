"""The accelerated chains (admixspec.ml.quasi_newton): the ridge search, the
quasi-Newton point where the map expands."""

import numpy as np
import pytest

from admixspec.ml.quasi_newton import RIDGE_WINDOW, MapChain, SecantChain, expanding


class _Quadratic:
    """A run whose map creeps: each pass moves (Q, P) 5% of the way to the optimum.

    The log-likelihood is minus the squared distance to the optimum, so a plain
    chain gains less each iteration by a fixed factor: the linear crawl that the
    ridge search is for. Counts the passes.
    """

    update_p = True

    def __init__(self):
        self.Q_opt, self.P_opt = np.array([[0.7, 0.3]]), np.array([[0.2, 0.6]])
        self.passes = 0
        self.engine = None

    def loglik(self, Q, P):
        return -float(np.sum((Q - self.Q_opt) ** 2) + np.sum((P - self.P_opt) ** 2))

    def newton(self, Q, P):
        self.passes += 1
        return (Q + 0.05 * (self.Q_opt - Q), P + 0.05 * (self.P_opt - P),
                self.loglik(Q, P))

    def params(self, Q, P):
        return [Q, P]

    def clean(self, Q, P):
        return Q, P


class _PlainChain(MapChain):
    """No acceleration: x moves to F(x), whose image the iteration's pass made."""

    def accelerate(self, Q1, P1, Q2, P2, ll1):
        self.Q, self.P, self.Fx = Q1, P1, (Q2, P2, ll1)
        return ll1


def _run_chain(iterations):
    run = _Quadratic()
    chain = _PlainChain(run, np.array([[0.2, 0.8]]), np.array([[0.9, 0.1]]))
    lls, ridges = [chain.ll], []
    for _ in range(iterations):
        chain.advance(tol=0.0)
        lls.append(chain.ll)
        ridges.append(chain.ridge)
    return run, chain, lls, ridges


def test_ridge_search__jumps_ahead_of_a_creeping_chain():
    run, chain, lls, ridges = _run_chain(RIDGE_WINDOW)
    # the first nine iterations are the map's alone: the gain shrinks by 0.95^2
    gains = np.diff(lls)
    assert gains[1:RIDGE_WINDOW - 1] / gains[: RIDGE_WINDOW - 2] == pytest.approx(0.9025)
    assert ridges[: RIDGE_WINDOW - 1] == [(0, 0.0)] * (RIDGE_WINDOW - 1)
    # the tenth searches along the window's displacement d = (r - 1) e, from
    # the residual r e (r = 0.95^10 = 0.60): steps 0.25, 0.5 and 1 rise, 2
    # falls (the best step is r / (1 - r) = 1.49), so it moves by 1 to the
    # residual (2 r - 1) e, a third of the map's
    r = 0.95 ** RIDGE_WINDOW
    assert ridges[-1] == (4, 1.0)
    assert chain.ll == pytest.approx(lls[0] * (2 * r - 1) ** 2)
    # every pass counted: one to start, one per iteration (the image of F(x)),
    # four for the search
    assert run.passes == 1 + RIDGE_WINDOW + 4


def test_ridge_search__never_lowers_the_loglikelihood():
    _, _, lls, ridges = _run_chain(5 * RIDGE_WINDOW)
    assert all(np.diff(lls) > 0)
    assert sum(step > 0 for _, step in ridges) == 5


class _Saddle(_Quadratic):
    """A run leaving a saddle: each pass moves (Q, P) 10% further from it.

    The log-likelihood is the squared distance from the saddle, so every map
    climbs, and the map's step grows by 1.1 from one pass to the next.
    """

    def loglik(self, Q, P):
        return -super().loglik(Q, P)

    def newton(self, Q, P):
        self.passes += 1
        return (Q + 0.1 * (Q - self.Q_opt), P + 0.1 * (P - self.P_opt),
                self.loglik(Q, P))


@pytest.mark.parametrize(("rho", "expected"), [(0.5, False), (0.99, False),
                                               (1.0, True), (1.3, True)])
def test_expanding__when_the_map_stretches_its_step_along_itself(rho, expected):
    u = np.array([1.0, -2.0, 0.5])
    assert expanding(u, rho * u) is expected


def test_expanding__not_for_a_longer_step_in_another_direction():
    # the first iterations of a fit: |v| > |u|, the quasi-Newton point climbs
    u = np.array([1.0, 0.0, 0.0])
    assert not expanding(u, np.array([0.3, 2.0, 0.0]))


@pytest.mark.parametrize("rho", [0.5, 1.5])
def test_one_secant_point__lies_behind_f_of_x_where_the_map_expands(rho):
    # the Newton point for x = F(x) from v = rho u is F(x) + rho / (1 - rho) u:
    # ahead of F(x) for rho < 1, behind it (towards the saddle) for rho > 1
    run = _Saddle()
    chain = SecantChain(run, np.array([[0.2, 0.8]]), np.array([[0.9, 0.1]]), secants=1)
    x, u = np.array([0.2, 0.8, 0.9, 0.1]), np.array([0.1, -0.2, 0.05, 0.0])
    chain.U, chain.V = [u], [rho * u]
    point = chain._qn_point(x, x + u)
    assert point == pytest.approx(x + u + rho / (1 - rho) * u)
    assert (float((point - (x + u)) @ u) > 0) is (rho < 1)


def test_secant_chain__spends_one_pass_an_iteration_leaving_a_saddle():
    run = _Saddle()
    chain = SecantChain(run, np.array([[0.2, 0.8]]), np.array([[0.9, 0.1]]))
    lls = [chain.ll]
    for _ in range(RIDGE_WINDOW - 1):
        chain.advance(tol=0.0)
        lls.append(chain.ll)
    # x moves to F(x) every time, whose image the iteration's one pass made;
    # trying the quasi-Newton point would have cost a second, and fallen back
    assert np.diff(lls) == pytest.approx(lls[0] * (1.1 ** 2 - 1) * 1.21 ** np.arange(
        RIDGE_WINDOW - 1))
    assert run.passes == 1 + (RIDGE_WINDOW - 1)
