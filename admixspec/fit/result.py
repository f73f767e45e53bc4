"""What :func:`admixspec.fit_admixture` returns, and the log its stages write."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from ..core.result import FitResult
from ..ml.bootstrap import BootstrapResult
from ..ml.crossval import CVResult
from ..ml.refine import format_iteration

__all__ = ["AdmixtureResult", "FitLog"]

logger = logging.getLogger("admixspec")


@dataclass
class AdmixtureResult(FitResult):
    """Estimated ancestry of one K, as ``admixspec run`` reports it.

    The :class:`~admixspec.core.result.FitResult` fields (Q, P, loglik, n_iter,
    converged, history, timings, diagnostics) and:

    Attributes
    ----------
    path : str
        Which estimator produced Q (see :mod:`admixspec.fit.admixture`).
    log_lines : list of str
        The fit's lines of ``PREFIX.K.log``, in order: EM iterations, the
        estimator and its reasons, the log-likelihood, the CV error and
        bootstrap (when asked for); :meth:`format_log` joins them.
    cv : admixspec.ml.crossval.CVResult or None
        Cross-validation error, when ``cv`` was asked for.
    bootstrap : admixspec.ml.bootstrap.BootstrapResult or None
        Bootstrap standard errors and bias of Q, when asked for.
    reference : numpy.ndarray of int64 or None
        Rows of the individuals Q and P were fitted on, when they were a
        reference drawn from a larger cohort (the others are projected);
        None when everyone was fitted.
    modes : admixspec.fit.modes.ModesResult or None
        With ``runs > 1``: every run's Q (aligned), log-likelihood and mode
        (:mod:`admixspec.fit.runs`); this result is the best run's.
    """

    path: str = ""
    log_lines: list = field(default_factory=list)
    cv: CVResult | None = None
    bootstrap: BootstrapResult | None = None
    reference: np.ndarray | None = None
    modes: object = None

    def format_log(self) -> str:
        """The fit's log text, one line per entry of :attr:`log_lines`."""
        return "".join(f"{line}\n" for line in self.log_lines)

    def record(self) -> dict:
        """JSON-ready facts of the fit (the body of ``PREFIX.K.json``)."""
        record = {
            "path": self.path, "loglik": float(self.loglik), "n_iter": int(self.n_iter),
            "converged": bool(self.converged), "timings": self.timings,
            "diagnostics": self.diagnostics,
        }
        if self.cv is not None:
            record["cv_error"] = float(self.cv.error)
            record["cv_fold_errors"] = self.cv.fold_errors.tolist()
        if self.modes is not None:
            record["modes"] = self.modes.record()
        if self.bootstrap is not None:  # PREFIX.K.Q_se and Q_bias are this fit's
            record["bootstrap"] = True
        return record


class FitLog:
    """Collects a fit's log lines; records ML iterations and forwards them.

    Parameters
    ----------
    callback : callable, optional
        Receives each iteration's :class:`~admixspec.ml.refine.IterationInfo`.
    """

    def __init__(self, callback=None):
        self.lines: list[str] = []
        self.history: list = []
        self._callback = callback

    def add(self, line: str) -> None:
        """Append a line (and log it at INFO)."""
        self.lines.append(line)
        logger.info("%s", line)

    def iteration(self, info) -> None:
        """Record one ML iteration (the engine itself logs it)."""
        self.history.append(info)
        self.lines.append(format_iteration(info))
        if self._callback is not None:
            self._callback(info)

    def convergence(self, n_iter: int, converged: bool) -> None:
        """ADMIXTURE's closing line of an iterative fit (nothing when none ran)."""
        if n_iter:
            self.add(
                f"Converged in {n_iter} iterations" if converged else
                f"Not converged: stopped at the iteration limit ({n_iter} iterations)"
            )
