"""Which device runs the likelihood engine: ``device="auto" | "cpu" | "cuda"``.

``"auto"`` takes a usable CUDA GPU and otherwise the CPU; ``"cpu"`` never
touches CUDA; ``"cuda"`` insists on CUDA and raises a one-line error when
there is none. numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), which runs
the GPU kernels as Python on the CPU for the tests, counts as CUDA for
``"cuda"`` but not for ``"auto"``: it is thousands of times slower than the
CPU engine.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os

import numpy as np

from ...core.exceptions import MissingDependencyError, UsageError
from ...ml.likelihood import Engine, engine_factory
from .numba_cuda import import_cuda

__all__ = ["DEVICES", "cuda_status", "default_device", "make_engine", "resolve_device"]

logger = logging.getLogger("admixspec")

#: The accepted values of ``device``.
DEVICES = ("auto", "cpu", "cuda")


def _simulated() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def cuda_status() -> tuple[str | None, str]:
    """What CUDA device the engine could use, and why not when none.

    Returns
    -------
    kind : {"gpu", "simulator"} or None
        ``"gpu"`` for a usable CUDA GPU, ``"simulator"`` for numba's CUDA
        simulator, None for neither.
    description : str
        The GPU's name, or the reason there is none.
    """
    try:
        cuda = import_cuda()
    except ImportError as error:  # a numba without its CUDA target
        return None, f"numba.cuda cannot be imported ({error})"
    if _simulated():
        return "simulator", "numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
    try:
        if not cuda.is_available():
            return None, "no CUDA driver or GPU found"
        name = cuda.get_current_device().name
    except Exception as error:  # noqa: BLE001 - any driver failure means no GPU
        return None, f"CUDA failed to start ({str(error).splitlines()[0]})"
    return "gpu", name.decode() if isinstance(name, bytes) else str(name)


def resolve_device(device: str = "auto") -> str:
    """``"cpu"`` or ``"cuda"``: the device that ``device`` asks for on this machine.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda"}

    Returns
    -------
    str

    Raises
    ------
    UsageError
        An unknown ``device``, or ``"cuda"`` without a usable CUDA device.
    MissingDependencyError
        ``"cuda"`` with a numba that has no CUDA target (``admixspec[gpu]``).

    Examples
    --------
    >>> resolve_device("cpu")
    'cpu'
    """
    if device not in DEVICES:
        raise UsageError(f"device must be one of {DEVICES}, got {device!r}")
    if device == "cpu":
        return "cpu"
    kind, description = cuda_status()
    if device == "auto":
        return "cuda" if kind == "gpu" else "cpu"
    if kind is None and description.startswith("numba.cuda"):
        raise MissingDependencyError(
            f"device='cuda' needs numba's CUDA target: pip install 'admixspec[gpu]' "
            f"({description})")
    if kind is None:
        raise UsageError(f"device='cuda' but no usable CUDA GPU: {description}")
    return "cuda"


@contextlib.contextmanager
def default_device(device: str | None):
    """Within the block, the fits' likelihood engines run on ``device``.

    Sets :data:`admixspec.ml.likelihood.engine_factory`, through which every
    fit below makes its engine. The device is resolved on entry, so
    ``"cuda"`` without a GPU fails before any work. None keeps the device an
    enclosing block set, and is ``"auto"`` where none did. This is how
    :func:`admixspec.fit_admixture` and ``--device`` reach every maximum-likelihood
    fit inside a fit (refinement, cross-validation, bootstrap) without each
    caller passing it on; a fit run outside any such block uses the CPU.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda"} or None

    Examples
    --------
    >>> with default_device("cpu"):
    ...     pass
    """
    if device is None and engine_factory.get() is not None:
        yield
        return
    device = "auto" if device is None else device
    resolve_device(device)  # fail now, not at the first fit
    token = engine_factory.set(functools.partial(make_engine, device=device))
    try:
        yield
    finally:
        engine_factory.reset(token)


def make_engine(G, K: int, device: str = "auto"):
    """The likelihood engine for ``G`` on the device ``device`` resolves to.

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)
        Checked dosage (or, for the CPU, any source
        :class:`admixspec.ml.likelihood.Engine` accepts).
    K : int
        Number of components.
    device : {"auto", "cpu", "cuda"}

    Returns
    -------
    admixspec.ml.likelihood.Engine or admixspec.backends.gpu.engine.CudaEngine
        The choice is logged at INFO on logger ``"admixspec"``. Genotypes not
        held in memory (a chunked source) go to the CPU under ``"auto"``.

    Raises
    ------
    UsageError
        As :func:`resolve_device`; ``"cuda"`` for genotypes not in memory.
    """
    on_gpu = resolve_device(device) == "cuda"
    if on_gpu and not isinstance(G, np.ndarray):  # e.g. streamed from disk
        if device == "cuda":
            raise UsageError("device='cuda' needs the genotypes in memory; genotypes "
                             "streamed from disk are fitted on the CPU")
        on_gpu = False
    if not on_gpu:
        logger.info("likelihood engine: CPU")
        return Engine(G, K)
    from .engine import CudaEngine

    logger.info("likelihood engine: CUDA (%s)", cuda_status()[1])
    return CudaEngine(G, K)
