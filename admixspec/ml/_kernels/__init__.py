"""The ML engine's numba kernels, in modules that import only numpy, numba and
:mod:`admixspec.core` (as sgkit keeps ``*_numba_fns.py`` apart from its API).

The numba options every parallel kernel compiles with live here, in one place.
"""

#: Options of every parallel likelihood kernel. The kernels are written so that
#: LLVM vectorises them over the SNPs of a block: P is copied transposed into a
#: (K, block) scratch array, f, the EM weights and the likelihood factors are
#: computed branch-free for all SNPs of the block, and fastmath allows the
#: reductions to be reassociated. This made one EM pass 4.4x faster than a
#: per-genotype branching loop (measured on 200 x 30k, K = 4, 2 threads) with
#: results equal to 1e-15 relative. Every f lies in [1e-5, 1 - 1e-5] because Q
#: and P are kept inside their box, so fastmath's no-NaN/no-infinity
#: assumptions hold.
FAST = dict(parallel=True, cache=True, nogil=True, error_model="numpy", fastmath=True)
