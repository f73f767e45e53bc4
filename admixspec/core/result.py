"""The base of every fit's result: Q, P and how they were found.

:class:`FitResult` holds what any estimator of ADMIXTURE's model returns;
:class:`admixspec.fit.admixture.AdmixtureResult` (the public entry point's result),
:class:`admixspec.ml.refine.MLResult` and
:class:`admixspec.ml.project.SupervisedResult` extend it with what their
estimator adds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["FitResult"]


@dataclass
class FitResult:
    """Estimated (Q, P) of one K and the record of the fit.

    Attributes
    ----------
    Q : numpy.ndarray, float64, shape (n_individuals, K)
        Ancestry proportions; rows sum to one.
    P : numpy.ndarray, float64, shape (n_snps, K)
        Ancestral frequencies of the counted allele.
    loglik : float
        ADMIXTURE's binomial log-likelihood of (Q, P).
    n_iter : int
        Likelihood iterations run (0 if none).
    converged : bool
        Whether those iterations met the tolerance (True when none ran).
    history : list of admixspec.ml.refine.IterationInfo
        One record per likelihood iteration.
    timings : dict of str to float
        Seconds per stage.
    diagnostics : dict
        Facts about the fit worth logging (keyword-only when constructing).

    Examples
    --------
    >>> import numpy as np
    >>> FitResult(np.full((4, 2), 0.5), np.full((10, 2), 0.3), -27.7).K
    2
    """

    Q: np.ndarray
    P: np.ndarray
    loglik: float
    n_iter: int = 0
    converged: bool = True
    history: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    # keyword-only, so subclasses' positional fields keep their places
    diagnostics: dict = field(default_factory=dict, kw_only=True)

    @property
    def K(self) -> int:
        """Number of ancestral components (columns of Q)."""
        return int(self.Q.shape[1])
