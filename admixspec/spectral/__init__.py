"""The spectral estimator: moments, denoising, tensor eigenpairs, candidate selection.

:mod:`~admixspec.spectral.binary_latent` is the seed paper's general binary latent
model; :mod:`~admixspec.spectral.estimate` is its admixture specialisation, built from
:mod:`~admixspec.spectral.moments`, :mod:`~admixspec.spectral.denoise`,
:mod:`~admixspec.spectral.tensor`, :mod:`~admixspec.spectral.candidates` and
:mod:`~admixspec.spectral.search`.
"""
