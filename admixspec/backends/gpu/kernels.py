"""CUDA kernels of ADMIXTURE's likelihood, EM map and block relaxation (numba.cuda).

The same arithmetic as the CPU kernels of :mod:`admixspec.ml.likelihood` and
:mod:`admixspec.ml.newton`, laid out for a GPU. The genotypes are held twice on
the device, packed four to a byte as in a ``.bed`` (:func:`pack_rows`): ``G``
(individuals x SNPs, packed along SNPs) and its transpose ``GT`` (SNPs x
individuals, packed along individuals). Every sum over individuals (the P
statistics, per SNP) runs one thread per SNP over ``G``, and every sum over
SNPs (the Q statistics, per individual) one thread per individual over
``GT``: a warp's 32 threads then
read 8 neighbouring bytes of one row, and no thread needs another thread's
partial sums, so the kernels need no warp shuffles or shared memory. The
second copy costs a quarter byte per genotype (half a byte in all, an eighth
of a float32 matrix) and one more read of the genotypes per pass, which is
cheap beside the ~10 K floating-point operations each genotype costs.

Each thread sweeps a chunk of rows (``rows`` individuals, or ``cols`` SNPs)
so that a grid has enough blocks to fill the device; the grid's row ``c``
writes its chunk's sums to ``out[c]``, and :func:`sum_chunks` adds them in
chunk order. No float atomics, whose order varies from run to run, so a GPU
fit gives the same bits each time. All arithmetic is float64, as on the
CPU, so a GPU fit reproduces a CPU fit (to rounding).

The per-row constrained Newton solve
(:func:`admixspec.ml._kernels.newton.constrained_newton_step` and its helpers) is
not rewritten here: :func:`_device_twins` compiles the very same Python
functions for the device.
"""

from __future__ import annotations

import functools
import math
import types
import warnings

import numba
import numpy as np

from ...core.parameters import P_MAX, P_MIN
from ...ml._kernels import newton
from ...ml._kernels.likelihood import LOG_EVERY
from .numba_cuda import import_cuda

cuda = import_cuda()

__all__ = ["MISSING_CODE", "THREADS_PER_BLOCK", "bed_rows", "kernels", "pack_rows",
           "sum_chunks", "transpose_packed", "zeros"]

#: Threads per block of every kernel.
THREADS_PER_BLOCK = 128

# The CPU Newton-step functions and the names they call each other by.
_NEWTON_FUNCTIONS = ("constrained_newton_step", "active_set_step", "_free_step",
                     "_cholesky_solve", "_substitute", "step_bounds")


def _device_twins():
    """The Newton-step functions of :mod:`admixspec.ml._kernels.newton` on the device.

    Each function's Python source is compiled a second time, for the device,
    with a global namespace in which the functions it calls are their device
    versions and ``np.sqrt``/``np.log`` are :mod:`math`'s (numba.cuda types
    the latter, not NumPy's ufuncs).
    """
    shim = types.ModuleType("numpy_on_device")
    shim.sqrt = math.sqrt
    shim.log = math.log
    namespace = dict(newton.__dict__)
    namespace["np"] = shim
    twins = {}
    for name in _NEWTON_FUNCTIONS:
        py = getattr(newton, name).py_func
        clone = types.FunctionType(py.__code__, namespace, py.__name__, py.__defaults__,
                                   py.__closure__)
        twins[name] = cuda.jit(device=True)(clone)
    namespace.update(twins)  # looked up when a kernel first compiles them
    return twins


#: Code of a missing genotype in the packed matrices (0, 1, 2 are the dosage).
MISSING_CODE = 3
# SNPs per task of the transposing packer (64 int8 genotypes: one cache line).
_PACK_BLOCK = 64


@numba.njit(cache=True, inline="always")
def _code(g):
    return MISSING_CODE if g < 0 else g


