"""The binomial likelihood's per-call factor, for numba kernels.

Shared by the likelihood engine's kernels (:mod:`admixspec.ml._kernels`) and
the spectral subset search's (:mod:`admixspec.spectral._kernels`), which sum
log-likelihoods as the logarithms of products of these factors. Imported by
those kernels only, so that importing the core does not import numba.
"""

from __future__ import annotations

import numba

#: Factors multiplied before one logarithm is taken: each is at least
#: ``P_MIN ** 2`` (1e-10, frequencies clipped to ``[P_MIN, P_MAX]``), so a
#: product of 16 stays above 1e-160, far from underflow.
LOG_EVERY = 16


@numba.njit(cache=True, inline="always", error_model="numpy", fastmath=True)
def genotype_factor(gf, fj):
    """P(g | f) without the binomial coefficient, for a dosage gf in {0., 1., 2.}."""
    u = fj if gf >= 1.0 else 1.0 - fj
    v = fj if gf >= 2.0 else 1.0 - fj
    return u * v
