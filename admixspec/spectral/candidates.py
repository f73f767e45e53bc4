"""Candidate rows of Q^+ from the eigenpairs of the whitened tensor.

Each eigenpair ``(u, lambda)`` gives a candidate ``v = K u / lambda`` (seed
paper eq. subsets); the true ones are the columns of ``W^+`` (``W = Q^T``), so
``v^T x_j`` estimates SNP ``j``'s allele frequency in one ancestral population.

Two facts of the admixture model are used (method.md §4):

* **Sum to one.** ``Q 1_K = 1_m`` implies ``1^T v = 1`` for every true
  candidate. The ``1/lambda`` scale is exact only for binary allele
  frequencies, so each candidate is *rescaled* to ``1^T v = 1`` rather than
  filtered by it.
* **Range.** ``v^T x_j`` is a frequency, so it lies in [0, 1] up to noise.
  Measured on simulations, the noise of ``v^T x_j`` grows with ``||v||`` and the
  true candidates (the longest vectors) had the *worst* range scores, so the
  score is reported but not used to rank or prune.

A third fact decides which candidates are the true ones: when every counted
allele is private to one population the whitened tensor is orthogonally
decomposable, and its true eigenvectors are exactly the *local maxima* of
``T(u, u, u)`` on the sphere (negative-definite projected Hessian; the seed
paper's "power-stable" pairs), while the other ``2^K - 1 - K`` eigenpairs are
saddles. :func:`curvatures` measures this: -1 for an exact component, +1 for
an exact composite.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CandidateSet", "curvatures", "make_candidates", "range_scores"]


@dataclass
class CandidateSet:
    """Candidate columns of ``W^+`` with their diagnostics.

    Attributes
    ----------
    vectors : numpy.ndarray, float64, shape (c, m)
        Candidates, each rescaled so that its entries sum to one.
    eigenvalues : numpy.ndarray, shape (c,)
        Eigenvalue ``lambda`` of the eigenpair each candidate came from.
    raw_sums : numpy.ndarray, shape (c,)
        ``1^T (K u / lambda)`` before rescaling (1 for binary frequencies).
    range_score : numpy.ndarray, shape (c,)
        Mean squared distance of ``v^T x_j`` from [0, 1] over the scoring
        SNPs (0 for a perfect candidate without noise).
    curvature : numpy.ndarray, shape (c,)
        Largest eigenvalue of the tangent Hessian of ``T(u,u,u)`` divided by
        ``lambda`` (see :func:`curvatures`): negative for a local maximum.
    """

    vectors: np.ndarray
    eigenvalues: np.ndarray
    raw_sums: np.ndarray
    range_score: np.ndarray
    curvature: np.ndarray

    def __len__(self) -> int:
        return self.vectors.shape[0]

    def take(self, index) -> CandidateSet:
        """Candidates at the given positions, in that order."""
        index = np.asarray(index, dtype=np.int64)
        return CandidateSet(
            self.vectors[index],
            self.eigenvalues[index],
            self.raw_sums[index],
            self.range_score[index],
            self.curvature[index],
        )


def range_scores(vectors, x):
    """Mean squared distance of the projections ``v^T x_j`` from [0, 1].

    Parameters
    ----------
    vectors : numpy.ndarray, shape (c, m)
    x : numpy.ndarray, shape (m, s)
        Allele frequencies of ``s`` scoring SNPs.

    Returns
    -------
    numpy.ndarray, shape (c,)
    """
    projections = vectors @ x
    outside = np.maximum(projections - 1.0, 0.0) + np.maximum(-projections, 0.0)
    return np.mean(outside * outside, axis=1)


def curvatures(T, vectors, values):
    """Curvature of ``T(u, u, u)`` on the sphere at each eigenvector.

    At an eigenpair ``(u, lambda)`` the Hessian of the Lagrangian restricted
    to the tangent space is proportional to ``U^T (2 T(I, I, u) - lambda I) U``
    (``U`` an orthonormal basis of ``u``'s complement). Its largest
    eigenvalue divided by ``lambda`` is returned: negative at a local maximum.
    For an orthogonally decomposable tensor it is exactly -1 at each component
    and +1 at every composite eigenpair.

    Parameters
    ----------
    T : numpy.ndarray, shape (K, K, K), symmetric
    vectors : numpy.ndarray, shape (p, K)
        Unit eigenvectors.
    values : numpy.ndarray, shape (p,)
        Their (positive) eigenvalues.

    Returns
    -------
    numpy.ndarray, shape (p,)

    Examples
    --------
    >>> T = np.zeros((2, 2, 2)); T[0, 0, 0] = 2.0; T[1, 1, 1] = 1.0
    >>> u = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 2.0]]) / np.sqrt([1, 1, 5])[:, None]
    >>> lam = np.einsum("ijk,pi,pj,pk->p", T, u, u, u)
    >>> np.round(curvatures(T, u, lam), 6).tolist()
    [-1.0, -1.0, 1.0]
    """
    vectors = np.asarray(vectors, dtype=float)
    values = np.asarray(values, dtype=float)
    K = T.shape[0]
    if len(vectors) == 0:
        return np.zeros(0)
    hessian = (2.0 * np.einsum("ijk,pk->pij", T, vectors)
               - values[:, None, None] * np.eye(K))
    projector = np.eye(K) - vectors[:, :, None] * vectors[:, None, :]
    tangent = projector @ hessian @ projector
    # push the normal direction's zero eigenvalue below every tangent one
    scale = np.abs(hessian).sum(axis=(1, 2)) + 1.0
    tangent -= scale[:, None, None] * vectors[:, :, None] * vectors[:, None, :]
    return np.linalg.eigvalsh(tangent)[:, -1] / values


def make_candidates(T, eigenvectors, eigenvalues, K_white, x_score, *, min_abs_sum=1e-3):
    """Turn whitened-tensor eigenpairs into rescaled candidates.

    Parameters
    ----------
    T : numpy.ndarray, shape (K, K, K)
        The whitened tensor.
    eigenvectors : numpy.ndarray, shape (p, K)
        Unit eigenvectors ``u`` of the whitened tensor.
    eigenvalues : numpy.ndarray, shape (p,)
        Their eigenvalues ``lambda >= 0``.
    K_white : numpy.ndarray, shape (m, K)
        Whitening matrix.
    x_score : numpy.ndarray, shape (m, s)
        Allele frequencies of SNPs used for the range score.
    min_abs_sum : float
        Candidates whose entries sum to less than this (in absolute value,
        before rescaling, relative to the largest such sum) cannot be put on the
        sum-to-one scale and are dropped.

    Returns
    -------
    CandidateSet
    """
    eigenvalues = np.asarray(eigenvalues, dtype=float)
    keep = eigenvalues > 0
    eigenvectors = np.asarray(eigenvectors)[keep]
    raw = (eigenvectors @ K_white.T) / eigenvalues[keep, None]
    sums = raw.sum(axis=1)
    scale = np.max(np.abs(sums)) if len(sums) else 1.0
    usable = np.abs(sums) > min_abs_sum * max(scale, np.finfo(float).tiny)
    vectors = raw[usable] / sums[usable, None]
    return CandidateSet(
        vectors=vectors,
        eigenvalues=eigenvalues[keep][usable],
        raw_sums=sums[usable],
        range_score=range_scores(vectors, x_score),
        curvature=curvatures(T, eigenvectors[usable], eigenvalues[keep][usable]),
    )
