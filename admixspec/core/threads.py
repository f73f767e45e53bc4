"""How many threads the numba kernels and BLAS use."""

from __future__ import annotations

import contextlib

from .exceptions import UsageError

__all__ = ["thread_limit"]


@contextlib.contextmanager
def thread_limit(threads):
    """Temporarily set the numba (and BLAS) thread count.

    Parameters
    ----------
    threads : int or None
        Number of threads; ``None`` leaves the current settings.
    """
    if threads is None:
        yield
        return
    threads = int(threads)
    if threads < 1:
        raise UsageError(f"threads must be >= 1, got {threads}")
    import numba  # here, not at the top: importing the core must stay light
    from threadpoolctl import threadpool_limits

    previous = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        with threadpool_limits(limits=threads):
            yield
    finally:
        numba.set_num_threads(previous)
