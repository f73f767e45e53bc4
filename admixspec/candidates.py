"""Candidate rows of Q^+ from the eigenpairs of the whitened tensor.

Each eigenpair ``(u, lambda)`` gives a candidate ``v = K u / lambda`` (seed
paper eq. subsets); the true ones are the columns of ``W^+`` (``W = Q^T``), so
``v^T x_j`` estimates SNP ``j``'s allele frequency in one ancestral population.

Two facts of the admixture model are used (method.md §4):

* **Sum to one.** ``Q 1_K = 1_m`` implies ``1^T v = 1`` for every true
  candidate. The ``1/lambda`` scale is exact only for binary allele
  frequencies, so each candidate is *rescaled* to ``1^T v = 1`` rather than
  filtered by it.
* **Range.** ``v^T x_j`` is a frequency, so it lies in [0, 1] up to noise;
  the share of SNPs far outside that interval ranks spurious candidates low.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CandidateSet", "make_candidates", "range_scores"]


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
        SNPs (0 for a perfect candidate without noise); lower is better.
    """

    vectors: np.ndarray
    eigenvalues: np.ndarray
    raw_sums: np.ndarray
    range_score: np.ndarray

    def __len__(self) -> int:
        return self.vectors.shape[0]

    def take(self, index) -> "CandidateSet":
        """Candidates at the given positions, in that order."""
        index = np.asarray(index, dtype=np.int64)
        return CandidateSet(
            self.vectors[index],
            self.eigenvalues[index],
            self.raw_sums[index],
            self.range_score[index],
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


def make_candidates(eigenvectors, eigenvalues, K_white, x_score, *, min_abs_sum=1e-3):
    """Turn whitened-tensor eigenpairs into rescaled candidates.

    Parameters
    ----------
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
    raw = (np.asarray(eigenvectors)[keep] @ K_white.T) / eigenvalues[keep, None]
    sums = raw.sum(axis=1)
    scale = np.max(np.abs(sums)) if len(sums) else 1.0
    usable = np.abs(sums) > min_abs_sum * max(scale, np.finfo(float).tiny)
    vectors = raw[usable] / sums[usable, None]
    return CandidateSet(
        vectors=vectors,
        eigenvalues=eigenvalues[keep][usable],
        raw_sums=sums[usable],
        range_score=range_scores(vectors, x_score),
    )
