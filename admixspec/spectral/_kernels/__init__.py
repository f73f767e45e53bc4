"""The spectral estimator's numba kernels, in modules that import only numpy and
numba (as :mod:`admixspec.ml._kernels` keeps the ML engine's)."""
