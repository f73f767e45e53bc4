"""Primitives every layer shares: the genotype container, the parameter box,
allele counts and frequencies, the chunk protocol, metrics and exceptions.

Nothing in ``admixspec.core`` imports from the layers above it (``io``,
``spectral``, ``ml``, ``backends``, ``fit``).
"""
