"""numba's CUDA target, imported without changing numpy."""

from __future__ import annotations

import contextlib

import numpy as np

__all__ = ["import_cuda"]


def import_cuda():
    """``numba.cuda``, with ``np.row_stack`` present only while its registries load.

    numba-cuda (0.30.4 and earlier) registers an overload of ``np.row_stack``,
    which numpy 2.5 removed, when its array functions load (on the first CUDA
    compilation): without the name that fails with "module 'numpy' has no
    attribute 'row_stack'" (seen on the H200 image). They are loaded here with
    the name aliased to ``np.vstack`` for the moment, and the alias is removed
    again, so that importing admixspec changes nothing in numpy.
    """
    added = not hasattr(np, "row_stack")
    if added:
        np.row_stack = np.vstack  # noqa: NPY201 - the shim sets the removed name
    try:
        from numba import cuda

        with contextlib.suppress(ImportError):  # numba's own CUDA target has none
            import numba.cuda.np.arrayobj  # noqa: F401 - registers the overloads
    finally:
        if added:
            del np.row_stack  # noqa: NPY201 - and removes it again
    return cuda
