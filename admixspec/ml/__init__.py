"""The maximum-likelihood engine: ADMIXTURE's model fitted exactly.

:mod:`~admixspec.ml.likelihood` holds the compiled kernels, :mod:`~admixspec.ml.initial`
the starting values, :mod:`~admixspec.ml.refine` the accelerated fit, and
:mod:`~admixspec.ml.crossval`, :mod:`~admixspec.ml.bootstrap` and
:mod:`~admixspec.ml.project` the modes built on it.
"""
