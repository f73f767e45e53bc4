"""O-NCM, the orthogonal Newton correction method, one random start per thread step.

:func:`admixspec.spectral.tensor.eigenpairs` runs up to 4,000 starts per dimension
of the whitened tensor (28,000 at K = 7), each until it converges or gives up. In
NumPy each iteration of the batch built the (starts, d + 1, d + 1) Newton
systems and solved them with a batched LAPACK call; here each start runs to
its end in registers and small scratch arrays: 2.5x faster on one thread at
d = 7, 4x at d = 3 (the same random tensor and starts), the converged pairs
the same to 1e-9 (docs/benchmarks.md). Starts that do not converge wander
chaotically and end elsewhere; only converged starts are reported.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _newton_step(T, u, Tu, A, b):
    """Solve one O-NCM step at unit ``u`` into ``b[:d]``; False on a singular system.

    The bordered system ``[[2 T(I,I,u) - lam I, u], [u^T, 0]] s = [-g, 0]``
    with ``g = T(I,u,u) - lam u`` (Jaffe, Weiss & Nadler 2018), solved by
    Gaussian elimination with partial pivoting.
    """
    d = u.shape[0]
    n = d + 1
    for i in range(d):
        for j in range(i, d):
            acc = 0.0
            for k in range(d):
                acc += T[i, j, k] * u[k]
            Tu[i, j] = acc
            Tu[j, i] = acc
    lam = 0.0
    for i in range(d):
        acc = 0.0
        for j in range(d):
            acc += Tu[i, j] * u[j]
        b[i] = acc  # T(I, u, u) for now
        lam += acc * u[i]
    for i in range(d):
        for j in range(d):
            A[i, j] = 2.0 * Tu[i, j]
        A[i, i] -= lam
        A[i, d] = u[i]
        A[d, i] = u[i]
        b[i] = lam * u[i] - b[i]
    A[d, d] = 0.0
    b[d] = 0.0
    for c in range(n):
        pivot = c
        largest = abs(A[c, c])
        for r in range(c + 1, n):
            if abs(A[r, c]) > largest:
                largest = abs(A[r, c])
                pivot = r
        if largest == 0.0:
            return False
        if pivot != c:
            for w in range(n):
                A[c, w], A[pivot, w] = A[pivot, w], A[c, w]
            b[c], b[pivot] = b[pivot], b[c]
        for r in range(c + 1, n):
            factor = A[r, c] / A[c, c]
            for w in range(c + 1, n):
                A[r, w] -= factor * A[c, w]
            b[r] -= factor * b[c]
    for c in range(n - 1, -1, -1):
        acc = b[c]
        for w in range(c + 1, n):
            acc -= A[c, w] * b[w]
        b[c] = acc / A[c, c]
    return True


@numba.njit(parallel=True, cache=True, nogil=True)
def oncm(T, U, tol, max_iter):
    """Run O-NCM from each row of ``U``, in place.

    Parameters
    ----------
    T : numpy.ndarray, float64, shape (d, d, d)
        Symmetric tensor.
    U : numpy.ndarray, float64, shape (p, d)
        Unit starting vectors; each row ends as its start's last iterate.
    tol : float
        A start stops when its step moves the unit vector less than this.
    max_iter : int
        Iteration limit per start.

    Notes
    -----
    A start also stops, where it is, on a singular or non-finite step.
    """
    p, d = U.shape
    for s in numba.prange(p):
        u = U[s].copy()
        Tu = np.empty((d, d))
        A = np.empty((d + 1, d + 1))
        b = np.empty(d + 1)
        for _ in range(max_iter):
            if not _newton_step(T, u, Tu, A, b):
                break
            norm = 0.0
            finite = True
            for i in range(d):
                if not np.isfinite(b[i]):
                    finite = False
                b[i] += u[i]
                norm += b[i] * b[i]
            if not finite:
                break
            norm = np.sqrt(norm)
            step = 0.0
            for i in range(d):
                moved = b[i] / norm
                step += (moved - u[i]) ** 2
                u[i] = moved
            if np.sqrt(step) <= tol:
                break
        U[s] = u
