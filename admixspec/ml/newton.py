"""ADMIXTURE's block relaxation: constrained Newton steps for P, then Q.

One application of the map ``(Q, P) -> (Q', P')`` (Alexander, Novembre &
Lange 2009) is

1. for every SNP ``j``, one Newton step on the SNP's log-likelihood
   ``L_j(p_j) = sum_i g_ij log f_ij + (2 - g_ij) log(1 - f_ij)`` from the old
   ``(Q, P)``, restricted to the box ``[P_MIN, P_MAX]^K``;
2. for every individual ``i``, one Newton step on its log-likelihood with the
   *new* P, restricted to the simplex (entries ``>= Q_MIN``).

Both blocks' gradients and Hessians are sums over the genotypes of
``w1 = g / f - (2 - g) / (1 - f)`` and ``w2 = g / f^2 + (2 - g) / (1 - f)^2``
(the first and minus the second derivative of the genotype's log-likelihood in
``f``). The kernel reads each SNP block of the int8 dosage matrix from memory
once: it sweeps the block (64 SNPs x all individuals, which stays in cache)
for the P statistics, solves the block's P steps, and sweeps it again with
the new P for the Q statistics, measuring each new P row's log-likelihood on
the way, so one map costs one read of the genotypes and two sweeps of
arithmetic. A row that the check finds worse than before takes its EM update
and has its Q statistics moved to that row (a few per cent of the rows, in
the last maps of a fit). The log-likelihood of the input ``(Q, P)`` comes out
of the first sweep.

Each Newton step maximises the quadratic model ``g.d - d'Cd/2`` under the
row's constraints by a small primal active-set method (all rows at once,
inside the kernels): variables that leave the feasible set are fixed at their
bound, fixed variables whose multiplier has the wrong sign are released, and
the equality-constrained (simplex) or unconstrained (box) system on the free
variables is solved by Cholesky.
"""

from __future__ import annotations

import numba
import numpy as np

from ..core.chunks import map_sum
from ..core.parameters import clip_proportions
from ._kernels.newton import q_newton_kernel, relax_kernel, triangle_pairs
from .likelihood import join_rows, snp_blocks

__all__ = ["BlockNewton"]

def _relax_chunk(G, P, Q, tri_r, tri_c, update_p):
    """The block-relaxation sweep of one chunk of SNPs (a ``GenotypeChunks.map`` task).

    Returns the chunk's new P rows (None unless ``update_p``) and, to be added
    over chunks (:func:`~admixspec.core.chunks.map_sum`), the Q statistics
    (m, K + K(K+1)/2), the log-likelihood of the input (Q, P) on the chunk
    and the number of P rows that fell back to EM.
    """
    starts, lengths = snp_blocks(G.shape[1])
    T = numba.get_num_threads()
    stats = np.zeros((T, Q.shape[0], Q.shape[1] + len(tri_r)))
    P_new = np.empty_like(P) if update_p else P
    ll, em_rows = relax_kernel(G, P, Q, starts, lengths, tri_r, tri_c, P_new, stats,
                                update_p)
    return ((P_new if update_p else None),
            (stats.sum(axis=0), ll.sum(), int(em_rows.sum())))


class BlockNewton:
    """The block-relaxation map over one dosage matrix (see the module notes).

    Parameters
    ----------
    engine : admixspec.ml.likelihood.Engine
        Holds the dosage and its SNP blocks; its ``passes`` counter counts
        one pass per map (the genotypes are read from memory once).
    frozen_rows : numpy.ndarray, int64, optional
        Rows of Q held fixed (supervised fits).

    Attributes
    ----------
    sweeps : int
        Sweeps of arithmetic over the genotypes: when P is updated, two
        per map (the P statistics; the Q statistics with the check of the P
        step), each over a block while it is in cache; else one.
    em_rows : int
        P rows whose Newton step lowered their log-likelihood and which took
        their EM update instead.
    """

    def __init__(self, engine, frozen_rows=None):
        self.engine = engine
        self.tri_r, self.tri_c = triangle_pairs(engine.K)
        self.frozen = np.zeros(engine.m, dtype=np.bool_)
        if frozen_rows is not None:
            self.frozen[frozen_rows] = True
        self.sweeps = 0
        self.em_rows = 0

    def step(self, Q, P, *, update_p=True):
        """Apply the map once.

        Parameters
        ----------
        Q : numpy.ndarray, float64, shape (n_individuals, K)
        P : numpy.ndarray, float64, shape (n_snps, K)
        update_p : bool
            False holds P fixed (projection): only the Q step is taken.

        Returns
        -------
        Q_new : numpy.ndarray, float64, shape (n_individuals, K)
        P_new : numpy.ndarray, float64, shape (n_snps, K)
            ``P`` itself when ``update_p`` is false.
        loglik : float
            Log-likelihood of the *input* (Q, P).
        """
        eng = self.engine
        rows, (stats, ll, em_rows) = map_sum(eng.chunks, _relax_chunk, P, Q, self.tri_r,
                                             self.tri_c, update_p)
        P_new = join_rows(rows, P) if update_p else P
        self.em_rows += int(em_rows)
        eng.passes += 1
        self.sweeps += 2 if update_p else 1
        return self.q_step(Q, stats), P_new, float(ll)

    def q_step(self, Q, stats):
        """The Q half of the map: a simplex-constrained Newton step per unfrozen row.

        ``stats`` (n_individuals, K + K(K+1)/2) holds each row's gradient and
        the upper triangle of minus its Hessian, summed over SNPs.
        """
        Q_new = np.empty_like(Q)
        q_newton_kernel(Q, stats, self.tri_r, self.tri_c, self.frozen, Q_new,
                         numba.get_num_threads())
        clip_proportions(Q_new)
        Q_new[self.frozen] = Q[self.frozen]
        return Q_new
