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
import contextvars
import ctypes
import functools
import logging
import os
import sys

import numpy as np

from ...core.chunks import placement
from ...core.exceptions import MissingDependencyError, UsageError
from ...ml.likelihood import Engine, engine_factory
from .numba_cuda import import_cuda

__all__ = ["DEVICES", "cuda_status", "current_device", "default_device",
           "free_device_memory", "make_engine", "resolve_device"]

logger = logging.getLogger("admixspec")

#: The accepted values of ``device``.
DEVICES = ("auto", "cpu", "cuda")
# The device the enclosing default_device block resolved to (current_device).
_resolved: contextvars.ContextVar = contextvars.ContextVar("admixspec_device",
                                                          default="cpu")


def _simulated() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def _driver_loads() -> bool:
    """Whether the CUDA driver library loads (numba.cuda's first step).

    Importing numba.cuda takes about a second; on the many machines without
    an NVIDIA driver, ``device="auto"`` learns there is no GPU from this
    millisecond ``dlopen`` instead. ``NUMBA_CUDA_DRIVER`` (numba's own
    override of the library's path) and platforms other than Linux and
    Windows leave the decision to numba.
    """
    if os.environ.get("NUMBA_CUDA_DRIVER"):
        return True
    if sys.platform.startswith("linux"):
        names = ("libcuda.so.1", "libcuda.so")
    elif sys.platform == "win32":
        names = ("nvcuda.dll",)
    else:
        return True
    for name in names:
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        return True
    return False


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
    if not _simulated() and not _driver_loads():
        return None, "no CUDA driver found (libcuda does not load)"
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
    except Exception as error:  # any driver failure means no GPU
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
    resolved = resolve_device(device)  # fail now, not at the first fit
    token = engine_factory.set(functools.partial(make_engine, device=device))
    resolved_token = _resolved.set(resolved)
    try:
        yield
    finally:
        _resolved.reset(resolved_token)
        engine_factory.reset(token)


def make_engine(G, K: int, device: str = "auto"):
    """The likelihood engine for ``G`` on the device ``device`` resolves to.

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps), or GenotypeChunks
        Checked dosage, or genotypes streamed from disk (the GPU engine copies
        them to the device once, one chunk of SNPs at a time).
    K : int
        Number of components.
    device : {"auto", "cpu", "cuda"}

    Returns
    -------
    admixspec.ml.likelihood.Engine or admixspec.backends.gpu.engine.CudaEngine
        The choice is logged at INFO on logger ``"admixspec"`` (the CPU's
        as run by the Dask workers when a cluster places the genotypes,
        :data:`admixspec.core.chunks.placement`). Under
        ``"auto"``, genotypes that would not fit the GPU's free memory
        (:meth:`~admixspec.backends.gpu.engine.CudaEngine.device_bytes`) go to
        the CPU.

    Raises
    ------
    UsageError
        As :func:`resolve_device`; ``"cuda"`` for genotypes the GPU cannot
        hold.
    """
    on_gpu = resolve_device(device) == "cuda"
    if on_gpu:
        from .engine import CudaEngine

        m, n = (G.shape if isinstance(G, np.ndarray) else (G.n_individuals, G.n_snps))
        need, free = CudaEngine.device_bytes(m, n, K), free_device_memory()
        if need > free:
            message = (f"{m} x {n} genotypes need about {need / 2**30:.1f} GiB of GPU "
                       f"memory, {free / 2**30:.1f} GiB are free")
            if device == "cuda":
                raise UsageError(f"device='cuda': {message} (genotypes larger than "
                                 "the GPU's memory are not supported yet)")
            logger.info("%s: the likelihood passes run on the CPU", message)
            on_gpu = False
    if not on_gpu:
        # under a Dask cluster (backends.distributed.use_client) the engine's
        # chunks, and so its kernels, are placed on the workers
        logger.info("likelihood engine: %s", "CPU kernels on the Dask workers"
                    if placement.get() is not None else "CPU")
        return Engine(G, K)
    logger.info("likelihood engine: CUDA (%s)", cuda_status()[1])
    return CudaEngine(G, K)


def free_device_memory() -> float:
    """Bytes free on the current CUDA device (infinite under numba's simulator)."""
    return float(import_cuda().current_context().get_memory_info()[0])


def current_device() -> str:
    """``"cpu"`` or ``"cuda"``: where fits in the enclosing :func:`default_device` run.

    ``"cpu"`` outside any such block (a fit made there uses the CPU engine).

    Examples
    --------
    >>> current_device()
    'cpu'
    >>> with default_device("cpu"):
    ...     current_device()
    'cpu'
    """
    return _resolved.get()
