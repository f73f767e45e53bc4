"""Genotypes onto the device, packed 2 bits each both ways, one chunk of SNPs at a time.

The GPU engine's kernels read the genotypes packed four to a byte twice:
``GT`` (SNPs x individuals, packed along individuals: the layout of a
``.bed``) and ``G`` (individuals x SNPs, packed along SNPs), see
:mod:`admixspec.backends.gpu.kernels`. :func:`to_device` fills ``GT`` chunk of
SNPs by chunk of SNPs and makes each chunk's bytes of ``G`` from it on the
device (:func:`~admixspec.backends.gpu.kernels.transpose_packed`), so the
host never holds either whole packed matrix:

* a ``.bed`` streamed from disk (:class:`admixspec.io.bed_chunks.BedChunks`)
  travels in the file's own bytes (:meth:`~admixspec.io.bed_chunks.BedChunks.bed_bytes`),
  and the device keeps the kept individuals and recodes them
  (:func:`~admixspec.backends.gpu.kernels.bed_rows`): the host holds one
  chunk of the file's rows and no int8 matrix at all;
* other streamed sources (VCF Zarr) are decoded on the host one chunk at a
  time (the source's own int8 buffer) and packed there;
* an int8 matrix in memory is packed one slice of :data:`PACK_BYTES` at a
  time.

The file is read once, when the engine is made; the passes read the device's
copy.
"""

from __future__ import annotations

import numpy as np

from ...core.chunks import chunk_bounds
from ...core.exceptions import UsageError
from .kernels import MISSING_CODE, bed_rows, cuda, launch, pack_rows, transpose_packed

__all__ = ["PACK_BYTES", "packed_bytes", "to_device"]

#: int8 genotypes packed on the host per slice of an in-memory matrix (64 MiB).
PACK_BYTES = 1 << 26


def packed_bytes(n_individuals: int, n_snps: int) -> int:
    """Device bytes of the genotypes in both packed orientations.

    Examples
    --------
    >>> packed_bytes(10_000, 500_000) / 1e9
    2.5
    """
    return n_snps * -(-n_individuals // 4) + n_individuals * -(-n_snps // 4)


def _transpose(d_GT, d_G, start: int, stop: int):
    """The bytes of ``G`` holding SNPs ``start:stop``, from ``GT`` (filled to ``stop``).

    A byte shared with the next chunk's SNPs is made again with that chunk.
    """
    b0, b1 = start // 4, -(-stop // 4)
    launch(transpose_packed, d_G.shape[0] * (b1 - b0), d_GT, b0, b1, d_G)


def _fill_from_bed(source, d_GT, d_G):
    """``GT`` from a ``.bed``'s own bytes, chunk by chunk of the source's SNPs."""
    from ...io.bed_chunks import CODE_DOSAGE

    codes = np.where(CODE_DOSAGE < 0, MISSING_CODE, CODE_DOSAGE).astype(np.uint8)
    d_codes, d_rows = cuda.to_device(codes), cuda.to_device(source.rows)
    d_raw = None
    width = d_GT.shape[1]
    for start, stop in source.bounds:
        for done, raw, picks in source.bed_bytes(start, stop):
            if d_raw is None:  # as large as the source's byte buffer
                d_raw = cuda.device_array((source.chunk_snps, raw.shape[1]), np.uint8)
            part = d_raw[: len(raw)]
            part.copy_to_device(raw)
            launch(bed_rows, len(picks) * width, part, cuda.to_device(picks), d_rows,
                   d_codes, d_GT, start + done)
        _transpose(d_GT, d_G, start, stop)


def _fill_from_int8(bounds, chunk, d_GT, d_G):
    """``GT`` from int8 chunks ``chunk(start, stop)`` (individuals x SNPs) packed."""
    for start, stop in bounds:
        d_GT[start:stop].copy_to_device(pack_rows(chunk(start, stop), transpose=True))
        _transpose(d_GT, d_G, start, stop)


def to_device(genotypes, source):
    """The genotypes on the device, packed, as the GPU engine's kernels read them.

    Parameters
    ----------
    genotypes : numpy.ndarray, int8, shape (n_individuals, n_snps), or GenotypeChunks
        What the engine was given: a checked dosage matrix, or a source
        streamed from disk (:class:`admixspec.io.streamed.StreamedChunks`).
    source : GenotypeChunks
        ``genotypes`` as the engine's chunk source (its shape and SNP chunks).

    Returns
    -------
    d_G : numba.cuda device array, uint8, shape (n_individuals, ceil(n_snps / 4))
    d_GT : numba.cuda device array, uint8, shape (n_snps, ceil(n_individuals / 4))
        As :func:`admixspec.backends.gpu.kernels.pack_rows` packs ``G`` and
        ``G.T`` (padding reads as missing).

    Raises
    ------
    UsageError
        A chunk source that is neither in memory nor streamed from a file
        (genotypes on Dask workers stay there).
    """
    m, n = source.n_individuals, source.n_snps
    d_GT = cuda.device_array((n, -(-m // 4)), np.uint8)
    d_G = cuda.device_array((m, -(-n // 4)), np.uint8)
    if isinstance(genotypes, np.ndarray):
        step = max(4, PACK_BYTES // max(m, 1) // 4 * 4)
        _fill_from_int8(chunk_bounds(n, step, align=4),
                        lambda start, stop: genotypes[:, start:stop], d_GT, d_G)
    elif hasattr(source, "bed_bytes"):
        _fill_from_bed(source, d_GT, d_G)
    elif hasattr(source, "chunk"):
        _fill_from_int8(source.bounds, source.chunk, d_GT, d_G)
    else:
        raise UsageError(f"the GPU engine cannot read genotypes held as "
                         f"{type(source).__name__}")
    cuda.synchronize()
    return d_G, d_GT
