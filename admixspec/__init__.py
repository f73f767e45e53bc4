"""admixspec: genetic ancestry by a spectral tensor-eigenpair method.

Public API: what users call (everything else is internal and may change).
The paper's baselines (:func:`admixspec.spectral.binary_latent.fit_als` and
the others) and the log formatters live in their modules; docs/api.md lists
every public name by module.
"""

__version__ = "0.1.0"

from .spectral.binary_latent import BinaryLatentResult, fit_binary_latent
from .ml.bootstrap import BootstrapResult, bootstrap
from .ml.crossval import CVResult, cross_validate
from .exceptions import AdmixspecError, ConvergenceWarning, InputError, UsageError
from .filters import apply_filters, check_K
from .genotypes import MISSING, Genotypes, genotype_summary
from .io import read_genotypes, read_p, read_q, write_p, write_q
from .ml.likelihood import loglikelihood
from .metrics import match_components, q_error
from .model import AdmixtureResult, fit_admixture
from .plot import align_components, ancestry_palette, plot_ancestry, plot_cv
from .ml.project import SupervisedResult, fit_supervised, project
from .ml.refine import IterationInfo, MLResult, fit_ml
from .result import FitResult
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
