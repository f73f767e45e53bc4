"""How many threads the numba kernels and BLAS use."""

from __future__ import annotations

import contextlib

from .exceptions import UsageError

__all__ = ["serial_blas", "serial_blas_below", "thread_limit"]


@contextlib.contextmanager
def thread_limit(threads):
    """Temporarily set the numba and BLAS thread counts (NumPy's and SciPy's BLAS).

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
    # Here, not at the top: importing the core must stay light. SciPy ships its
    # own OpenBLAS, which threadpoolctl limits only if it is loaded when the
    # limit is set: imported first inside, it kept every core.
    import numba
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits

    previous = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        with threadpool_limits(limits=threads):
            yield
    finally:
        numba.set_num_threads(previous)


@contextlib.contextmanager
def serial_blas():
    """BLAS on one thread while the block runs (usable as a decorator too).

    For the likelihood engine's iterations, whose matrix products are
    (individuals or SNPs) x K by K x K or smaller: too small for BLAS's threads
    to pay, while those threads, busy-waiting between calls, take the cores
    from numba's kernels. On the HapMap3 tutorial data at K = 4 with two
    threads, ``fit_ml`` took 6.9-7.3 s with BLAS on two threads and 4.8 s on
    one (docs/benchmarks.md). Large products over the genotypes (the
    randomized SVD, the spectral moments) keep BLAS's threads.
    """
    from threadpoolctl import threadpool_limits  # as thread_limit's

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def serial_blas_below(size, limit):
    """:func:`serial_blas` when ``size < limit``, else a context that changes nothing.

    For work whose BLAS calls grow with ``size`` (individuals): below the
    measured ``limit`` BLAS's threads cost more than they give.
    """
    return serial_blas() if size < limit else contextlib.nullcontext()
