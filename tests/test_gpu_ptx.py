"""Every GPU kernel compiles to PTX for a Hopper GPU (sm_90), checked without a GPU.

numba's CUDA simulator (tests/test_gpu.py) runs the kernels as Python, so it
cannot see what only the CUDA compiler rejects: a thread-local array sized by
a run-time value, a NumPy function numba.cuda does not type (``np.sqrt``), or
a change to the CPU's Newton-step functions (:mod:`admixspec.ml.newton`)
that the device cannot compile. This test compiles every kernel with
numba-cuda and NVIDIA's NVVM, which need no GPU but are not in the ``test``
extra (several hundred MB of CUDA wheels): it runs where
``pip install 'numba-cuda[cu12]'`` was done, and skips elsewhere.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

_SCRIPT = textwrap.dedent(
    """
    import sys
    import types
    from numba import cuda, types as nt
    import numba.cuda.dispatcher as dispatcher

    try:
        cuda.get_current_device()
    except Exception:
        # no GPU: device functions compile for the capability asked of compile_ptx
        dispatcher.get_current_device = lambda: types.SimpleNamespace(
            compute_capability=(9, 0))
    from admixspec.backends.gpu.kernels import (
        _fill_zero,
        _sum_chunks_kernel,
        bed_rows,
        kernels,
        transpose_packed,
    )

    u8, f3 = nt.uint8[:, ::1], nt.float64[:, :, ::1]
    f2, f1 = nt.float64[:, ::1], nt.float64[::1]
    i1, i, b = nt.int64[::1], nt.int64, nt.boolean
    signatures = {
        "snp_em": (u8, f2, f2, i1, i, f3, f3, f2, b),
        "ind_em": (u8, f2, f2, i1, i, f3, f2),
        "p_em": (f2, f2, f2, i1, f2),
        "snp_loglik": (u8, f2, f2, i, f2),
        "p_stats": (u8, f2, f2, i1, i1, i, f3, f3, f3, f2),
        "p_newton": (f2, f2, f2, i1, i1, f2),
        "p_fallback": (f2, f2, f2, f1, f1, f2, i1),
        "q_stats": (u8, f2, f2, i1, i1, i, f3),
    }
    for K in (2, 5):
        compiled = kernels(K)
        for name, signature in signatures.items():
            cuda.compile_ptx(getattr(compiled, name).py_func, signature, cc=(9, 0))
    for signature in ((f1,), (i1,)):
        cuda.compile_ptx(_fill_zero.py_func, signature, cc=(9, 0))
    cuda.compile_ptx(_sum_chunks_kernel.py_func, (f2, f1), cc=(9, 0))
    # the streamed copy: a .bed's bytes into GT, then GT's bytes into G
    cuda.compile_ptx(bed_rows.py_func, (u8, i1, i1, nt.uint8[::1], u8, i), cc=(9, 0))
    cuda.compile_ptx(transpose_packed.py_func, (u8, i, i, u8), cc=(9, 0))
    print("compiled")
    """
)


def test_every_kernel__compiles_to_ptx_for_sm90():
    if importlib.util.find_spec("numba_cuda") is None:
        pytest.skip("numba-cuda is not installed (pip install 'numba-cuda[cu12]')")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                          text=True, timeout=900, check=False)
    missing = ("DynamicLibNotFoundError", "NvvmSupportError", "libNVVM cannot be found")
    if any(text in done.stderr for text in missing):
        pytest.skip("numba-cuda finds no CUDA compiler libraries (NVVM, NVRTC): "
                    "pip install 'numba-cuda[cu12]'")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("compiled")
