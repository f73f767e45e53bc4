"""scikit-allel interop: from_allel reads calls as the VCF reader does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from admixspec import InputError, fit_admixture
from admixspec.io import from_allel, read_genotypes, read_vcf

allel = pytest.importorskip(
    "allel", reason="scikit-allel (the 'allel' extra) not installed"
)

DATA = Path(__file__).resolve().parent.parent / "data"

# One record per case the readers treat differently from a plain biallelic SNP.
VCF_TEXT = (
    "##fileformat=VCFv4.2\n"
    "##contig=<ID=1,length=1000>\n"
    '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
    "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ta\tb\tc\td\n"
    "1\t10\tsnp\tA\tG\t.\t.\t.\tGT\t0/0\t0/1\t1/1\t./.\n"
    "1\t20\tmulti\tA\tG,T\t.\t.\t.\tGT\t0/0\t1/2\t0/2\t0/1\n"
    "1\t30\tindel\tA\tAT\t.\t.\t.\tGT\t0/0\t0/1\t1/1\t0/0\n"
    "1\t40\thalf\tC\tT\t.\t.\t.\tGT\t0/.\t0|1\t1|1\t0/0\n"
    "1\t50\tmono\tG\t.\t.\t.\t.\tGT\t0/0\t0/0\t./.\t0/0\n"
    "1\t60\tsymbolic\tC\t<DEL>\t.\t.\t.\tGT\t0/0\t0/1\t0/0\t0/0\n"
)


@pytest.fixture(scope="module")
def example_callset():
    return allel.read_vcf(str(DATA / "example.vcf.gz"))


@pytest.fixture
def cases_vcf(tmp_path) -> Path:
    path = tmp_path / "cases.vcf"
    path.write_text(VCF_TEXT)
    return path


def from_callset(callset):
    return from_allel(
        allel.GenotypeArray(callset["calldata/GT"]),
        samples=callset["samples"],
        variants=callset,
    )


class TestFromAllel:
    def test_from_allel__example_same_dosage_and_Q_as_vcf_reader(self, example_callset):
        via_allel = from_callset(example_callset)
        via_vcf = read_genotypes(DATA / "example.vcf.gz", drop_monomorphic=False)
        assert np.array_equal(via_allel.dosage, via_vcf.dosage)
        assert via_allel.samples.tolist() == via_vcf.samples.tolist()
        assert via_allel.variants.equals(via_vcf.variants)
        Q_allel = fit_admixture(via_allel, 3, seed=1).Q
        Q_vcf = fit_admixture(via_vcf, 3, seed=1).Q
        assert np.array_equal(Q_allel, Q_vcf)

    def test_from_allel__missing_stays_missing_and_skips_match_vcf(self, cases_vcf):
        via_allel = from_callset(allel.read_vcf(str(cases_vcf)))
        via_vcf = read_vcf(cases_vcf)
        assert via_allel.variants["id"].tolist() == ["snp", "half", "mono"]
        assert np.array_equal(via_allel.dosage, via_vcf.dosage)
        # REF copies; ./. and the half call 0/. are missing, not 0 as to_n_alt fills.
        expected = [[2, 1, 0, -1], [-1, 1, 0, 2], [2, 2, -1, 2]]
        assert via_allel.dosage.T.tolist() == expected
        assert via_allel.variants["other"].tolist() == ["G", "T", "0"]
        details = via_allel.filter_log[0]["details"]
        assert details == {
            "multiallelic": 1, "indel": 1, "symbolic_or_other": 1, "records_read": 6
        }

    def test_from_allel__without_variants_skips_calls_of_a_third_allele(self, cases_vcf):
        callset = allel.read_vcf(str(cases_vcf))
        genotypes = from_allel(callset["calldata/GT"])
        assert genotypes.n_snps == 5  # only "multi" calls use allele index 2
        assert genotypes.filter_log[0]["details"]["multiallelic"] == 1
        assert genotypes.samples.tolist() == ["ind0", "ind1", "ind2", "ind3"]

    def test_from_allel__dataframe_variants_with_numbered_alt(self, cases_vcf):
        table = allel.vcf_to_dataframe(str(cases_vcf), fields="*", alt_number=2)
        callset = allel.read_vcf(str(cases_vcf))
        genotypes = from_allel(callset["calldata/GT"], variants=table)
        assert genotypes.variants["id"].tolist() == ["snp", "half", "mono"]

    def test_from_allel__haploid_array_reads_homozygous(self):
        calls = np.array([[[0], [1], [-1]]], dtype=np.int8)
        assert from_allel(calls).dosage[:, 0].tolist() == [2, 0, -1]

    def test_from_allel__dask_array_matches_in_memory(self, example_callset):
        da = pytest.importorskip("dask.array")
        gt = example_callset["calldata/GT"]
        lazy = allel.GenotypeDaskArray(da.from_array(gt, chunks=(1000, 60, 2)))
        lazy_result = from_allel(lazy, samples=example_callset["samples"],
                                 variants=example_callset)
        assert np.array_equal(lazy_result.dosage, from_callset(example_callset).dosage)

    def test_from_allel__one_alt_column_still_skips_a_third_allele(self, cases_vcf):
        # read_vcf(numbers={"ALT": 1}) keeps only the first ALT: the calls 1/2
        # and 0/2 of "multi" would otherwise be read as REF/ALT calls
        callset = allel.read_vcf(str(cases_vcf), numbers={"ALT": 1})
        genotypes = from_callset(callset)
        assert genotypes.variants["id"].tolist() == ["snp", "half", "mono"]
        assert genotypes.filter_log[0]["details"]["multiallelic"] == 1

    def test_from_allel__masked_calls_are_missing(self, cases_vcf):
        callset = allel.read_vcf(str(cases_vcf))
        calls = allel.GenotypeArray(callset["calldata/GT"])
        mask = np.zeros(calls.shape[:2], dtype=bool)
        mask[0, 0] = mask[3, 2] = True  # snp in a, half in c
        calls.mask = mask
        genotypes = from_allel(calls, variants=callset)
        expected = [[-1, 1, 0, -1], [-1, 1, -1, 2], [2, 2, -1, 2]]
        assert genotypes.dosage.T.tolist() == expected
        masked = np.ma.masked_array(callset["calldata/GT"],
                                    np.repeat(mask[:, :, None], 2, axis=2))
        assert from_allel(masked, variants=callset).dosage.T.tolist() == expected
        da = pytest.importorskip("dask.array")
        lazy = allel.GenotypeDaskArray(da.from_array(callset["calldata/GT"]))
        lazy.mask = mask
        assert from_allel(lazy, variants=callset).dosage.T.tolist() == expected

    @pytest.mark.parametrize(
        ("calls", "kwargs", "message"),
        [
            (np.zeros((3, 4), np.int8), {}, "must be 3-d"),
            (np.zeros((3, 4, 3), np.int8), {}, "ploidy 3"),
            (np.zeros((3, 4, 2), np.int8), {"samples": ["a"]}, "samples has 1 IDs"),
            (np.zeros((3, 4, 2), np.int8), {"variants": {"ALT": np.array(["A"] * 3)}},
             "no REF"),
            (np.zeros((3, 4, 2), np.int8),
             {"variants": {"REF": np.array(["A"] * 2), "ALT": np.array(["G"] * 2)}},
             "variants has 2 rows but genotype_array has 3"),
            # the VCF reader and PLINK refuse it; it was read as an SNP
            (np.zeros((3, 4, 2), np.int8),
             {"variants": {"REF": np.array(["A", "C", "G"]),
                           "ALT": np.array(["G", "c", "T"])}},
             r"variant 1 \(1:2\) has ALT allele 'c' equal to its REF allele 'C'"),
        ],
    )
    def test_from_allel__bad_input_is_input_error(self, calls, kwargs, message):
        with pytest.raises(InputError, match=message):
            from_allel(calls, **kwargs)
