"""Where the likelihood passes run: the CPU (default), a CUDA GPU (:mod:`.gpu`) or a
Dask cluster (:mod:`.distributed`).

Both back ends reach the fits through the lower layers' two hooks, so
nothing below imports them: :data:`admixspec.ml.likelihood.engine_factory`
(which engine a fit makes; :func:`default_device` sets it) and
:data:`admixspec.core.chunks.placement` (where the genotype chunks live;
:func:`admixspec.backends.distributed.use_client` sets it).
"""

from .gpu.device import (
    DEVICES,
    cuda_status,
    current_device,
    default_device,
    make_engine,
    resolve_device,
)

__all__ = ["DEVICES", "cuda_status", "current_device", "default_device", "make_engine",
           "resolve_device"]
