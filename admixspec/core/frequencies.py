"""Allele frequencies from genotypes: blocks of ``g / 2``, observed frequencies,
and least-squares P given Q (and Q given P).

These are the shared starting points of every estimator: the spectral
moments read :func:`frequency_blocks`, the ML starts and the spectral path's
P come from :func:`least_squares_p` / :func:`least_squares_q`.
"""

from __future__ import annotations

import numpy as np

from .chunks import map_sum
from .genotypes import allele_counts
from .parameters import P_MAX, P_MIN, clip_proportions, simplex_projection

__all__ = [
    "BLOCK_ENTRIES",
    "allele_frequencies",
    "block_size_for",
    "frequency_blocks",
    "least_squares_p",
    "least_squares_q",
]

#: Entries (individuals x SNPs) of one float64 frequency block, 2^22 (32 MiB).
#: The blocks and their few same-sized temporaries are the only data-sized
#: memory of the moments; a fixed SNP count instead (8,192 SNPs were 650 MB
#: per block at 10,000 individuals) made them dominate the spectral stage.
BLOCK_ENTRIES = 2**22


def block_size_for(n_individuals: int) -> int:
    """SNPs per block: :data:`BLOCK_ENTRIES` entries, at least 64 SNPs.

    Examples
    --------
    >>> block_size_for(1000), block_size_for(100_000)
    (4194, 64)
    """
    return max(64, BLOCK_ENTRIES // max(int(n_individuals), 1))


def frequency_blocks(dosage, *, snps=None, flip=None, fill=None, block_size=None):
    """Yield float64 blocks of ``x = g / 2`` over SNP columns.

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (n_individuals, n_snps)
        Genotype dosages, -1 for missing.
    snps : numpy.ndarray of int, optional
        Column indices to use (default: all), in the order given.
    flip : numpy.ndarray of bool, shape (len(snps),), optional
        Columns whose other allele is counted instead (``x -> 1 - x``).
    fill : callable, optional
        ``fill(columns) -> (n_individuals, len(columns))`` float array of
        expected frequencies used where the call is missing (imputation by
        the current model). Default: the SNP's observed mean frequency.
    block_size : int, optional
        SNPs per block; default :func:`block_size_for` the number of
        individuals.

    Yields
    ------
    columns : numpy.ndarray of int
        Positions (in ``snps``) of the block's columns.
    x : numpy.ndarray, float64, shape (n_individuals, len(columns))
        Allele frequencies in {0, 1/2, 1}, missing entries imputed.
    """
    index = np.arange(dosage.shape[1]) if snps is None else np.asarray(snps)
    if block_size is None:
        block_size = block_size_for(dosage.shape[0])
    for start in range(0, len(index), block_size):
        positions = np.arange(start, min(start + block_size, len(index)))
        block = np.take(dosage, index[positions], axis=1)
        flipped = np.zeros(len(positions), bool) if flip is None else flip[positions]
        any_flipped = bool(flipped.any())
        missing = block < 0
        if missing.any():
            x = _imputed(block * 0.5, missing, fill, index[positions])
            if any_flipped:
                x *= np.where(flipped, -1.0, 1.0)
        else:  # g / 2 with the sign of each column's allele in one pass
            x = np.multiply(block, np.where(flipped, -0.5, 0.5), dtype=np.float64)
        if any_flipped:
            # -x + 1: the same bits as 1 - x, without gathering the flipped columns
            x += flipped
        yield positions, x


def _imputed(x, missing, fill, columns):
    """``x`` with its missing entries imputed (``fill``, else each SNP's mean)."""
    if fill is not None:
        return np.where(missing, fill(columns), x)
    observed = ~missing
    counts = observed.sum(axis=0)
    totals = np.where(observed, x, 0.0).sum(axis=0)
    # a SNP with no call at all carries no information: 0.5
    means = np.where(counts > 0, totals / np.maximum(counts, 1), 0.5)
    return np.where(missing, means[None, :], x)


def allele_frequencies(G: np.ndarray) -> np.ndarray:
    """Observed frequency of the counted allele per SNP (0.5 where all missing).

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)

    Returns
    -------
    numpy.ndarray, float64, shape (n_snps,)
    """
    counted, observed = allele_counts(G)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(observed > 0, counted / observed, 0.5)


def _least_squares_p_in_memory(G: np.ndarray, Q: np.ndarray) -> np.ndarray:
    pinv = np.linalg.pinv(Q)  # (K, m)
    P = np.empty((G.shape[1], Q.shape[1]))
    for positions, x in frequency_blocks(G):
        P[positions] = (pinv @ x).T
    return np.clip(P, P_MIN, P_MAX)


def _least_squares_p_chunk(G, rows, Q):
    return _least_squares_p_in_memory(G, Q)


def least_squares_p(genotypes, Q) -> np.ndarray:
    """Least-squares P for fixed Q (missing entries at the SNP mean), clipped to the box.

    Parameters
    ----------
    genotypes : numpy.ndarray, int8, shape (n_individuals, n_snps), or GenotypeChunks
        An in-memory matrix, or a chunk source (:mod:`admixspec.core.chunks`),
        read chunk by chunk wherever its chunks are.
    Q : numpy.ndarray, float64, shape (n_individuals, K)

    Returns
    -------
    numpy.ndarray, float64, shape (n_snps, K)
    """
    Q = np.asarray(Q, dtype=np.float64)
    if isinstance(genotypes, np.ndarray):
        return _least_squares_p_in_memory(genotypes, Q)
    parts = genotypes.map(_least_squares_p_chunk, np.empty((genotypes.n_snps, 0)), Q)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _least_squares_q_chunk(G, P):
    """``x P`` summed over one chunk's SNPs (a :func:`~.chunks.map_sum` task)."""
    XP = np.zeros((G.shape[0], P.shape[1]))
    for positions, x in frequency_blocks(G):
        XP += x @ P[positions]
    return None, (XP,)


def least_squares_q(genotypes, P: np.ndarray) -> np.ndarray:
    """Least-squares Q for fixed P, projected onto the simplex.

    Parameters
    ----------
    genotypes : numpy.ndarray, int8, shape (n_individuals, n_snps), or GenotypeChunks
        An in-memory matrix, or a chunk source read chunk by chunk.
    P : numpy.ndarray, float64, shape (n_snps, K)

    Returns
    -------
    numpy.ndarray, float64, shape (n_individuals, K)
    """
    P = np.asarray(P, dtype=np.float64)
    if isinstance(genotypes, np.ndarray):
        _, (XP,) = _least_squares_q_chunk(genotypes, P)
    else:
        _, (XP,) = map_sum(genotypes, _least_squares_q_chunk, P)
    Q = np.linalg.solve(P.T @ P, XP.T).T
    return clip_proportions(simplex_projection(Q))
