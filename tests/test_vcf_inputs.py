"""VCF/BCF input as bcftools, GATK and PLINK write it: the cases users meet.

Each bad input is one line naming the file and the problem (exit 1, no
traceback); the same data as ``.bed`` and as VCF/BCF gives the same dosage.
"""

from __future__ import annotations

import gzip
import logging
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from admixspec import InputError, simulate_balding_nichols
from admixspec.cli import main
from admixspec.io import read_plink, read_vcf, write_plink, write_vcf

BCFTOOLS = shutil.which("bcftools")
TABIX = shutil.which("tabix")
PLINK2 = shutil.which("plink2")

HEADER = textwrap.dedent(
    """\
    ##fileformat=VCFv4.2
    ##contig=<ID=chr1>
    ##contig=<ID=chrX>
    ##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">
    ##FORMAT=<ID=DP,Number=1,Type=Integer,Description="Depth">
    #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\ts2\ts3\ts4
    """
)


def vcf_text(*records: str) -> str:
    """HEADER and ``records`` (fields separated by single spaces) as VCF text."""
    return HEADER + "".join("\t".join(record.split()) + "\n" for record in records)


def write_vcf_text(path: Path, *records: str) -> Path:
    path.write_text(vcf_text(*records))
    return path


def assert_one_line_error(capsys, argv, message: str) -> None:
    status = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert status == 1
    assert err.splitlines() == [f"admixspec: error: {message}"]


@pytest.fixture
def simulated_fixture():
    return simulate_balding_nichols(40, 2000, 3, missing_rate=0.02, seed=5)


@pytest.fixture
def indexed_vcf_fixture(tmp_path, simulated_fixture) -> Path:
    """A BGZF VCF of 2,000 SNPs (several BGZF blocks) with its tabix index."""
    path = tmp_path / "sim.vcf.gz"
    if len(write_vcf(path, simulated_fixture.genotypes)) == 1:
        pytest.skip("tabix not installed: no index written")
    return path


class TestRecords:
    @pytest.mark.parametrize(("records", "message"), [
        # a record after the first without GT: "cannot parse VCF record 3"
        (("chr1 100 a A G . PASS . GT 0/0 0/1 1/1 0/0",
          "chr1 200 b C T . PASS . DP 3 4 5 6",
          "chr1 300 c C T . PASS . GT 0/0 0/1 1/1 0/1"),
         "record chr1:200 has no GT (genotype) field in its FORMAT column"),
        # read as an SNP; PLINK refuses it ("ALT allele duplicates REF allele")
        (("chr1 100 a A a . PASS . GT 0/0 0/1 1/1 0/0",
          "chr1 200 b C T . PASS . GT 0/0 0/1 1/1 0/1"),
         "record chr1:100 has ALT allele 'a' equal to its REF allele 'A'"),
    ], ids=["without_gt_after_the_first", "alt_equal_to_ref"])
    def test_read_vcf__a_refused_record__names_its_site(self, tmp_path, records,
                                                        message):
        path = write_vcf_text(tmp_path / "x.vcf", *records)
        with pytest.raises(InputError) as caught:
            read_vcf(path)
        assert str(caught.value) == f"{path}: {message}"

    def test_read_vcf__unparsable_record__quotes_htslib(self, tmp_path, capfd):
        path = write_vcf_text(tmp_path / "x.vcf",
                              "chr1 100 a A G . PASS . GT 0/0 0/1 1/1 0/0",
                              "chr1 200 b C T . PASS . GT 0/0 0/1 1/1")
        with pytest.raises(InputError) as caught:
            read_vcf(path)
        assert str(caught.value) == (
            f"{path}: cannot parse VCF record 2 (Number of columns at chr1:200 does "
            "not match the number of samples (3 vs 4))")
        assert capfd.readouterr().err == ""  # htslib's own lines stay hidden

    def test_read_vcf__calls_filters_and_alleles(self, tmp_path):
        """Half calls, haploid chrX, phased, FILTER, multiallelic, *, duplicates."""
        path = write_vcf_text(
            tmp_path / "x.vcf",
            "chr1 100 a A G . PASS . GT 0/0 0/1 1/1 ./.",
            "chr1 200 b C T . LowQual . GT 0|1 1|0 0|0 .",
            "chr1 300 c G A,T . PASS . GT 0/1 0/2 1/2 0/0",
            "chr1 400 d AT A . PASS . GT 0/1 0/0 0/0 0/0",
            "chr1 500 e G <DEL> . PASS . GT 0/1 0/0 0/0 0/0",
            "chr1 600 f T * . PASS . GT 0/1 0/0 0/0 0/0",
            "chr1 800 h A C . PASS . GT 0/. ./1 0/0 1/1",
            "chr1 800 h2 A T . PASS . GT 0/1 0/0 0/0 1/1",
            "chrX 1000 j A G . . . GT:DP 0:3 1:4 0/1:5 1/1:6",
        )
        genotypes = read_vcf(path)
        assert genotypes.variants["id"].tolist() == ["a", "b", "h", "h2", "j"]
        np.testing.assert_array_equal(genotypes.dosage, [[2, 1, -1, 1, 2],
                                                         [1, 1, -1, 2, 0],
                                                         [0, 2, 2, 2, 1],
                                                         [-1, -1, 0, 0, 0]])
        details = {entry["filter"]: entry["details"] for entry in genotypes.filter_log}
        assert details["biallelic_snp"] == {"multiallelic": 1, "indel": 1,
                                            "symbolic_or_other": 2, "records_read": 9}
        assert details["ploidy"]["haploid_as_homozygous"] == 2
        assert details["ploidy"]["half_calls_missing"] == 2


