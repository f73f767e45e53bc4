"""VCF Zarr input: a store made by bio2zarr's vcf2zarr reads as its VCF does."""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from admixspec import InputError
from admixspec.cli import main
from admixspec.core.metrics import q_error
from admixspec.io import detect_format, read_genotypes, read_q, read_vcf
from admixspec.io import vcz as vcz_module
from admixspec.io.reader import open_streamed
from admixspec.io.vcz import VczChunks, classify_alleles, read_vcz

pytest.importorskip("zarr")
pytest.importorskip("bio2zarr")

DATA = Path(__file__).resolve().parent.parent / "data"
EXAMPLE_VCF = DATA / "example.vcf.gz"
BCFTOOLS = shutil.which("bcftools")

HEADER = (
    "##fileformat=VCFv4.2\n"
    "##contig=<ID=1,length=1000>\n"
    "##contig=<ID=X,length=1000>\n"
    '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
    "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ta\tb\tc\td\te\n"
)
# multiallelic, indel, symbolic, half calls, haploid calls, triploid, no ALT
RECORDS = [
    "1\t10\trs1\tA\tG\t.\t.\t.\tGT\t0/0\t0/1\t1/1\t./.\t0|1",
    "1\t20\trs2\tA\tG,T\t.\t.\t.\tGT\t0/0\t0/1\t1/2\t./.\t0|1",
    "1\t30\trs3\tAT\tG\t.\t.\t.\tGT\t0/0\t0/1\t1/1\t./.\t0|1",
    "1\t40\trs4\tA\t<DEL>\t.\t.\t.\tGT\t0/0\t0/1\t1/1\t./.\t0|1",
    "1\t50\trs5\tA\tG\t.\t.\t.\tGT\t0/.\t./1\t1\t0\t.",
    "1\t60\tt1\tA\tG\t.\t.\t.\tGT\t0/0/1\t0/1\t1/1\t0\t./.",
    "1\t70\trs7\tA\t.\t.\t.\t.\tGT\t0/0\t0/0\t0/0\t./.\t0|0",
    "X\t60\trs6\tC\tT\t.\t.\t.\tGT\t0\t1\t.\t0/1\t1/1",
]


def vcf2zarr(vcf: Path, out: Path) -> Path:
    """Convert with bio2zarr's command line, as a user would."""
    program = Path(sys.executable).with_name("vcf2zarr")
    command = str(program) if program.exists() else shutil.which("vcf2zarr")
    if command is None:
        pytest.skip("bio2zarr's vcf2zarr is not on the PATH")
    subprocess.run([command, "convert", str(vcf), str(out)], check=True,
                   capture_output=True)
    return out


@pytest.fixture(scope="module")
def example_vcz_fixture(tmp_path_factory) -> Path:
    return vcf2zarr(EXAMPLE_VCF, tmp_path_factory.mktemp("vcz") / "example.vcz")


@pytest.fixture
def odd_records_fixture(tmp_path) -> tuple[Path, Path]:
    if BCFTOOLS is None:
        pytest.skip("no bcftools (vcf2zarr needs an indexed multi-contig VCF)")
    plain = tmp_path / "odd.vcf"
    plain.write_text(HEADER + "\n".join(RECORDS) + "\n")
    vcf = tmp_path / "odd.vcf.gz"
    subprocess.run([BCFTOOLS, "view", "-Oz", "-o", str(vcf), str(plain)], check=True)
    subprocess.run([BCFTOOLS, "index", "-t", str(vcf)], check=True)
    return vcf, vcf2zarr(vcf, tmp_path / "odd.vcz")


def assert_same_genotypes(a, b) -> None:
    np.testing.assert_array_equal(a.dosage, b.dosage)
    assert a.samples.tolist() == b.samples.tolist()
    assert a.variants.equals(b.variants)
    assert a.filter_log == b.filter_log