@numba.njit(parallel=True, cache=True, nogil=True)
def _pack(G, out):
    """out[r, b] holds G[r, 4b : 4b + 4], 2 bits each (missing past the last column)."""
    rows, cols = G.shape
    for r in numba.prange(rows):
        for b in range(out.shape[1]):
            byte = 0
            for s in range(4):
                c = 4 * b + s
                byte |= (_code(G[r, c]) if c < cols else MISSING_CODE) << (2 * s)
            out[r, b] = byte


@numba.njit(parallel=True, cache=True, nogil=True)
def _pack_transposed(G, out):
    """out[j, b] holds G[4b : 4b + 4, j]; each task reads 64 SNPs' columns row by row."""
    m, n = G.shape
    for task in numba.prange(-(-n // _PACK_BLOCK)):
        j0 = task * _PACK_BLOCK
        for b in range(out.shape[1]):
            for j in range(j0, min(j0 + _PACK_BLOCK, n)):
                byte = 0
                for s in range(4):
                    i = 4 * b + s
                    byte |= (_code(G[i, j]) if i < m else MISSING_CODE) << (2 * s)
                out[j, b] = byte


def pack_rows(G: np.ndarray, *, transpose: bool = False) -> np.ndarray:
    """Genotypes packed four to a byte, 2 bits each, along each row (as in a ``.bed``).

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)
        Dosage 0/1/2, -1 for missing (stored as :data:`MISSING_CODE`).
    transpose : bool
        Pack ``G.T`` (rows are SNPs) instead, without forming ``G.T``.

    Returns
    -------
    numpy.ndarray, uint8, shape (rows, ceil(cols / 4))
        Genotype ``c`` of a row in bits ``2 (c % 4)`` of byte ``c // 4``; the
        padding of the last byte reads as missing.

    Examples
    --------
    >>> pack_rows(np.array([[0, 1, 2, -1, 2]], dtype=np.int8))
    array([[228, 254]], dtype=uint8)
    """
    G = np.ascontiguousarray(G, dtype=np.int8)
    rows, cols = (G.shape[1], G.shape[0]) if transpose else G.shape
    out = np.empty((rows, -(-cols // 4)), dtype=np.uint8)
    (_pack_transposed if transpose else _pack)(G, out)
    return out


@cuda.jit(device=True, inline=True)
def _genotype(packed, row, col):
    """The genotype code (0, 1, 2, or 3 = missing) at (row, col) of a packed matrix."""
    return (packed[row, col >> 2] >> ((col & 3) * 2)) & 3


@cuda.jit
def bed_rows(raw, picks, rows, codes, out, first):
    """Rows ``first`` on of ``out`` (SNPs x individuals, packed) from a ``.bed``'s bytes.

    ``out[first + s]`` is SNP row ``picks[s]`` of ``raw`` (the file's SNP-major
    rows, all its individuals four to a byte) with only the kept individuals
    ``rows``, in that order, each 2-bit code ``c`` replaced by ``codes[c]``
    (PLINK's order to this module's: dosage, :data:`MISSING_CODE` for missing);
    individuals past the last read as missing. One thread per output byte;
    the threads of a warp write neighbouring bytes of a row.
    """
    x = cuda.grid(1)
    width = out.shape[1]
    s = x // width
    if s >= picks.shape[0]:
        return
    b = x - s * width
    line = picks[s]
    byte = 0
    for t in range(4):
        r = 4 * b + t
        code = MISSING_CODE
        if r < rows.shape[0]:
            code = codes[_genotype(raw, line, rows[r])]
        byte |= code << (2 * t)
    out[first + s, b] = byte


@cuda.jit
def transpose_packed(GT, b0, b1, G):
    """Bytes ``b0:b1`` of each row of ``G`` (individuals x SNPs), from ``GT`` = ``G.T``.

    Both packed as :func:`pack_rows` packs them; byte ``b`` of row ``i`` of ``G``
    holds SNPs ``4b .. 4b + 3`` of individual ``i`` (missing past the last
    SNP), so SNP rows ``4 b0 .. 4 b1 - 1`` of ``GT`` must be filled. Thread
    ``x`` makes individual ``x % m``'s byte ``b0 + x // m``: a warp reads
    neighbouring bytes of one ``GT`` row.
    """
    x = cuda.grid(1)
    m = G.shape[0]
    b = b0 + x // m
    if b >= b1:
        return
    i = x - (b - b0) * m
    n = GT.shape[0]
    byte = 0
    for t in range(4):
        j = 4 * b + t
        code = MISSING_CODE
        if j < n:
            code = _genotype(GT, j, i)
        byte |= code << (2 * t)
    G[i, b] = byte


@cuda.jit
def _fill_zero(flat):
    i = cuda.grid(1)
    if i < flat.shape[0]:
        flat[i] = 0


def launch(kernel, n_threads: int, *args, n_chunks: int = 1):
    """Run ``kernel`` on ``n_threads`` threads along x times ``n_chunks`` chunks along y.

    At least one block: every kernel here checks its thread against its
    bounds. numba-cuda warns of low occupancy on small grids (tiny data,
    small chunks of a file, tests); the warning says nothing a user can act
    on, so it is silenced here (a real run printed it among its log lines).
    """
    grid = (max(1, -(-n_threads // THREADS_PER_BLOCK)), max(1, n_chunks))
    with warnings.catch_warnings():
        # matched by text: numba's built-in CUDA target and numba-cuda each
        # raise it as their own NumbaPerformanceWarning class
        warnings.filterwarnings("ignore", message=".*Grid size .* under-utilization")
        kernel[grid, THREADS_PER_BLOCK](*args)


def zeros(shape, dtype=np.float64):
    """A device array of zeros, filled on the device (no host array, no transfer)."""
    array = cuda.device_array(shape, dtype=dtype)
    launch(_fill_zero, array.size, array.reshape(array.size))
    return array


@cuda.jit
def _sum_chunks_kernel(parts, out):
    x = cuda.grid(1)
    if x < out.shape[0]:
        total = 0.0
        for c in range(parts.shape[0]):
            total += parts[c, x]
        out[x] = total


def sum_chunks(parts):
    """``parts.sum(axis=0)`` on the device, chunks added in order (same bits every run).

    Parameters
    ----------
    parts : numba.cuda device array, float64, shape (n_chunks, ...)

    Returns
    -------
    numba.cuda device array, float64, shape ``parts.shape[1:]``
    """
    size = parts.size // parts.shape[0]
    out = cuda.device_array(size)
    launch(_sum_chunks_kernel, size, parts.reshape(parts.shape[0], size), out)
    return out.reshape(parts.shape[1:])


@cuda.jit(device=True, inline=True)
def _dosage(packed, row, col):
    """The dosage at (row, col) of a packed matrix as a float, -1.0 where missing."""
    g = _genotype(packed, row, col)
    return -1.0 if g == MISSING_CODE else numba.float64(g)


@cuda.jit(device=True, inline=True)
def _zero(acc):
    """``acc[:] = 0``."""
    for s in range(acc.shape[0]):
        acc[s] = 0.0


@cuda.jit(device=True, inline=True)
def _genotype_factor(g, f):
    """P(g | f) without the binomial coefficient (dosage g in {0., 1., 2.})."""
    u = f if g >= 1.0 else 1.0 - f
    v = f if g >= 2.0 else 1.0 - f
    return u * v


@cuda.jit(device=True, inline=True)
def _em_frequency(p, a, b):
    """The EM update ``p a / (p a + (1 - p) b)`` of one frequency, in the box."""
    num = p * a
    den = num + (1.0 - p) * b
    if den > 0.0:
        p = num / den
    return min(max(p, P_MIN), P_MAX)


@cuda.jit(device=True, inline=True)
def _em_weights(g, f):
    """The EM weights ``(g / f, (2 - g) / (1 - f))`` of one genotype.

    One reciprocal, of ``f (1 - f)``, as in the CPU's EM.
    """
    r = 1.0 / (f * (1.0 - f))
    return g * (1.0 - f) * r, (2.0 - g) * f * r


@cuda.jit(device=True, inline=True)
def _newton_weights(g, f):
    """Weights of one genotype in block relaxation's statistics.

    Returns ``(a, w1, w2)``: the EM numerator's ``a = g / f``, the gradient's
    ``w1 = a - b`` and the minus-Hessian's ``w2 = a / f + b / (1 - f)``, with
    ``b = (2 - g) / (1 - f)``; two reciprocals, not four divisions, as on the CPU.
    """
    r1 = 1.0 / f
    r2 = 1.0 / (1.0 - f)
    a = g * r1
    b = (2.0 - g) * r2
    return a, a - b, a * r1 + b * r2


@cuda.jit(device=True, inline=True)
def _log_step(prod, ll, since, factor):
    """One genotype's ``factor`` into a log-likelihood kept as ``ll + log(prod)``.

    The product moves into ``ll`` every ``LOG_EVERY`` factors: one log per
    block, not per genotype, as on the CPU. Returns the new ``(prod, ll, since)``.
    """
    prod *= factor
    since += 1
    if since == LOG_EVERY:
        ll += math.log(prod)
        prod = 1.0
        since = 0
    return prod, ll, since


@functools.cache
def kernels(K: int) -> types.SimpleNamespace:
    """The compiled kernels for ``K`` components (numba.cuda needs K at compile time).

    Long because numba.cuda sizes a thread's local arrays only by compile-time
    constants: every kernel is a closure over ``K`` (and the sizes derived
    from it), so the kernels are defined together inside this one factory,
    each with its own docstring.

    Parameters
    ----------
    K : int
        Number of components.

    Returns
    -------
    types.SimpleNamespace
        ``snp_em``, ``ind_em``, ``p_em``, ``snp_loglik``, ``p_stats``,
        ``p_newton``, ``p_fallback``, ``q_stats``: see each kernel's docstring.
    """
    twins = _device_twins()
    newton_step = twins["constrained_newton_step"]
    step_bounds = twins["step_bounds"]
    NT = K * (K + 1) // 2
    STATS = K + NT  # local array shapes must be compile-time constants
    KK = (K, K)
    IW = (2, K)
    WK = (K + 3, K)
    f64 = numba.float64

    @cuda.jit(device=True, inline=True)
    def frequency(Q, i, p):
        f = 0.0
        for k in range(K):
            f += Q[i, k] * p[k]
        return f

    @cuda.jit(device=True, inline=True)
    def row_range(total, size):
        lo = cuda.blockIdx.y * size
        return lo, min(lo + size, total)

    @cuda.jit(device=True, inline=True)
    def load_row(X, row, out):
        """``out[:] = X[row, :K]``."""
        for k in range(K):
            out[k] = X[row, k]

    @cuda.jit(device=True, inline=True)
    def add_scaled(acc, X, row, w):
        """``acc[:K] += X[row, :K] * w``."""
        for k in range(K):
            acc[k] += X[row, k] * w

    @cuda.jit(device=True, inline=True)
    def add_triangle(acc, offset, X, row, tri_r, tri_c, w):
        """``acc[offset + s] += X[row, tri_r[s]] X[row, tri_c[s]] w``, NT pairs s."""
        for s in range(NT):
            acc[offset + s] += X[row, tri_r[s]] * X[row, tri_c[s]] * w

    @cuda.jit
    def snp_em(G, Q, P, cols, rows, A, B, ll_snp, want_ll):
        """EM sums of the SNPs ``cols`` over chunk ``c`` (grid row) of individuals.

        ``A[c, j, k] = sum_i q_ik g_ij / f_ij``, ``B[c, j, k] = sum_i q_ik (2 - g_ij) /
        (1 - f_ij)`` and, when ``want_ll``, ``ll_snp[c, j] =`` the chunk's
        log-likelihood of SNP j.
        """
        c = cuda.grid(1)
        if c >= cols.shape[0]:
            return
        j = cols[c]
        i0, i1 = row_range(Q.shape[0], rows)
        p = cuda.local.array(K, f64)
        a_acc = cuda.local.array(K, f64)
        b_acc = cuda.local.array(K, f64)
        load_row(P, j, p)
        _zero(a_acc)
        _zero(b_acc)
        prod, ll, since = 1.0, 0.0, 0
        for i in range(i0, i1):
            gf = _dosage(G, i, j)
            if gf < 0.0:
                continue
            f = frequency(Q, i, p)
            a, b = _em_weights(gf, f)
            add_scaled(a_acc, Q, i, a)
            add_scaled(b_acc, Q, i, b)
            if want_ll:
                prod, ll, since = _log_step(prod, ll, since, _genotype_factor(gf, f))
        for k in range(K):
            A[cuda.blockIdx.y, j, k] = a_acc[k]
            B[cuda.blockIdx.y, j, k] = b_acc[k]
        if want_ll:
            ll_snp[cuda.blockIdx.y, j] = ll + math.log(prod)

    @cuda.jit
    def ind_em(GT, Q, P, cols, span, Q_acc, n_obs):
        """EM sums of every individual over chunk ``c`` of ``span`` entries of ``cols``.

        ``Q_acc[c, i, k] = sum_j p_jk g_ij / f_ij + (1 - p_jk) (2 - g_ij) / (1 - f_ij)``
        and ``n_obs[c, i] =`` the observed genotypes.
        """
        i = cuda.grid(1)
        if i >= Q.shape[0]:
            return
        c0, c1 = row_range(cols.shape[0], span)
        q = cuda.local.array(K, f64)
        acc = cuda.local.array(K, f64)
        load_row(Q, i, q)
        _zero(acc)
        count = 0
        for c in range(c0, c1):
            j = cols[c]
            gf = _dosage(GT, j, i)
            if gf < 0.0:
                continue
            f = frequency(P, j, q)
            a, b = _em_weights(gf, f)
            for k in range(K):
                acc[k] += P[j, k] * (a - b) + b
            count += 1
        for k in range(K):
            Q_acc[cuda.blockIdx.y, i, k] = acc[k]
        n_obs[cuda.blockIdx.y, i] = f64(count)

    @cuda.jit
    def p_em(P, A, B, cols, P_out):
        """The EM update of the frequencies of the SNPs ``cols`` into ``P_out``."""
        c = cuda.grid(1)
        if c >= cols.shape[0]:
            return
        j = cols[c]
        for k in range(K):
            P_out[j, k] = _em_frequency(P[j, k], A[j, k], B[j, k])

    @cuda.jit
    def snp_loglik(G, Q, P, rows, ll_snp):
        """``ll_snp[c, j] =`` SNP j's log-likelihood over chunk ``c`` of individuals."""
        j = cuda.grid(1)
        if j >= P.shape[0]:
            return
        i0, i1 = row_range(Q.shape[0], rows)
        p = cuda.local.array(K, f64)
        load_row(P, j, p)
        prod, ll, since = 1.0, 0.0, 0
        for i in range(i0, i1):
            gf = _dosage(G, i, j)
            if gf < 0.0:
                continue
            prod, ll, since = _log_step(prod, ll, since,
                                        _genotype_factor(gf, frequency(Q, i, p)))
        ll_snp[cuda.blockIdx.y, j] = ll + math.log(prod)

    @cuda.jit
    def p_stats(G, Q, P, tri_r, tri_c, rows, gP, HP, A, ll_snp):
        """Block relaxation's statistics of every SNP over chunk ``c`` of individuals.

        ``gP[c]`` (n, K): gradient of the SNP's log-likelihood in its frequencies;
        ``HP[c]`` (n, K(K+1)/2): minus its Hessian's upper triangle; ``A[c]`` (n, K):
        the EM numerator ``sum_i q_ik g_ij / f_ij``; ``ll_snp[c]`` (n,):
        log-likelihood.
        """
        j = cuda.grid(1)
        if j >= P.shape[0]:
            return
        i0, i1 = row_range(Q.shape[0], rows)
        p = cuda.local.array(K, f64)
        g_acc = cuda.local.array(K, f64)
        a_acc = cuda.local.array(K, f64)
        h_acc = cuda.local.array(NT, f64)
        load_row(P, j, p)
        _zero(g_acc)
        _zero(a_acc)
        _zero(h_acc)
        prod, ll, since = 1.0, 0.0, 0
        for i in range(i0, i1):
            gf = _dosage(G, i, j)
            if gf < 0.0:
                continue
            f = frequency(Q, i, p)
            a, w1, w2 = _newton_weights(gf, f)
            add_scaled(g_acc, Q, i, w1)
            add_scaled(a_acc, Q, i, a)
            add_triangle(h_acc, 0, Q, i, tri_r, tri_c, w2)
            prod, ll, since = _log_step(prod, ll, since, _genotype_factor(gf, f))
        for k in range(K):
            gP[cuda.blockIdx.y, j, k] = g_acc[k]
            A[cuda.blockIdx.y, j, k] = a_acc[k]
        for s in range(NT):
            HP[cuda.blockIdx.y, j, s] = h_acc[s]
        ll_snp[cuda.blockIdx.y, j] = ll + math.log(prod)

    @cuda.jit
    def p_newton(P, gP, HP, tri_r, tri_c, P_out):
        """Box-constrained Newton step of every SNP's frequencies into ``P_out``."""
        j = cuda.grid(1)
        if j >= P.shape[0]:
            return
        x = cuda.local.array(K, f64)
        gv = cuda.local.array(K, f64)
        d = cuda.local.array(K, f64)
        out = cuda.local.array(K, f64)
        lo = cuda.local.array(K, f64)
        hi = cuda.local.array(K, f64)
        C = cuda.local.array(KK, f64)
        iwork = cuda.local.array(IW, numba.int64)
        work = cuda.local.array(WK, f64)
        load_row(P, j, x)
        load_row(gP, j, gv)
        for s in range(NT):
            C[tri_r[s], tri_c[s]] = HP[j, s]
            C[tri_c[s], tri_r[s]] = HP[j, s]
        step_bounds(x, P_MIN, P_MAX, lo, hi)
        newton_step(x, gv, C, lo, hi, False, iwork, d, work, out)
        for k in range(K):
            P_out[j, k] = out[k]

    @cuda.jit
    def p_fallback(P, gP, A, ll_old, ll_new, P_out, n_bad):
        """Give every SNP whose Newton step lowered its log-likelihood its EM update.

        The EM denominator is ``B = A - gradient``; ``n_bad[0]`` counts the SNPs.
        """
        j = cuda.grid(1)
        if j >= P.shape[0] or ll_new[j] >= ll_old[j]:
            return
        cuda.atomic.add(n_bad, 0, 1)
        for k in range(K):
            P_out[j, k] = _em_frequency(P[j, k], A[j, k], A[j, k] - gP[j, k])

    @cuda.jit
    def q_stats(GT, Q, P, tri_r, tri_c, span, stats):
        """Each individual's gradient and minus-Hessian triangle, chunk ``c`` of SNPs.

        ``stats[c]`` (m, K + K(K+1)/2), as
        :func:`admixspec.ml._kernels.newton.q_statistics`.
        """
        i = cuda.grid(1)
        if i >= Q.shape[0]:
            return
        c0, c1 = row_range(P.shape[0], span)
        q = cuda.local.array(K, f64)
        acc = cuda.local.array(STATS, f64)
        load_row(Q, i, q)
        _zero(acc)
        for j in range(c0, c1):
            gf = _dosage(GT, j, i)
            if gf < 0.0:
                continue
            f = frequency(P, j, q)
            _, w1, w2 = _newton_weights(gf, f)
            add_scaled(acc, P, j, w1)
            add_triangle(acc, K, P, j, tri_r, tri_c, w2)
        for s in range(STATS):
            stats[cuda.blockIdx.y, i, s] = acc[s]

    return types.SimpleNamespace(
        snp_em=snp_em, ind_em=ind_em, p_em=p_em, snp_loglik=snp_loglik,
        p_stats=p_stats, p_newton=p_newton, p_fallback=p_fallback, q_stats=q_stats,
    )
