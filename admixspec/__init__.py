"""admixspec: genetic ancestry by a spectral tensor-eigenpair method.

Public API: what users call (everything else is internal and may change);
docs/api.md lists every public name by module. The names load lazily, on
first use (the Scientific Python SPEC 1 pattern), so ``import admixspec`` and
``admixspec --help`` do not pay for numba, scipy, pandas or matplotlib.

The package is layered; each layer imports only the ones below it (checked by
import-linter, see pyproject.toml):

``cli``, ``plot``
    the command line and the figures;
``fit``
    :func:`fit_admixture` and the strategies it runs;
``backends``
    where the likelihood passes run (GPU, Dask cluster);
``io``, ``spectral``, ``ml``, ``simulate``
    readers and writers, the spectral estimator, the maximum-likelihood engine
    (with its numba kernels in ``ml._kernels``), simulations;
``core``
    the primitives they share.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING

from ._version import __version__

# A library's loggers get no handler but NullHandler (the logging HOWTO,
# "Configuring Logging for a Library"): without one, an application that has
# not configured logging gets the library's warnings as bare stderr lines
# (logging.lastResort). The command line adds its own handler
# (admixspec.cli.main); an application's logging configuration shows them.
logging.getLogger(__name__).addHandler(logging.NullHandler())

#: Public name -> the module that defines it.
_PUBLIC = {
    "AdmixspecError": "core.exceptions",
    "ConvergenceWarning": "core.exceptions",
    "InputError": "core.exceptions",
    "UsageError": "core.exceptions",
    "apply_filters": "core.filters",
    "check_K": "core.filters",
    "MISSING": "core.genotypes",
    "Genotypes": "core.genotypes",
    "match_components": "core.metrics",
    "q_error": "core.metrics",
    "FitResult": "core.result",
    "read_genotypes": "io",
    "read_p": "io",
    "read_q": "io",
    "write_p": "io",
    "write_q": "io",
    "BinaryLatentResult": "spectral.binary_latent",
    "fit_binary_latent": "spectral.binary_latent",
    "KHint": "spectral.estimate",
    "k_hint": "spectral.estimate",
    "TensorEigenpairs": "spectral.tensor",
    "eigenpairs": "spectral.tensor",
    "BootstrapResult": "ml.bootstrap",
    "bootstrap": "ml.bootstrap",
    "CVResult": "ml.crossval",
    "cross_validate": "ml.crossval",
    "loglikelihood": "ml.likelihood",
    "SupervisedResult": "ml.project",
    "fit_supervised": "ml.project",
    "project": "ml.project",
    "IterationInfo": "ml.refine",
    "MLResult": "ml.refine",
    "fit_ml": "ml.refine",
    "SimulatedData": "simulate",
    "simulate_admixture": "simulate",
    "simulate_balding_nichols": "simulate",
    "AdmixtureResult": "fit.admixture",
    "fit_admixture": "fit.admixture",
    "genotype_summary": "fit.summary",
    "align_components": "core.metrics",
    "ancestry_palette": "plot",
    "plot_ancestry": "plot",
    "plot_cv": "plot",
}

__all__ = [
    "AdmixspecError",
    "AdmixtureResult",
    "BinaryLatentResult",
    "BootstrapResult",
    "CVResult",
    "ConvergenceWarning",
    "FitResult",
    "Genotypes",
    "InputError",
    "IterationInfo",
    "KHint",
    "MISSING",
    "MLResult",
    "SimulatedData",
    "SupervisedResult",
    "TensorEigenpairs",
    "UsageError",
    "__version__",
    "align_components",
    "ancestry_palette",
    "apply_filters",
    "bootstrap",
    "check_K",
    "cross_validate",
    "eigenpairs",
    "fit_admixture",
    "fit_binary_latent",
    "fit_ml",
    "fit_supervised",
    "genotype_summary",
    "k_hint",
    "loglikelihood",
    "match_components",
    "plot_ancestry",
    "plot_cv",
    "project",
    "q_error",
    "read_genotypes",
    "read_p",
    "read_q",
    "simulate_admixture",
    "simulate_balding_nichols",
    "write_p",
    "write_q",
]


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'admixspec' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return __all__


if TYPE_CHECKING:  # the same names, for type checkers and editors
    from .core.exceptions import (
        AdmixspecError,
        ConvergenceWarning,
        InputError,
        UsageError,
    )
    from .core.filters import apply_filters, check_K
    from .core.genotypes import MISSING, Genotypes
    from .core.metrics import align_components, match_components, q_error
    from .core.result import FitResult
    from .fit.admixture import AdmixtureResult, fit_admixture
    from .fit.summary import genotype_summary
    from .io import read_genotypes, read_p, read_q, write_p, write_q
    from .ml.bootstrap import BootstrapResult, bootstrap
    from .ml.crossval import CVResult, cross_validate
    from .ml.likelihood import loglikelihood
    from .ml.project import SupervisedResult, fit_supervised, project
    from .ml.refine import IterationInfo, MLResult, fit_ml
    from .plot import ancestry_palette, plot_ancestry, plot_cv
    from .simulate import SimulatedData, simulate_admixture, simulate_balding_nichols
    from .spectral.binary_latent import BinaryLatentResult, fit_binary_latent
    from .spectral.estimate import KHint, k_hint
    from .spectral.tensor import TensorEigenpairs, eigenpairs
