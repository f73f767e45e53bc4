"""The VCF call rules as a numba kernel: one read of a block's allele indices.

:func:`admixspec.io.calls.decode_calls` imports this module when it first
decodes, so that importing the readers does not import numba. NumPy's version
made a dozen boolean masks of each block and reduced it twice more to check the
allele indices: a streamed VCF Zarr fit spent about three times its likelihood
passes' time decoding (docs/benchmarks.md, "Decoding VCF calls in one read").
"""

from __future__ import annotations

import numba

from ..core.genotypes import MISSING

#: Columns of ``tallies``: haploid calls, half calls, polyploid calls, and 1
#: where the record holds an allele index beyond its ALT alleles or below -2.
HAPLOID, HALF, POLYPLOID, OUT_OF_RANGE = range(4)


@numba.njit(parallel=True, cache=True, nogil=True)
def decode_records(alleles, n_alt, out, tallies):
    """``out[s, r]``: REF copies of sample ``s`` at record ``r``, by the VCF rules.

    Parameters
    ----------
    alleles : int8 or int16, shape (n_records, n_samples, ploidy)
        Allele indices, -1 missing, -2 the fill of a shorter ploidy.
    n_alt : int64, shape (n_records,)
        ALT alleles of each record.
    out : int8, shape (n_samples, n_records)
        Written in full (:data:`MISSING` for a missing, half or polyploid call).
    tallies : int64, shape (n_records, 4)
        Written: each record's counts, in the columns :data:`HAPLOID`,
        :data:`HALF`, :data:`POLYPLOID`, :data:`OUT_OF_RANGE`.
    """
    n_records, n_samples, ploidy = alleles.shape
    for r in numba.prange(n_records):
        limit = n_alt[r]
        haploid = half = polyploid = out_of_range = 0
        for s in range(n_samples):
            for j in range(ploidy):
                if alleles[r, s, j] > limit or alleles[r, s, j] < -2:
                    out_of_range = 1
            first = alleles[r, s, 0]
            second = alleles[r, s, 1] if ploidy > 1 else -2
            # a haploid call reads as homozygous, as PLINK 1 stores it
            is_haploid = second == -2 and first >= 0
            is_half = (first < 0 and second >= 0) or (first >= 0 and second == -1)
            missing = first < 0 or second == -1
            if not missing:
                for j in range(2, ploidy):
                    if alleles[r, s, j] != -2:
                        polyploid += 1
                        missing = True
                        break
            dosage = (first == 0) + (second == 0)
            if is_haploid:
                dosage *= 2
            out[s, r] = MISSING if missing else dosage
            haploid += is_haploid
            half += is_half
        tallies[r, HAPLOID] = haploid
        tallies[r, HALF] = half
        tallies[r, POLYPLOID] = polyploid
        tallies[r, OUT_OF_RANGE] = out_of_range
