"""admixspec: genetic ancestry by a spectral tensor-eigenpair method.

Public API (everything else is internal and may change).
"""

__version__ = "0.1.0"

from .spectral.binary_latent import (
    BinaryLatentResult,
    fit_als,
    fit_binary_latent,
    fit_oracle,
    simulate_binary_latent,
    w_error,
    wls_step,
)
from .ml.bootstrap import BootstrapResult, bootstrap
from .ml.crossval import CVResult, cross_validate
from .exceptions import AdmixspecError, ConvergenceWarning, InputError, UsageError
from .filters import apply_filters, check_K
from .genotypes import MISSING, Genotypes
from .io import read_genotypes, read_p, read_q, write_p, write_q
from .ml.likelihood import loglikelihood
from .metrics import match_components, q_error
from .model import AdmixtureResult, fit_admixture
from .plot import align_components, ancestry_palette, plot_ancestry, plot_cv
from .ml.project import SupervisedResult, fit_supervised, project
from .ml.refine import IterationInfo, MLResult, fit_ml, format_iteration, format_summary
from .simulate import SimulatedData, simulate_admixture, simulate_balding_nichols
from .spectral.estimate import KHint, k_hint
from .spectral.tensor import TensorEigenpairs, eigenpairs

__all__ = [
    "AdmixspecError",
    "AdmixtureResult",
    "BinaryLatentResult",
    "BootstrapResult",
    "CVResult",
    "ConvergenceWarning",
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
    "fit_als",
    "fit_binary_latent",
    "fit_ml",
    "fit_oracle",
    "fit_supervised",
    "format_iteration",
    "format_summary",
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
    "simulate_binary_latent",
    "w_error",
    "wls_step",
    "write_p",
    "write_q",
]
