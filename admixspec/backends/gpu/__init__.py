"""The likelihood engine on a CUDA GPU (numba.cuda kernels), and the device choice.

:func:`resolve_device` and :func:`make_engine` import no CUDA code unless
CUDA is asked for; the kernels live in :mod:`admixspec.backends.gpu.kernels` and the
engine in :mod:`admixspec.backends.gpu.engine` (imported on first use, since
importing numba.cuda costs time and a driver look-up).
"""

from .device import (
    DEVICES,
    cuda_status,
    current_device,
    default_device,
    make_engine,
    resolve_device,
)

__all__ = ["DEVICES", "cuda_status", "current_device", "default_device", "make_engine",
           "resolve_device"]