class TestReadVcz:
    def test_read_vcz__example_equals_the_vcf(self, example_vcz_fixture):
        assert_same_genotypes(read_vcz(example_vcz_fixture), read_vcf(EXAMPLE_VCF))

    def test_read_vcz__odd_records_follow_the_vcf_rules(self, odd_records_fixture):
        vcf, store = odd_records_fixture
        genotypes = read_vcz(store)
        assert_same_genotypes(genotypes, read_vcf(vcf))
        assert genotypes.variants["id"].tolist() == ["rs1", "rs5", "t1", "rs7", "rs6"]
        assert genotypes.filter_log[1]["details"] == {
            "haploid_as_homozygous": 5, "half_calls_missing": 2, "polyploid_missing": 1
        }

    def test_read_vcz__keep_and_region_as_for_vcf(self, example_vcz_fixture):
        samples = read_vcf(EXAMPLE_VCF).samples[[7, 2, 30]].tolist()
        kwargs = {"samples": samples, "region": "1:100000-3000000"}
        genotypes = read_vcz(example_vcz_fixture, **kwargs)
        assert 0 < genotypes.n_snps < 10_000
        assert_same_genotypes(genotypes, read_vcf(EXAMPLE_VCF, **kwargs))

    def test_read_vcz__logs_progress_on_long_reads(self, example_vcz_fixture, caplog,
                                                     monkeypatch):
        monkeypatch.setattr(vcz_module, "PROGRESS_INTERVAL", 0.0)
        with caplog.at_level(logging.INFO, logger="admixspec"):
            read_vcz(example_vcz_fixture)
        assert "read 10000 of 10000 variants (100%)" in caplog.text

    def test_read_genotypes__detects_the_store(self, example_vcz_fixture):
        assert detect_format(example_vcz_fixture) == "vcz"
        genotypes = read_genotypes(example_vcz_fixture, maf=0.05)
        assert_same_genotypes(genotypes, read_genotypes(EXAMPLE_VCF, maf=0.05))


class TestClassifyAlleles:
    def test_classify_alleles__counts_each_kind(self):
        alleles = np.array([["A", "G", ""], ["A", "G", "T"], ["AT", "G", ""],
                            ["A", "<DEL>", ""], ["A", "", ""], ["A", "*", ""]])
        snp, skipped = classify_alleles(alleles)
        assert snp.tolist() == [True, False, False, False, True, False]
        assert skipped == {"multiallelic": 1, "indel": 1, "symbolic_or_other": 2}


class TestBadStore:
    def test_read_vcz__directory_without_zarr_metadata(self, tmp_path):
        with pytest.raises(InputError, match="not a readable Zarr store"):
            read_vcz(tmp_path)

    def test_read_vcz__zarr_store_missing_arrays(self, tmp_path):
        import zarr

        group = zarr.open_group(str(tmp_path / "x.vcz"), mode="w")
        group.create_array("sample_id", shape=(2,), dtype="int32")
        with pytest.raises(InputError, match="not a VCF Zarr store: no call_genotype"):
            read_vcz(tmp_path / "x.vcz")

    def test_cli__missing_store_is_one_line(self, tmp_path, capsys):
        code = main(["run", str(tmp_path / "none.vcz"), "-K", "2",
                     "--out", str(tmp_path / "o")])
        assert code == 1
        assert capsys.readouterr().err.splitlines() == [
            f"admixspec: error: {tmp_path / 'none.vcz'}: file not found"
        ]


class TestBadCalls:
    """A call the VCF reader would refuse is refused in the store it converts to."""

    @pytest.fixture
    def bad_store_fixture(self, example_vcz_fixture, tmp_path):
        import zarr

        path = shutil.copytree(example_vcz_fixture, tmp_path / "bad.vcz")

        def spoil(value, variants=(4321,)):
            calls = zarr.open_group(str(path), mode="r+")["call_genotype"]
            for variant in variants:
                calls[variant, 17, 1] = value
            return path

        return spoil

    @staticmethod
    def site(store, variant: int) -> str:
        import zarr

        group = zarr.open_group(str(store), mode="r")
        contig = str(group["contig_id"][int(group["variant_contig"][variant])])
        return (f"{contig}:{int(group['variant_position'][variant])} "
                f"({group['variant_id'][variant]})")

    @pytest.mark.parametrize(("value", "message"), [
        (3, "has call_genotype allele index 3, but the site has 1 ALT allele"),
        (-3, r"has call_genotype value -3 \(not an allele index, -1 missing or -2 "
             r"fill\)"),
    ], ids=["beyond_alt", "negative"])
    @pytest.mark.parametrize("reader", ["read_vcz", "read_genotypes", "open_streamed"])
    def test_read_vcz__call_beyond_the_alleles_names_the_first_variant(
            self, bad_store_fixture, value, message, reader):
        store = bad_store_fixture(value, variants=(8765, 4321))
        site = re.escape(self.site(store, 4321))
        expected = rf"^\S*bad\.vcz: variant {site} {message}$"
        with pytest.raises(InputError, match=expected):
            if reader == "open_streamed":
                open_streamed(store, memory_bytes=200_000).chunks.read()
            else:
                {"read_vcz": read_vcz, "read_genotypes": read_genotypes}[reader](store)

    @pytest.mark.parametrize("reader", ["read_vcz", "open_streamed"])
    def test_read_vcz__alt_equal_to_ref_is_refused_as_the_vcf_reader_does(
            self, example_vcz_fixture, tmp_path, reader):
        # the VCF reader and PLINK refuse it; the store read it as an SNP
        import zarr

        store = shutil.copytree(example_vcz_fixture, tmp_path / "same.vcz")
        alleles = zarr.open_group(str(store), mode="r+")["variant_allele"]
        ref = str(alleles[4321, 0])
        alleles[4321, 1] = ref.lower()
        site = re.escape(self.site(store, 4321))
        with pytest.raises(InputError, match=rf"^\S*same\.vcz: variant {site} has ALT "
                           rf"allele '{ref.lower()}' equal to its REF allele '{ref}'$"):
            {"read_vcz": read_vcz,
             "open_streamed": lambda path: open_streamed(path, memory_bytes=200_000),
             }[reader](store)

    def test_read_vcz__call_beyond_the_alleles_of_a_dropped_sample_is_not_read(
            self, bad_store_fixture):
        store = bad_store_fixture(3)
        samples = read_vcf(EXAMPLE_VCF).samples
        keep = np.delete(samples, 17).tolist()
        assert read_vcz(store, samples=keep).n_snps == 10_000


