"""Readers and writers: VCF/BCF, PLINK, ADMIXTURE Q/P/pop/log, atomic writes."""

from __future__ import annotations

import errno
import gzip
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import admixspec.io.admixture as admixture_io
from admixspec import Genotypes, InputError, UsageError, simulate_balding_nichols
from admixspec.io import (
    atomic_write,
    detect_format,
    output_path,
    parse_region,
    read_admixture_log,
    read_genotypes,
    read_keep,
    read_p,
    read_plink,
    read_pop,
    read_q,
    read_vcf,
    write_p,
    write_plink,
    write_q,
    write_vcf,
)
from admixspec.io.common import sample_rows, write_all_or_none
from admixspec.io.reader import open_streamed
from admixspec.io.results import read_sample_ids
from admixspec.io.vcf import read_vcf_samples

from .conftest import failing_on_call

PLINK = shutil.which("plink1.9") or shutil.which("plink")
DATA = Path(__file__).resolve().parent.parent / "data"

HEADER = textwrap.dedent(
    """\
    ##fileformat=VCFv4.2
    ##contig=<ID=1,length=1000>
    ##contig=<ID=X,length=1000>
    ##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">
    #CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ta\tb\tc\td\te
    """
)
RECORDS = [
    "1\t10\trs1\tA\tG\t.\t.\t.\tGT\t0/0\t0/1\t1/1\t./.\t0|1",
    "1\t20\trs2\tA\tG,T\t.\t.\t.\tGT\t0/0\t0/1\t1/2\t./.\t0|1",
    "1\t30\trs3\tAT\tG\t.\t.\t.\tGT\t0/0\t0/1\t1/1\t./.\t0|1",
    "1\t40\trs4\tA\t<DEL>\t.\t.\t.\tGT\t0/0\t0/1\t1/1\t./.\t0|1",
    "1\t50\trs5\tA\tG\t.\t.\t.\tGT\t0/.\t./1\t1\t0\t.",
    "X\t60\trs6\tC\tT\t.\t.\t.\tGT\t0\t1\t.\t0/1\t1/1",
    "1\t70\trs7\tA\t.\t.\t.\t.\tGT\t0/0\t0/0\t0/0\t./.\t0|0",
]


