"""Genotypes as chunks of SNPs: the interface every likelihood pass reads through.

A pass of the ML engine (:class:`admixspec.ml.likelihood.Engine`,
:class:`admixspec.ml.newton.BlockNewton`) reads each SNP only together with
that SNP's row of P, and adds per-individual statistics of Q over SNPs. So a
pass splits exactly into chunks of SNPs (all individuals): the same numba
kernel runs on each chunk with that chunk's P rows, the Q statistics and
log-likelihoods are summed over chunks, and the new P rows are concatenated.

A :class:`GenotypeChunks` source says where its chunks are and runs a function
over them (:meth:`GenotypeChunks.map`); whether a chunk comes from memory,
is decoded from a ``.bed`` file on disk (:class:`admixspec.io.bed_chunks.BedChunks`)
or lives on a Dask worker is the source's business. :class:`InMemoryChunks`
wraps an int8 matrix as one chunk, so the in-memory engine gives the same bits
as it did before chunks existed.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from .genotypes import snp_statistics

__all__ = ["BLOCK_SIZE", "GenotypeChunks", "InMemoryChunks", "add_sums", "as_chunks",
           "chunk_bounds", "count_observed", "map_sum"]

#: SNPs per block of the likelihood kernels: chunks start at multiples of it,
#: so a chunked pass runs the same SNP blocks as an unchunked one.
BLOCK_SIZE = 64

@runtime_checkable
class GenotypeChunks(Protocol):
    """Genotypes (individuals x SNPs) readable one chunk of SNPs at a time.

    Attributes
    ----------
    n_individuals : int
    n_snps : int
    bounds : list of (int, int)
        ``(start, stop)`` SNP ranges, in order, covering all SNPs once.
    n_observed : numpy.ndarray, float64, shape (n_individuals,)
        Non-missing genotypes of each individual over all SNPs.
    """

    n_individuals: int
    n_snps: int
    bounds: list
    n_observed: np.ndarray

    def map(self, function: Callable, P, *shared) -> list:
        """``[function(G_chunk, P[start:stop], *shared) for (start, stop) in bounds]``.

        Parameters
        ----------
        function : callable
            A module-level (picklable) function; ``G_chunk`` is int8, shape
            ``(n_individuals, stop - start)``, C-contiguous, -1 missing.
        P : numpy.ndarray, shape (n_snps, ...)
            Per-SNP rows (P, possibly with extra columns); each call receives
            its chunk's rows.
        *shared
            Arguments that are the same for every chunk (Q, flags, ...): a
            distributed source sends them once per call, not once per chunk.

        Returns
        -------
        list
            The results, in the order of ``bounds``.
        """
        ...


def add_sums(sums: list) -> tuple:
    """Add tuples of per-chunk sums field by field, in the order given.

    Parameters
    ----------
    sums : list of tuple
        One tuple of arrays or numbers per chunk, all of the same structure.

    Returns
    -------
    tuple

    Examples
    --------
    >>> add_sums([(1.0, np.ones(2)), (2.0, np.ones(2))])
    (3.0, array([2., 2.]))
    """
    return tuple(sum(fields) for fields in zip(*sums, strict=True))


def map_sum(chunks: GenotypeChunks, function: Callable, P,
            *shared) -> tuple[list, tuple]:
    """Run a pass whose per-chunk statistics are only needed summed over chunks.

    ``function(G_chunk, P_rows, *shared)`` returns ``(rows, sums)``: ``rows``
    belongs to its chunk (new P rows, or None), ``sums`` is a tuple of arrays
    or numbers (Q's sufficient statistics, log-likelihoods, counts) added over
    chunks. A source with its own ``map_sum`` method adds them where the
    chunks are (a Dask cluster sums them in a tree on the workers, so the
    client receives one ``m × K``-sized sum per pass, not one per chunk);
    for others the sums are added here, in chunk order.

    Parameters
    ----------
    chunks : GenotypeChunks
    function : callable
        As for :meth:`GenotypeChunks.map`, returning ``(rows, sums)``.
    P : numpy.ndarray, shape (n_snps, ...)
    *shared
        As for :meth:`GenotypeChunks.map`.

    Returns
    -------
    rows : list
        Each chunk's ``rows``, in the order of ``chunks.bounds``.
    sums : tuple
        The ``sums`` added over all chunks.
    """
    own = getattr(chunks, "map_sum", None)
    if own is not None:
        return own(function, P, *shared)
    parts = chunks.map(function, P, *shared)
    return [part[0] for part in parts], add_sums([part[1] for part in parts])


def chunk_bounds(n_snps: int, chunk_snps: int, align: int = BLOCK_SIZE) -> list:
    """``(start, stop)`` ranges of at most ``chunk_snps`` SNPs, multiples of ``align``.

    Chunks start at multiples of ``align`` (the kernels' SNP block) so that a
    chunked pass runs the same SNP blocks as an unchunked one.

    Parameters
    ----------
    n_snps : int
    chunk_snps : int
        Largest chunk; rounded down to a multiple of ``align`` (at least one).
    align : int

    Returns
    -------
    list of (int, int)

    Examples
    --------
    >>> chunk_bounds(300, 128)
    [(0, 128), (128, 256), (256, 300)]
    >>> chunk_bounds(0, 128)
    []
    """
    step = max(align, int(chunk_snps) // align * align)
    return [(start, min(start + step, n_snps)) for start in range(0, n_snps, step)]


def count_observed(G: np.ndarray) -> np.ndarray:
    """Non-missing genotypes of each individual (a chunk source's ``n_observed``).

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)
        -1 missing.

    Returns
    -------
    numpy.ndarray, float64, shape (n_individuals,)

    Examples
    --------
    >>> count_observed(np.array([[0, 2, -1], [1, 1, 0]], dtype=np.int8)).tolist()
    [2.0, 3.0]
    """
    return (G.shape[1] - snp_statistics(G)[2]).astype(np.float64)


class InMemoryChunks:
    """An int8 dosage matrix in memory as a single chunk.

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)
        Checked dosage (see :func:`admixspec.ml.likelihood.check_dosage`).

    Examples
    --------
    >>> G = np.array([[0, 2, -1], [1, 1, 0]], dtype=np.int8)
    >>> chunks = InMemoryChunks(G)
    >>> chunks.bounds, chunks.n_observed.tolist()
    ([(0, 3)], [2.0, 3.0])
    >>> chunks.map(lambda g, p, s: int(g.sum() + p.sum() + s), np.ones((3, 1)), 10)
    [16]
    """

    def __init__(self, G: np.ndarray):
        self.G = G
        self.n_individuals, self.n_snps = G.shape
        self.bounds = [(0, self.n_snps)]
        self.n_observed = count_observed(G)

    def map(self, function: Callable, P, *shared) -> list:
        """Run ``function(G, P, *shared)`` on the one chunk (:class:`GenotypeChunks`)."""
        return [function(self.G, P, *shared)]


#: Where :func:`as_chunks` puts genotypes: None keeps them where they are (an
#: int8 matrix in memory); a callable ``genotypes -> GenotypeChunks`` places them
#: elsewhere (:func:`admixspec.backends.distributed.use_client` sets one that puts
#: them on Dask workers).
placement: contextvars.ContextVar = contextvars.ContextVar("admixspec_chunk_placement",
                                                          default=None)


def as_chunks(genotypes) -> GenotypeChunks:
    """A :class:`GenotypeChunks` source: ``genotypes`` itself, or an int8 array wrapped.

    Parameters
    ----------
    genotypes : GenotypeChunks or numpy.ndarray, int8, shape (n_individuals, n_snps)

    Returns
    -------
    GenotypeChunks
    """
    place = placement.get()
    if place is not None:
        return place(genotypes)
    if isinstance(genotypes, np.ndarray):
        return InMemoryChunks(genotypes)
    return genotypes