class TestRegion:
    def test_region_on_plain_gzip_with_an_index_beside_it(
            self, tmp_path, indexed_vcf_fixture, capsys):
        path = tmp_path / "gzip.vcf.gz"
        with gzip.open(indexed_vcf_fixture, "rb") as source:
            path.write_bytes(gzip.compress(source.read()))
        shutil.copy(str(indexed_vcf_fixture) + ".tbi", str(path) + ".tbi")
        assert_one_line_error(
            capsys, ["info", path, "--region", "1:1-100"],
            f"{path}: --region needs an indexed file, and an index needs BGZF "
            "compression, which this file lacks (compress it with 'bgzip' and "
            "index it with 'tabix -p vcf')")

    def test_region_on_a_corrupt_block__is_an_error_not_a_shorter_region(
            self, indexed_vcf_fixture, capsys):
        data = bytearray(indexed_vcf_fixture.read_bytes())
        middle = len(data) // 2
        data[middle:middle + 64] = bytes(64)
        indexed_vcf_fixture.write_bytes(bytes(data))
        index = Path(str(indexed_vcf_fixture) + ".tbi")
        os.utime(index)  # the index is not older than the file: no warning
        status = main(["info", str(indexed_vcf_fixture), "--region", "1"])
        err = capsys.readouterr().err.splitlines()
        assert status == 1
        assert len(err) == 1
        assert err[0].startswith(f"admixspec: error: {indexed_vcf_fixture}: cannot read "
                                 "region 1 (")

    def test_region_with_an_index_older_than_the_file__warns(
            self, indexed_vcf_fixture, simulated_fixture, caplog):
        index = Path(str(indexed_vcf_fixture) + ".tbi")
        modified = indexed_vcf_fixture.stat().st_mtime
        os.utime(index, (modified - 60, modified - 60))
        with caplog.at_level(logging.WARNING, logger="admixspec"):
            genotypes = read_vcf(indexed_vcf_fixture, region="1:101-150")
        np.testing.assert_array_equal(genotypes.dosage,
                                      simulated_fixture.genotypes.dosage[:, 100:150])
        assert any("is older than the file" in record.getMessage()
                   for record in caplog.records)

    def test_region_chr_prefix_mismatch__names_the_files_chromosomes(
            self, tmp_path, capsys):
        if BCFTOOLS is None:
            pytest.skip("bcftools not installed")
        text = write_vcf_text(tmp_path / "x.vcf",
                              "chr1 100 a A G . PASS . GT 0/0 0/1 1/1 0/0",
                              "chrX 200 b C T . PASS . GT 0/0 0/1 1/1 0/1")
        path = tmp_path / "x.bcf"
        subprocess.run([BCFTOOLS, "view", "-Ob", "-o", str(path), str(text)],
                       check=True, capture_output=True)
        subprocess.run([BCFTOOLS, "index", str(path)], check=True, capture_output=True)
        assert_one_line_error(
            capsys, ["info", path, "--region", "X"],
            f"{path}: region X selects no variants (the file's chromosomes: chr1, "
            "chrX)")
        assert read_vcf(path, region="chrX").variants["id"].tolist() == ["b"]


class TestSameAsBed:
    @pytest.mark.parametrize("kind", ["plain", "gzip", "bgzf", "bcf"])
    def test_vcf_and_bed__same_dosage_and_samples(self, tmp_path, simulated_fixture,
                                                  kind):
        genotypes = simulated_fixture.genotypes
        write_plink(tmp_path / "sim", genotypes)
        vcf = tmp_path / "sim.vcf"
        write_vcf(vcf, genotypes)
        if kind == "gzip":
            path = tmp_path / "sim.vcf.gz"
            path.write_bytes(gzip.compress(vcf.read_bytes()))
        elif kind == "bgzf":
            path = tmp_path / "sim.vcf.gz"
            write_vcf(path, genotypes, index=False)
        elif kind == "bcf":
            if BCFTOOLS is None:
                pytest.skip("bcftools not installed")
            path = tmp_path / "sim.bcf"
            subprocess.run([BCFTOOLS, "view", "-Ob", "-o", str(path), str(vcf)],
                           check=True)
        else:
            path = vcf
        bed = read_plink(tmp_path / "sim")
        back = read_vcf(path)
        np.testing.assert_array_equal(back.dosage, bed.dosage)
        assert back.samples.tolist() == bed.samples.tolist()
        assert back.variants["counted"].tolist() == bed.variants["counted"].tolist()

    def test_plink2_export__same_dosage_as_its_bed(self, tmp_path, simulated_fixture):
        if PLINK2 is None:
            pytest.skip("plink2 not installed")
        write_plink(tmp_path / "sim", simulated_fixture.genotypes)
        subprocess.run([PLINK2, "--bfile", str(tmp_path / "sim"), "--export", "vcf",
                        "bgz", "--out", str(tmp_path / "p2")], check=True,
                       capture_output=True)
        back = read_vcf(tmp_path / "p2.vcf.gz")
        np.testing.assert_array_equal(back.dosage, read_plink(tmp_path / "sim").dosage)