def write_text_file(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def small_vcf_fixture(tmp_path) -> Path:
    return write_text_file(tmp_path / "small.vcf", HEADER + "\n".join(RECORDS) + "\n")


@pytest.fixture
def simulated_fixture():
    return simulate_balding_nichols(40, 300, 3, missing_rate=0.03, seed=11)


class TestAdmixtureFormats:
    def test_q_round_trip__matches_at_6_decimals(self, tmp_path):
        rng = np.random.default_rng(0)
        Q = rng.dirichlet(np.ones(4), size=25) * (1 - 2e-5) + 1e-5
        write_q(tmp_path / "x.4.Q", Q)
        back = read_q(tmp_path / "x.4.Q")
        assert back.shape == Q.shape
        np.testing.assert_allclose(back, Q, atol=5e-7, rtol=0)

    def test_p_round_trip__matches_at_6_decimals(self, tmp_path):
        P = np.random.default_rng(1).uniform(1e-5, 1 - 1e-5, size=(300, 3))
        write_p(tmp_path / "x.3.P", P)
        np.testing.assert_allclose(read_p(tmp_path / "x.3.P"), P, atol=5e-7, rtol=0)

    def test_write_q__six_decimals_space_separated_no_header(self, tmp_path):
        write_q(tmp_path / "x.2.Q", [[0.5, 0.5], [0.123456789, 0.876543211]])
        assert ((tmp_path / "x.2.Q").read_text()
                == "0.500000 0.500000\n0.123457 0.876543\n")

    def test_write_q__K_1_as_admixture_writes_it_and_its_P_clamped(self, tmp_path):
        # ADMIXTURE's hapmap3.1.Q holds 1.000000 on every row; its .1.P is clamped
        write_q(tmp_path / "x.1.Q", np.ones((2, 1)))
        write_p(tmp_path / "x.1.P", [[0.0], [1.0]])
        assert (tmp_path / "x.1.Q").read_text() == "1.000000\n1.000000\n"
        assert (tmp_path / "x.1.P").read_text() == "0.000010\n0.999990\n"

    def test_write_p__clamps_to_admixture_bounds(self, tmp_path):
        write_p(tmp_path / "x.2.P", [[0.0, 1.0]])
        assert (tmp_path / "x.2.P").read_text() == "0.000010 0.999990\n"

    def test_format_matrix__every_row_across_format_blocks(self, monkeypatch):
        monkeypatch.setattr(admixture_io, "_FORMAT_ROWS", 4)
        values = np.random.default_rng(2).normal(size=(9, 3))
        expected = "".join(" ".join(f"{v:.6f}" for v in row) + "\n" for row in values)
        assert admixture_io.format_matrix(values, "SE", clamp=False) == expected
        assert admixture_io.format_matrix(values[:0], "SE") == ""

    def test_write_q__rejects_nan(self, tmp_path):
        with pytest.raises(ValueError, match="NaN"):
            write_q(tmp_path / "x.1.Q", [[np.nan]])
        assert not (tmp_path / "x.1.Q").exists()

    def test_read_q__ragged_file_names_line(self, tmp_path):
        path = write_text_file(tmp_path / "bad.2.Q", "0.5 0.5\n0.1\n")
        with pytest.raises(InputError, match=r"bad\.2\.Q:2: expected 2 columns"):
            read_q(path)

    def test_read_p__non_numeric_value(self, tmp_path):
        path = write_text_file(tmp_path / "bad.2.P", "0.5 x\n")
        with pytest.raises(InputError, match="non-numeric"):
            read_p(path)

    def test_output_path__admixture_naming(self):
        assert output_path("out/run", 4, "P") == Path("out/run.4.P")

    def test_read_pop__dash_is_unknown(self, tmp_path):
        path = write_text_file(tmp_path / "x.pop", "CEU\n-\nYRI\n")
        assert read_pop(path, n_individuals=3).tolist() == ["CEU", None, "YRI"]
        with pytest.raises(InputError, match="has 3 lines but the genotypes have 4"):
            read_pop(path, n_individuals=4)

    def test_read_pop__trailing_empty_lines_are_unknown_individuals_up_to_their_number(
            self, tmp_path):
        path = write_text_file(tmp_path / "x.pop", "CEU\nYRI\n\n\n\n")
        assert read_pop(path, n_individuals=4).tolist() == ["CEU", "YRI", None, None]
        assert read_pop(path, n_individuals=5).tolist() == ["CEU", "YRI", None, None,
                                                            None]
        assert read_pop(path).tolist() == ["CEU", "YRI"]

    def test_read_pop__a_byte_order_mark_is_not_part_of_the_first_label(self, tmp_path):
        # '\ufeffCEU' was a population apart from the other CEU lines
        path = tmp_path / "x.pop"
        path.write_text("CEU\nCEU\nYRI\n", encoding="utf-8-sig")
        assert read_pop(path, n_individuals=3).tolist() == ["CEU", "CEU", "YRI"]

    def test_read_pop__line_with_two_fields_is_an_error(self, tmp_path):
        # the words after the first would each have made one more population
        path = write_text_file(tmp_path / "x.pop", "CEU\n-\nYRI extra\nYRI\n")
        with pytest.raises(InputError, match=r"x\.pop:3: 2 fields \('YRI extra'\) "
                           "where a .pop line has one"):
            read_pop(path, n_individuals=4)


class TestAtomicWrite:
    def test_atomic_write__exception_keeps_old_file_and_no_temporary(self, tmp_path):
        target = write_text_file(tmp_path / "x.3.Q", "old\n")
        with pytest.raises(RuntimeError), atomic_write(target) as handle:
            handle.write("partial")
            raise RuntimeError("crash")
        assert target.read_text() == "old\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["x.3.Q"]

    def test_atomic_write__killed_writer_leaves_no_partial_file(self, tmp_path):
        target = tmp_path / "killed.3.Q"
        script = textwrap.dedent(
            f"""
            import sys, time
            from admixspec.io import atomic_write
            with atomic_write({str(target)!r}) as handle:
                handle.write("0.1 0.2 0.7\\n" * 1000)
                handle.flush()
                print("writing", flush=True)
                time.sleep(60)
            """
        )
        process = subprocess.Popen(
            [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True
        )
        try:
            assert process.stdout.readline().strip() == "writing"
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
            process.stdout.close()
        assert process.returncode == -signal.SIGKILL
        assert not target.exists()
        leftovers = list(tmp_path.iterdir())
        assert all(p.name.startswith(".killed.3.Q.") for p in leftovers)

    def test_write_vcf__interrupted_write_leaves_nothing(self, tmp_path, monkeypatch):
        from admixspec.io import vcf as vcf_module

        def broken_chunks(genotypes, block_size):
            yield b"1\t1\tsnp\tA\tC\t.\t.\t.\tGT\t0/0\n"
            raise KeyboardInterrupt

        monkeypatch.setattr(vcf_module, "_vcf_body_chunks", broken_chunks)
        genotypes = simulate_balding_nichols(3, 5, 2, seed=0).genotypes
        with pytest.raises(KeyboardInterrupt):
            write_vcf(tmp_path / "x.vcf.gz", genotypes)
        assert list(tmp_path.iterdir()) == []


class TestWriteAllOrNone:
    NAMES = ("run.3.Q", "run.3.P", "run.3.log", "run.3.json")

    def _contents(self, folder):
        return {folder / name: f"{name}\n" for name in self.NAMES}

    def test_write_all_or_none__writes_every_file(self, tmp_path):
        write_all_or_none(self._contents(tmp_path))
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(self.NAMES)
        assert (tmp_path / "run.3.log").read_text() == "run.3.log\n"

    def test_write_all_or_none__full_disk_part_way_leaves_none_and_names_file(
        self, tmp_path, monkeypatch
    ):
        full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        monkeypatch.setattr(os, "fsync", failing_on_call(os.fsync, 3, full))
        with pytest.raises(OSError, match="No space left on device") as raised:
            write_all_or_none(self._contents(tmp_path))
        assert raised.value.errno == errno.ENOSPC
        assert raised.value.filename == str(tmp_path / "run.3.log")
        assert list(tmp_path.iterdir()) == []

    def test_write_all_or_none__failed_rename_removes_files_already_renamed(
        self, tmp_path, monkeypatch
    ):
        denied = PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        monkeypatch.setattr(os, "replace", failing_on_call(os.replace, 3, denied))
        with pytest.raises(PermissionError) as raised:
            write_all_or_none(self._contents(tmp_path))
        assert raised.value.filename == str(tmp_path / "run.3.log")
        assert list(tmp_path.iterdir()) == []

    def test_write_all_or_none__interrupt_leaves_none(self, tmp_path, monkeypatch):
        monkeypatch.setattr(
            os, "fsync", failing_on_call(os.fsync, 2, KeyboardInterrupt())
        )
        with pytest.raises(KeyboardInterrupt):
            write_all_or_none(self._contents(tmp_path))
        assert list(tmp_path.iterdir()) == []


class TestReadVcf:
    def test_read_vcf__keeps_biallelic_snps_and_counts_the_rest(self, small_vcf_fixture):
        genotypes = read_vcf(small_vcf_fixture)
        assert genotypes.variants["id"].tolist() == ["rs1", "rs5", "rs6", "rs7"]
        entry = genotypes.filter_log[0]
        assert entry["filter"] == "biallelic_snp"
        assert entry["removed"] == 3
        assert entry["details"] == {
            "multiallelic": 1, "indel": 1, "symbolic_or_other": 1, "records_read": 7
        }

    def test_read_vcf__dosage_counts_ref(self, small_vcf_fixture):
        genotypes = read_vcf(small_vcf_fixture)
        assert genotypes.samples.tolist() == ["a", "b", "c", "d", "e"]
        assert genotypes.dosage[:, 0].tolist() == [2, 1, 0, -1, 1]
        assert genotypes.variants.loc[0, "counted"] == "A"
        assert genotypes.variants.loc[0, "other"] == "G"

    def test_read_vcf__haploid_homozygous_half_call_missing(self, small_vcf_fixture):
        genotypes = read_vcf(small_vcf_fixture)
        # rs5: 0/. ./1 1 0 .   rs6 (chrX): 0 1 . 0/1 1/1
        assert genotypes.dosage[:, 1].tolist() == [-1, -1, 0, 2, -1]
        assert genotypes.dosage[:, 2].tolist() == [2, 0, -1, 1, 0]
        ploidy = genotypes.filter_log[1]
        assert ploidy["filter"] == "ploidy"
        assert ploidy["details"] == {
            "haploid_as_homozygous": 4, "half_calls_missing": 2, "polyploid_missing": 0
        }

    def test_read_vcf__haploid_only_and_triploid_records(self, tmp_path):
        records = [
            "Y\t10\ty1\tA\tG\t.\t.\t.\tGT\t0\t1\t.\t1\t0",
            "1\t20\tt1\tA\tG\t.\t.\t.\tGT\t0/0/1\t0/1\t1/1\t0\t./.",
        ]
        header = HEADER.replace("##contig=<ID=X",
                                "##contig=<ID=Y,length=1000>\n##contig=<ID=X")
        path = write_text_file(tmp_path / "ploidy.vcf",
                               header + "\n".join(records) + "\n")
        genotypes = read_vcf(path, block_size=1)  # one record per block
        again = read_vcf(path)  # both records in one block of mixed width
        np.testing.assert_array_equal(genotypes.dosage, again.dosage)
        assert genotypes.dosage[:, 0].tolist() == [2, 0, -1, 0, 2]
        assert genotypes.dosage[:, 1].tolist() == [-1, 1, 0, 2, -1]
        assert again.filter_log[1]["details"] == {
            "haploid_as_homozygous": 5, "half_calls_missing": 0, "polyploid_missing": 1
        }

    def test_read_vcf__site_without_alt_is_kept_as_monomorphic(self, small_vcf_fixture):
        genotypes = read_vcf(small_vcf_fixture)
        assert genotypes.variants.loc[3, "other"] == "0"
        filtered = read_genotypes(small_vcf_fixture)
        assert "rs7" not in filtered.variants["id"].tolist()

    def test_read_vcf__keep_samples_in_file_order(self, small_vcf_fixture):
        genotypes = read_vcf(small_vcf_fixture, samples=["d", "a"])
        assert genotypes.samples.tolist() == ["a", "d"]
        assert genotypes.dosage[:, 0].tolist() == [2, -1]

    def test_read_vcf__unknown_keep_sample_is_an_error(self, small_vcf_fixture):
        with pytest.raises(InputError, match="1 requested sample.*'zz'"):
            read_vcf(small_vcf_fixture, samples=["a", "zz"])

    def test_read_vcf__keep_of_iids_in_plink2s_fid_iid_vcf__error_says_so(
        self, tmp_path
    ):
        # plink2 --export vcf names each sample FID_IID
        header = HEADER.replace("\ta\tb\tc\td\te", "\tf_a\tf_b\tf_c\tf_d\tf_e")
        vcf = write_text_file(tmp_path / "pasted.vcf", header + RECORDS[0] + "\n")
        with pytest.raises(InputError, match="the file has 'f_b', as plink2 --export"):
            read_vcf(vcf, samples=["b"])

    def test_read_vcf__region_needs_index(self, small_vcf_fixture):
        with pytest.raises(InputError, match="--region needs an indexed file"):
            read_vcf(small_vcf_fixture, region="1:1-20")

    def test_read_vcf__region_on_indexed_file(self, tmp_path, simulated_fixture):
        path = tmp_path / "sim.vcf.gz"
        written = write_vcf(path, simulated_fixture.genotypes)
        if len(written) == 1:
            pytest.skip("tabix not installed: no index written")
        genotypes = read_vcf(path, region="1:101-150")
        assert genotypes.variants["pos"].tolist() == list(range(101, 151))
        np.testing.assert_array_equal(
            genotypes.dosage, simulated_fixture.genotypes.dosage[:, 100:150]
        )

    def test_write_vcf_read_vcf__round_trip(self, tmp_path, simulated_fixture):
        path = tmp_path / "sim.vcf.gz"
        write_vcf(path, simulated_fixture.genotypes, index=False)
        genotypes = read_vcf(path)
        np.testing.assert_array_equal(genotypes.dosage,
                                      simulated_fixture.genotypes.dosage)
        assert genotypes.samples.tolist() == simulated_fixture.genotypes.samples.tolist()
        for column in ("chrom", "pos", "id", "counted", "other"):
            assert (
                genotypes.variants[column].astype(str).tolist()
                == simulated_fixture.genotypes.variants[column].astype(str).tolist()
            )
        # BGZF output is a valid gzip stream too.
        with gzip.open(path, "rt") as handle:
            assert handle.readline() == "##fileformat=VCFv4.2\n"

    def test_read_vcf__plain_gzip_is_accepted(self, tmp_path, small_vcf_fixture):
        path = tmp_path / "plain.vcf.gz"
        path.write_bytes(gzip.compress(small_vcf_fixture.read_bytes()))
        assert read_vcf(path).n_snps == 4

    def test_read_vcf__bcf(self, tmp_path, simulated_fixture):
        bcftools = shutil.which("bcftools")
        if bcftools is None:
            pytest.skip("bcftools not installed")
        vcf_path = tmp_path / "sim.vcf.gz"
        write_vcf(vcf_path, simulated_fixture.genotypes, index=False)
        bcf_path = tmp_path / "sim.bcf"
        subprocess.run(
            [bcftools, "view", "-Ob", "-o", str(bcf_path), str(vcf_path)], check=True
        )
        np.testing.assert_array_equal(
            read_genotypes(bcf_path, drop_monomorphic=False).dosage,
            simulated_fixture.genotypes.dosage,
        )


class TestBadVcf:
    def test_missing_file(self, tmp_path):
        with pytest.raises(InputError, match="nope.vcf.gz: file not found"):
            read_genotypes(tmp_path / "nope.vcf.gz")

    def test_truncated_bgzf(self, tmp_path, simulated_fixture):
        path = tmp_path / "sim.vcf.gz"
        write_vcf(path, simulated_fixture.genotypes, index=False)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        with pytest.raises(InputError, match="truncated or corrupt BGZF"):
            read_genotypes(path)

    def test_truncated_plain_gzip(self, tmp_path, small_vcf_fixture):
        path = tmp_path / "plain.vcf.gz"
        data = gzip.compress(small_vcf_fixture.read_bytes() * 20)
        path.write_bytes(data[: len(data) // 2])
        with pytest.raises(InputError, match="truncated gzip"):
            read_genotypes(path)

    def test_corrupt_gzip(self, tmp_path, small_vcf_fixture):
        path = tmp_path / "corrupt.vcf.gz"
        data = bytearray(gzip.compress(small_vcf_fixture.read_bytes()))
        data[20:40] = b"\xff" * 20
        path.write_bytes(bytes(data))
        with pytest.raises(InputError, match="corrupt gzip|truncated gzip"):
            read_genotypes(path)

    def test_header_only(self, tmp_path):
        path = write_text_file(tmp_path / "empty.vcf", HEADER)
        with pytest.raises(InputError, match=r"empty\.vcf: has no variant records"):
            read_genotypes(path)

    def test_no_gt_in_header(self, tmp_path):
        header = HEADER.replace(
            '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
            '##FORMAT=<ID=DS,Number=1,Type=Float,Description="Dosage">',
        )
        body = "1\t10\trs1\tA\tG\t.\t.\t.\tDS\t0\t1\t2\t1\t0\n"
        path = write_text_file(tmp_path / "nogt.vcf", header + body)
        with pytest.raises(InputError, match=r"nogt\.vcf: has no GT"):
            read_genotypes(path)

    def test_not_a_vcf(self, tmp_path):
        path = write_text_file(tmp_path / "notes.vcf", "hello\n")
        with pytest.raises(InputError, match="notes.vcf"):
            read_genotypes(path)

    @pytest.mark.parametrize("block_size", [1, 4096])
    def test_read_vcf__allele_index_beyond_alt_is_an_error(self, tmp_path, block_size):
        bad = "1\t80\trs8\tA\tC\t.\t.\t.\tGT\t0/0\t0/5\t1/1\t0/0\t0/1"
        records = RECORDS[:1] + [bad]
        path = write_text_file(tmp_path / "bad.vcf", HEADER + "\n".join(records) + "\n")
        with pytest.raises(InputError, match=r"bad\.vcf: record 1:80 has GT allele "
                           r"index 5, but the site has 1 ALT allele$"):
            read_vcf(path, block_size=block_size)

    def test_read_vcf__alt_allele_at_site_without_alt_is_an_error(self, tmp_path):
        record = "1\t70\trs7\tA\t.\t.\t.\t.\tGT\t0/0\t0/1\t0/0\t./.\t0|0"
        path = write_text_file(tmp_path / "noalt.vcf", HEADER + record + "\n")
        with pytest.raises(InputError, match="record 1:70 has GT allele index 1, "
                           "but the site has 0 ALT alleles"):
            read_vcf(path)

    def test_read_vcf__region_on_a_contig_not_in_the_index_is_an_error(
        self, tmp_path, simulated_fixture
    ):
        path = tmp_path / "sim.vcf.gz"
        if len(write_vcf(path, simulated_fixture.genotypes)) == 1:
            pytest.skip("tabix not installed: no index written")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # cyvcf2's "no intervals found" warning
            with pytest.raises(InputError, match=r"sim\.vcf\.gz: region chr1 selects "
                               r"no variants \(the file's chromosomes: 1\)$"):
                read_vcf(path, region="chr1")

    @pytest.mark.parametrize("reader", [read_vcf, read_genotypes, read_vcf_samples,
                                        read_sample_ids])
    @pytest.mark.parametrize("compress", [False, True])
    def test_vcf_sample_readers__duplicate_sample_name_is_named(self, tmp_path,
                                                                compress, reader):
        text = HEADER.replace("\tc\td\te", "\tc\ta\te") + RECORDS[0] + "\n"
        path = tmp_path / ("dup.vcf.gz" if compress else "dup.vcf")
        path.write_bytes(gzip.compress(text.encode()) if compress else text.encode())
        # htslib refuses the header with only "cannot parse VCF header"
        with pytest.raises(InputError, match=r"^\S*dup\.vcf(\.gz)?:5: sample 'a' is "
                           r"named twice in the #CHROM header line \(columns 10 and "
                           r"13\); sample names must be unique$"):
            reader(path)

    def test_bad_region_is_a_usage_error(self):
        with pytest.raises(UsageError, match="invalid region"):
            parse_region("1:20-10")


class TestPlink:
    def test_write_plink_read_plink__round_trip_by_prefix_or_bed(
        self, tmp_path, simulated_fixture
    ):
        write_plink(tmp_path / "sim", simulated_fixture.genotypes)
        for path in (tmp_path / "sim", tmp_path / "sim.bed"):
            genotypes = read_plink(path)
            np.testing.assert_array_equal(
                genotypes.dosage, simulated_fixture.genotypes.dosage
            )
            assert genotypes.variants["counted"].tolist() == (
                simulated_fixture.genotypes.variants["counted"].tolist()
            )

    def test_read_plink__counted_allele_is_bim_column_6(self, tmp_path):
        genotypes = Genotypes.from_array(np.array([[2, 0], [1, -1], [0, 2]]))
        genotypes.variants["counted"] = ["C", "G"]
        genotypes.variants["other"] = ["T", "A"]
        write_plink(tmp_path / "t", genotypes)
        bim = (tmp_path / "t.bim").read_text().splitlines()
        assert bim[0].split("\t")[4:] == ["T", "C"]
        # PLINK's homozygous-A2 code is 0b11: individual 1 (dosage 2) at SNP 1.
        assert (tmp_path / "t.bed").read_bytes()[3] & 0b11 == 0b11

    def test_read_plink__region_and_keep(self, tmp_path, simulated_fixture):
        write_plink(tmp_path / "sim", simulated_fixture.genotypes)
        genotypes = read_plink(
            tmp_path / "sim.bed", samples=["ind3", "ind1"], region="1:11-20"
        )
        assert genotypes.samples.tolist() == ["ind1", "ind3"]
        np.testing.assert_array_equal(
            genotypes.dosage, simulated_fixture.genotypes.dosage[[1, 3], 10:20]
        )

    def test_read_plink__indel_alleles_are_dropped(self, tmp_path, simulated_fixture):
        write_plink(tmp_path / "sim", simulated_fixture.genotypes)
        bim = (tmp_path / "sim.bim").read_text().splitlines()
        bim[0] = "\t".join(bim[0].split("\t")[:4] + ["AT", "A"])
        (tmp_path / "sim.bim").write_text("\n".join(bim) + "\n")
        genotypes = read_plink(tmp_path / "sim")
        assert genotypes.n_snps == 299
        assert genotypes.filter_log[0]["removed"] == 1

    def test_bed_wrong_magic(self, tmp_path, simulated_fixture):
        write_plink(tmp_path / "sim", simulated_fixture.genotypes)
        data = bytearray((tmp_path / "sim.bed").read_bytes())
        data[0:2] = b"\x00\x00"
        (tmp_path / "sim.bed").write_bytes(bytes(data))
        with pytest.raises(InputError, match=r"sim\.bed: not a PLINK 1 .bed file"):
            read_genotypes(tmp_path / "sim.bed")

    def test_bed_size_disagrees_with_bim_fam(self, tmp_path, simulated_fixture):
        write_plink(tmp_path / "sim", simulated_fixture.genotypes)
        with open(tmp_path / "sim.bim", "a") as handle:
            handle.write("1\textra\t0\t999999\tA\tC\n")
        with pytest.raises(
            InputError, match=r"size 3003 bytes disagrees with the \.bim \(301 SNPs\)"
        ):
            read_genotypes(tmp_path / "sim.bed")

    def test_read_plink__bed_shorter_than_its_header_says_so(self, tmp_path,
                                                               simulated_fixture):
        bed = plink_fileset(tmp_path, simulated_fixture)
        bed.write_bytes(bed.read_bytes()[:2])
        with pytest.raises(InputError, match=r"sim\.bed: only 2 bytes long, too short "
                           r"for the 3-byte \.bed header"):
            read_plink(bed)

    @pytest.mark.parametrize(("mode", "message"), [
        (b"\x00", r"individual-major \.bed files are not supported \(mode byte 00\)"),
        (b"\x02", r"invalid \.bed mode byte 02 \(expected 01, SNP-major\)$"),
    ])
    def test_read_plink__mode_byte_other_than_01_is_named(
        self, tmp_path, simulated_fixture, mode, message
    ):
        bed = plink_fileset(tmp_path, simulated_fixture)
        bed.write_bytes(b"\x6c\x1b" + mode + bed.read_bytes()[3:])
        with pytest.raises(InputError, match=r"sim\.bed: " + message):
            read_plink(bed)

    @pytest.mark.parametrize(("value", "message"), [
        ("-5", "negative position -5 in column 4"),
        ("1.5", "position '1.5' in column 4 is not an integer"),
        ("99999999999999999999", "position '99999999999999999999' in column 4 is not"),
    ])
    def test_read_plink__bad_bim_position_names_its_line(
        self, tmp_path, simulated_fixture, value, message
    ):
        plink_fileset(tmp_path, simulated_fixture)
        bim = (tmp_path / "sim.bim").read_text().splitlines()
        for index, position in ((0, "0"), (3, value)):  # 0: PLINK's unknown position
            fields = bim[index].split("\t")
            bim[index] = "\t".join(fields[:3] + [position] + fields[4:])
        # a blank line, which PLINK and the reader skip, still counts as a line
        (tmp_path / "sim.bim").write_text("\n".join(bim[:1] + [""] + bim[1:]) + "\n")
        with pytest.raises(InputError, match=rf"sim\.bim:5: variant \S+: {message}"):
            read_plink(tmp_path / "sim")

    def test_read_plink__identical_alleles_are_an_error_both_missing_is_not(
        self, tmp_path, simulated_fixture
    ):
        # plink1.9 writes "0 0", plink2 --make-bed ". .", for a variant without calls
        plink_fileset(tmp_path, simulated_fixture)
        set_bim_alleles(tmp_path / "sim.bim", {0: "0 0", 1: ". .", 2: "0 A"})
        assert read_plink(tmp_path / "sim").n_snps == 300 - 1  # "." is not a SNP allele
        set_bim_alleles(tmp_path / "sim.bim", {3: "T T"})
        with pytest.raises(InputError, match=r"sim\.bim:4: variant \S+: identical "
                           "alleles 'T' in columns 5 and 6"):
            read_plink(tmp_path / "sim")

    def test_read_plink__fam_one_line_short_is_caught_by_padding_bits(
        self, tmp_path, simulated_fixture
    ):
        # 40 and 39 individuals both take 10 bytes a SNP: the size check passes
        plink_fileset(tmp_path, simulated_fixture)
        fam = (tmp_path / "sim.fam").read_text().splitlines(keepends=True)
        (tmp_path / "sim.fam").write_text("".join(fam[:-1]))
        message = (r"sim\.bed: holds more individuals than the 39 lines of "
                   r"\S*sim\.fam: SNP row \d+ has genotype bits after the last")
        with pytest.raises(InputError, match=message):
            read_plink(tmp_path / "sim", samples=["ind0"])
        with pytest.raises(InputError, match=message):
            open_streamed(tmp_path / "sim.bed", memory_bytes=1e6)

    def test_read_plink__region_on_a_chromosome_not_in_the_bim_names_its_chromosomes(
        self, tmp_path, simulated_fixture
    ):
        plink_fileset(tmp_path, simulated_fixture)
        with pytest.raises(InputError, match=r"sim\.bim: region chr9 selects no "
                           r"variants \(the file's chromosomes: 1\)"):
            read_plink(tmp_path / "sim", region="chr9")
        with pytest.raises(InputError, match="region chr9 selects no variants"):
            open_streamed(tmp_path / "sim.bed", memory_bytes=1e6, region="chr9")

    def test_read_plink__region_names_its_chromosome_as_plink_does(
        self, tmp_path, simulated_fixture
    ):
        # PLINK reads chr1 as 1 and X as 23
        plink_fileset(tmp_path, simulated_fixture)
        whole = read_plink(tmp_path / "sim", region="1:1-200000")
        assert 0 < whole.n_snps
        for region in ("chr1:1-200000", "CHR1:1-200000"):
            assert read_plink(tmp_path / "sim", region=region).variants.equals(
                whole.variants)
        bim = (tmp_path / "sim.bim").read_text().replace("1\t", "23\t", 1)
        (tmp_path / "sim.bim").write_text(bim)
        assert read_plink(tmp_path / "sim", region="chrX").n_snps == 1

    def test_read_plink__duplicate_sample_id_is_an_error(self, tmp_path,
                                                         simulated_fixture):
        # --keep of one of them kept both: PLINK refuses the pair as well
        plink_fileset(tmp_path, simulated_fixture)
        fam = (tmp_path / "sim.fam").read_text().splitlines()
        fam[3] = fam[1]
        # a blank line, which PLINK and the reader skip, still counts as a line
        (tmp_path / "sim.fam").write_text("\n".join(fam[:1] + [""] + fam[1:]) + "\n")
        with pytest.raises(InputError, match=r"sim\.fam:5: sample 'ind1' 'ind1' \(FID, "
                           r"IID\) on lines 3 and 5: each sample must be listed once$"):
            read_genotypes(tmp_path / "sim.bed")

    def test_read_plink__an_iid_in_two_families_is_two_samples_until_kept(
        self, tmp_path, simulated_fixture
    ):
        # PLINK tells them apart by FID (family files number members 1, 2, ...);
        # admixspec's --keep matches IIDs alone, so keeping that IID is ambiguous
        plink_fileset(tmp_path, simulated_fixture)
        fam = (tmp_path / "sim.fam").read_text().splitlines()
        fam[2] = " ".join(["famX"] + fam[0].split()[1:])
        (tmp_path / "sim.fam").write_text("\n".join(fam) + "\n")
        assert read_plink(tmp_path / "sim").n_individuals == len(fam)
        assert read_plink(tmp_path / "sim", samples=["ind1"]).n_individuals == 1
        with pytest.raises(InputError, match=r"sim\.fam: --keep names sample ID 'ind0', "
                           r"which the \.fam file lists twice \(samples 1 and 3\)"):
            read_plink(tmp_path / "sim", samples=["ind0", "ind1"])

    def test_sample_rows__a_kept_id_listed_twice_is_an_error(self):
        # keeping one would keep both; an unkept repeat is left alone
        ids = ["a", "b", "c", "b"]
        assert sample_rows(ids, ["a"], "x.vcz", kind=".vcz").tolist() == [0]
        with pytest.raises(InputError, match=r"x\.vcz: --keep names sample ID 'b', "
                           r"which the \.vcz file lists twice \(samples 2 and 4\)"):
            sample_rows(ids, ["b"], "x.vcz", kind=".vcz")

    def test_missing_fam(self, tmp_path, simulated_fixture):
        write_plink(tmp_path / "sim", simulated_fixture.genotypes)
        os.remove(tmp_path / "sim.fam")
        with pytest.raises(InputError, match=r"sim\.fam: file not found"):
            read_genotypes(tmp_path / "sim")


def plink_fileset(folder: Path, simulated) -> Path:
    """``folder/sim.bed`` (and .bim, .fam) of ``simulated``; the .bed's path."""
    write_plink(folder / "sim", simulated.genotypes)
    return folder / "sim.bed"


def set_bim_alleles(bim: Path, alleles: dict) -> None:
    """Replace columns 5 and 6 of ``bim``'s lines ``{index: "A1 A2"}``."""
    lines = bim.read_text().splitlines()
    for index, pair in alleles.items():
        lines[index] = "\t".join(lines[index].split("\t")[:4] + pair.split())
    bim.write_text("\n".join(lines) + "\n")


class TestReadGenotypes:
    def test_detect_format__sniffs_content(self, tmp_path, simulated_fixture):
        write_plink(tmp_path / "sim", simulated_fixture.genotypes)
        shutil.copy(tmp_path / "sim.bed", tmp_path / "noext")
        assert detect_format(tmp_path / "noext") == "plink"
        assert detect_format(tmp_path / "sim") == "plink"

    @pytest.mark.parametrize(("name", "command"), [
        ("cohort.ped", "plink --file cohort --make-bed"),
        ("cohort.tped", "plink --tfile cohort --make-bed"),
        ("cohort.bgen", "plink2 --bgen cohort.bgen ref-first --sample cohort.sample"),
    ])
    def test_detect_format__plink_text_and_bgen_get_the_conversion(self, name, command):
        with pytest.raises(InputError, match=f"does not read .*: {command}"):
            detect_format(name)

    def test_read_keep__one_or_two_columns(self, tmp_path):
        path = write_text_file(tmp_path / "keep.txt", "# comment\nA\nfam1 B\n\nA\n")
        assert read_keep(path) == ["A", "B"]

    def test_read_genotypes__keep_file(self, tmp_path, simulated_fixture):
        write_plink(tmp_path / "sim", simulated_fixture.genotypes)
        keep = write_text_file(tmp_path / "keep.txt", "ind5\nind2\n")
        genotypes = read_genotypes(tmp_path / "sim.bed", keep=keep)
        assert genotypes.samples.tolist() == ["ind2", "ind5"]


class TestVcfEqualsPlink:
    def test_bundled_example__vcf_and_plink_identical(self):
        vcf = read_genotypes(DATA / "example.vcf.gz")
        bed = read_genotypes(DATA / "example.bed")
        np.testing.assert_array_equal(vcf.dosage, bed.dosage)
        assert vcf.samples.tolist() == bed.samples.tolist()
        for column in ("chrom", "pos", "id", "counted", "other"):
            assert vcf.variants[column].astype(str).tolist() == (
                bed.variants[column].astype(str).tolist()
            )
        assert vcf.dosage.shape == (60, 10_000)

    def test_bundled_example__truth_files_align(self):
        Q = read_q(DATA / "example.truth.Q")
        P = read_p(DATA / "example.truth.P")
        assert Q.shape == (60, 3) and P.shape == (10_000, 3)
        labels = (DATA / "example.labels.tsv").read_text().splitlines()
        assert labels[0] == "sample_id\tpopulation"
        assert len(labels) == 61

    @pytest.mark.skipif(PLINK is None, reason="plink1.9 not installed")
    def test_bundled_example__plink_is_plink19_conversion_of_the_vcf(self, tmp_path):
        subprocess.run(
            [PLINK, "--vcf", str(DATA / "example.vcf.gz"), "--keep-allele-order",
             "--make-bed", "--out", str(tmp_path / "conv")],
            check=True, capture_output=True,
        )
        for ext in (".bed", ".bim", ".fam"):
            assert (tmp_path / f"conv{ext}").read_bytes() == (
                (DATA / f"example{ext}").read_bytes()
            ), ext

    @pytest.mark.skipif(PLINK is None, reason="plink1.9 not installed")
    def test_generated_case__plink19_conversion_reads_identically(self, tmp_path):
        sim = simulate_balding_nichols(33, 257, 2, missing_rate=0.05, seed=5)
        write_vcf(tmp_path / "g.vcf.gz", sim.genotypes, index=False)
        subprocess.run(
            [PLINK, "--vcf", str(tmp_path / "g.vcf.gz"), "--keep-allele-order",
             "--make-bed", "--out", str(tmp_path / "g")],
            check=True, capture_output=True,
        )
        vcf = read_genotypes(tmp_path / "g.vcf.gz", maf=0.05)
        bed = read_genotypes(tmp_path / "g.bed", maf=0.05)
        np.testing.assert_array_equal(vcf.dosage, bed.dosage)
        assert vcf.samples.tolist() == bed.samples.tolist()
        assert vcf.variants["id"].tolist() == bed.variants["id"].tolist()
        assert [e["removed"] for e in vcf.filter_log[2:]] == (
            [e["removed"] for e in bed.filter_log[1:]]
        )


def _loglikelihood(dosage: np.ndarray, Q: np.ndarray, P: np.ndarray) -> float:
    """ADMIXTURE's log-likelihood: sum over called g of g log f + (2-g) log(1-f)."""
    try:
        from admixspec.ml.likelihood import loglikelihood
    except ImportError:
        loglikelihood = None
    if loglikelihood is not None:
        return float(loglikelihood(dosage, Q, P))
    F = Q @ P.T
    called = dosage >= 0
    g = np.where(called, dosage, 0).astype(np.float64)
    return float(np.sum(called * (g * np.log(F) + (2 - g) * np.log1p(-F))))


class TestAdmixtureHapmap3:
    def test_read_admixture_log__summary(self, hapmap3_fixture):
        folder = hapmap3_fixture
        log = read_admixture_log(folder / "starmie_extdata" / "log3.out")
        assert log == {
            "loglik": -3799887.171935, "K": 3, "cv_error": 0.47835, "seed": 43,
            "n_individuals": 324, "n_snps": 13928, "n_iter": 21,
        }

    @pytest.mark.parametrize("K", [1, 2, 3, 4, 5])
    def test_hapmap3__loglik_of_admixture_q_p_equals_its_log(self, K, hapmap3_fixture):
        folder = hapmap3_fixture
        extdata = folder / "starmie_extdata"
        q_path = folder / "hapmap3.3.Q" if K == 3 else extdata / f"hapmap3.{K}.Q"
        p_path = folder / "hapmap3.3.P" if K == 3 else extdata / f"hapmap3.{K}.P"
        genotypes = read_genotypes(folder / "hapmap3.bed", drop_monomorphic=False)
        Q, P = read_q(q_path), read_p(p_path)
        assert Q.shape == (genotypes.n_individuals, K)
        assert P.shape == (genotypes.n_snps, K)
        expected = read_admixture_log(extdata / f"log{K}.out")["loglik"]
        # Q/P are printed with 6 decimals, so agreement is to ~1e-7 relative.
        assert (_loglikelihood(genotypes.dosage, Q, P)
                == pytest.approx(expected, rel=1e-7))

    def test_hapmap3__counting_a1_instead_would_not_match(self, hapmap3_fixture):
        folder = hapmap3_fixture
        genotypes = read_genotypes(folder / "hapmap3.bed", drop_monomorphic=False)
        flipped = np.where(genotypes.dosage >= 0, 2 - genotypes.dosage, -1)
        Q, P = read_q(folder / "hapmap3.3.Q"), read_p(folder / "hapmap3.3.P")
        expected = read_admixture_log(folder / "starmie_extdata" / "log3.out")["loglik"]
        assert _loglikelihood(flipped, Q, P) < expected - 1e5