class TestRunFromVcz:
    def test_run__vcz_gives_the_vcf_q(self, example_vcz_fixture, tmp_path):
        for name, source in (("vcf", EXAMPLE_VCF), ("vcz", example_vcz_fixture)):
            assert main(["run", str(source), "-K", "3", "--seed", "5",
                         "--out", str(tmp_path / name)]) == 0
        np.testing.assert_array_equal(read_q(tmp_path / "vcz.3.Q"),
                                      read_q(tmp_path / "vcf.3.Q"))


class TestStreamedVcz:
    """A ``.vcz`` left on disk reads, filters and fits as the store read whole."""

    def test_chunks__equal_the_reader_on_kept_samples_and_scattered_snps(
            self, example_vcz_fixture):
        whole = read_vcz(example_vcz_fixture).dosage
        rows, columns = np.array([1, 4, 30, 59]), np.arange(3, 10_000, 7)
        # 128-SNP chunks of every 7th SNP span several 1,000-variant store chunks
        chunks = VczChunks(example_vcz_fixture, 60, 10_000, rows=rows, columns=columns,
                           chunk_snps=128)
        assert len(chunks.bounds) > 10
        np.testing.assert_array_equal(chunks.read(), whole[np.ix_(rows, columns)])
        start, stop = chunks.bounds[3]
        np.testing.assert_array_equal(chunks.chunk(start, stop),
                                      whole[np.ix_(rows, columns[start:stop])])

    def test_open_streamed__filters_as_read_genotypes(self, example_vcz_fixture):
        filters = {"maf": 0.05, "geno": 0.1, "mind": 0.5}
        samples = read_vcf(EXAMPLE_VCF).samples[5:50].tolist()
        streamed = open_streamed(example_vcz_fixture, memory_bytes=200_000,
                                 samples=samples, region="1:1-3000000", **filters)
        whole = read_genotypes(example_vcz_fixture, keep=samples,
                               region="1:1-3000000", **filters)
        assert len(streamed.chunks.bounds) > 1
        np.testing.assert_array_equal(streamed.chunks.read(), whole.dosage)
        assert streamed.samples.tolist() == whole.samples.tolist()
        assert streamed.variants.equals(whole.variants)
        assert streamed.filter_log == whole.filter_log
        np.testing.assert_array_equal(streamed.chunks.n_observed,
                                      (whole.dosage >= 0).sum(axis=1))

    def test_run__memory_streams_the_store_to_the_in_memory_fit(
            self, example_vcz_fixture, tmp_path):
        for name, flags in (("whole", []), ("streamed", ["--memory", "1"])):
            assert main(["run", str(example_vcz_fixture), "-K", "3", "--seed", "5",
                         "-q", "--out", str(tmp_path / name),
                         *flags]) == 0
        log = (tmp_path / "streamed.3.log").read_text()
        assert "Streamed: 60 individuals x" in log
        # the reference fit saw a SNP sample (0.5 MiB), then ML ran on every SNP
        assert q_error(read_q(tmp_path / "whole.3.Q"),
                       read_q(tmp_path / "streamed.3.Q")) < 1e-3
