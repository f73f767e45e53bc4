"""PLINK 2 input: a .pgen converted by plink2 reads as the .bed it came from."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from admixspec import InputError, fit_admixture, simulate_balding_nichols
from admixspec.io import read_genotypes, read_pgen, read_vcf, write_plink

pytest.importorskip("pgenlib", reason="pgenlib (the 'pgen' extra) not installed")
PLINK2 = shutil.which("plink2")
pytestmark = pytest.mark.skipif(PLINK2 is None, reason="plink2 not installed")

DATA = Path(__file__).resolve().parent.parent / "data"

MULTIALLELIC_VCF = (
    "##fileformat=VCFv4.2\n"
    "##contig=<ID=1,length=1000>\n"
    '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
    "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ta\tb\tc\n"
    "1\t10\tsnp1\tA\tG\t.\t.\t.\tGT\t0/0\t0/1\t./.\n"
    "1\t20\tmulti\tA\tG,T\t.\t.\t.\tGT\t0/0\t1/2\t0/2\n"
    "1\t30\tindel\tA\tAT\t.\t.\t.\tGT\t0/0\t0/1\t1/1\n"
    "1\t40\tsnp2\tC\tT\t.\t.\t.\tGT\t1/1\t0/1\t0/0\n"
)

#: Imputed calls: plink2 keeps the DS dosages and stores a missing hard call
#: where a dosage is further than 0.1 from a whole number (s2's 0.5 and 1.7
#: copies of REF).
DOSAGE_VCF = (
    "##fileformat=VCFv4.2\n"
    "##contig=<ID=1,length=1000>\n"
    '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
    '##FORMAT=<ID=DS,Number=A,Type=Float,Description="ALT dosage">\n'
    "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ta\tb\tc\n"
    "1\t10\ts1\tA\tG\t.\t.\t.\tGT:DS\t0/0:0\t0/1:1\t1/1:2\n"
    "1\t20\ts2\tC\tT\t.\t.\t.\tGT:DS\t0/1:1.5\t0/0:0.3\t0/1:1\n"
)


def plink2(*args: str) -> None:
    subprocess.run([PLINK2, *args, "--threads", "1"], check=True, capture_output=True)


def make_pgen(source_prefix: Path, out_prefix: Path) -> Path:
    plink2("--bfile", str(source_prefix), "--make-pgen", "--out", str(out_prefix))
    return out_prefix


@pytest.fixture(scope="module")
def example_pgen(tmp_path_factory) -> Path:
    return make_pgen(DATA / "example", tmp_path_factory.mktemp("pgen") / "example")


@pytest.fixture
def missing_bed(tmp_path) -> Path:
    """A fileset with missing calls and monomorphic SNPs (other allele "0")."""
    sim = simulate_balding_nichols(30, 400, 2, missing_rate=0.05, seed=7)
    prefix = tmp_path / "missing"
    write_plink(prefix, sim.genotypes)
    return prefix



def _copy_fileset(example_pgen, tmp_path, *suffixes):
    """Copy the example's ``suffixes`` files to ``tmp_path/x`` (tests add the rest)."""
    for suffix in suffixes:
        shutil.copy(example_pgen.with_suffix(suffix), tmp_path / f"x{suffix}")

class TestReadPgen:
    def test_pgen__same_dosage_alleles_and_Q_as_bed(self, example_pgen):
        bed = read_genotypes(DATA / "example.bed")
        pgen = read_genotypes(example_pgen.with_suffix(".pgen"))
        assert np.array_equal(pgen.dosage, bed.dosage)
        assert pgen.samples.tolist() == bed.samples.tolist()
        assert pgen.variants.equals(bed.variants)  # REF is .bim column 6 (A2)
        assert np.array_equal(fit_admixture(pgen, 3, seed=1).Q,
                              fit_admixture(bed, 3, seed=1).Q)

    def test_pgen__missing_calls_match_bed(self, missing_bed, tmp_path):
        pgen_prefix = make_pgen(missing_bed, tmp_path / "converted")
        bed = read_genotypes(missing_bed.with_suffix(".bed"), drop_monomorphic=False)
        pgen = read_genotypes(pgen_prefix, drop_monomorphic=False)  # a prefix works
        assert (pgen.dosage == -1).any()
        assert np.array_equal(pgen.dosage, bed.dosage)
        assert pgen.variants.equals(bed.variants)

    def test_pgen__keep_and_region_match_bed(self, example_pgen, tmp_path):
        keep = tmp_path / "keep.txt"
        keep.write_text("pop1-03\npop2-01\n")
        options = {"keep": keep, "region": "1:1-2000000"}
        bed = read_genotypes(DATA / "example.bed", **options)
        pgen = read_genotypes(example_pgen, **options)
        assert pgen.samples.tolist() == ["pop1-03", "pop2-01"]
        assert 0 < pgen.n_snps < 10000
        assert np.array_equal(pgen.dosage, bed.dosage)

    def test_pgen__multiallelic_skipped_and_counted(self, tmp_path):
        vcf = tmp_path / "multi.vcf"
        vcf.write_text(MULTIALLELIC_VCF)
        plink2("--vcf", str(vcf), "--make-pgen", "--out", str(tmp_path / "multi"))
        pgen = read_pgen(tmp_path / "multi.pgen")
        assert pgen.variants["id"].tolist() == ["snp1", "snp2"]
        assert np.array_equal(pgen.dosage, read_vcf(vcf).dosage)  # REF copies
        details = pgen.filter_log[0]["details"]
        assert (details["multiallelic"], details["indel_or_symbolic"]) == (1, 1)

    def test_pgen__dosages_read_as_hard_calls_with_a_warning(self, tmp_path, caplog):
        vcf = tmp_path / "imputed.vcf"
        vcf.write_text(DOSAGE_VCF)
        plink2("--vcf", str(vcf), "dosage=DS", "--make-pgen", "--out",
               str(tmp_path / "imputed"))
        with caplog.at_level("WARNING", logger="admixspec"):
            pgen = read_pgen(tmp_path / "imputed.pgen")
        assert pgen.dosage.tolist() == [[2, -1], [1, -1], [0, 1]]  # plink2's hard calls
        assert "holds dosages" in caplog.text
        counts = "2 of 6 dosages are not whole numbers and 2 of them are missing"
        assert counts in caplog.text

    def test_pgen__hard_calls_alone_read_without_a_dosage_warning(
        self, example_pgen, caplog
    ):
        with caplog.at_level("WARNING", logger="admixspec"):
            read_pgen(example_pgen)
        assert "dosages" not in caplog.text

    def test_pgen__unknown_sample_is_input_error(self, example_pgen):
        with pytest.raises(InputError, match="not in the .psam"):
            read_pgen(example_pgen, samples=["nobody"])

    def test_pgen__duplicate_iid_in_psam_is_an_error(self, example_pgen, tmp_path):
        _copy_fileset(example_pgen, tmp_path, ".pgen", ".pvar")
        psam = example_pgen.with_suffix(".psam").read_text().splitlines()
        psam[3] = psam[1]  # line 1 is the #FID/#IID header
        (tmp_path / "x.psam").write_text("\n".join(psam) + "\n")
        iid = psam[1].split()[1]
        fid = psam[1].split()[0]
        with pytest.raises(InputError, match=rf"x\.psam:4: sample '{fid}' '{iid}' "
                           r"\(FID, IID\) on lines 2 and 4: each sample must be listed "
                           r"once$"):
            read_pgen(tmp_path / "x")

    def test_pgen__missing_pvar_is_input_error(self, example_pgen, tmp_path):
        _copy_fileset(example_pgen, tmp_path, ".pgen", ".psam")
        with pytest.raises(InputError, match="the .pvar file"):
            read_pgen(tmp_path / "x.pgen")

    def test_pgen__pgen_disagreeing_with_pvar_is_error(self, example_pgen, tmp_path):
        _copy_fileset(example_pgen, tmp_path, ".pgen", ".psam")
        lines = example_pgen.with_suffix(".pvar").read_text().splitlines(keepends=True)
        (tmp_path / "x.pvar").write_text("".join(lines[:-5]))
        with pytest.raises(InputError, match=r"x\.pgen: cannot read as \.pgen \(the "
                           r"\.pvar lists 9995 variants, the \.pgen holds 10000\)$"):
            read_pgen(tmp_path / "x")

    def test_pgen__truncated_pgen_says_so_in_text(self, example_pgen, tmp_path):
        _copy_fileset(example_pgen, tmp_path, ".pvar", ".psam")
        data = example_pgen.with_suffix(".pgen").read_bytes()
        (tmp_path / "x.pgen").write_bytes(data[: len(data) // 2])
        with pytest.raises(InputError, match=r"x\.pgen: cannot read as \.pgen \(the "
                           r"file looks truncated or corrupt"):
            read_pgen(tmp_path / "x")

    def test_pgen__not_a_pgen_is_one_line_of_text(self, example_pgen, tmp_path):
        _copy_fileset(example_pgen, tmp_path, ".pvar", ".psam")
        (tmp_path / "x.pgen").write_bytes(b"\x00" * 100)
        with pytest.raises(InputError) as error:
            read_pgen(tmp_path / "x")
        assert "b'" not in str(error.value) and 'b"' not in str(error.value)
        assert "\n" not in str(error.value)

    def test_pgen__region_on_a_chromosome_not_in_the_pvar_names_its_chromosomes(
        self, example_pgen
    ):
        with pytest.raises(InputError, match=r"example\.pvar: region chr9 selects no "
                           r"variants \(the file's chromosomes: 1\)$"):
            read_pgen(example_pgen, region="chr9")
        # PLINK reads chr1 as 1
        assert read_pgen(example_pgen, region="chr1").n_snps > 0

    def test_pgen__pvar_info_with_spaces_reads_as_plink2_does(self, example_pgen,
                                                              tmp_path):
        # PLINK 2 writes tab-separated .pvar files, and reads an INFO value with a
        # space in it (VCF 4.3 allows them) as one field
        _copy_fileset(example_pgen, tmp_path, ".pgen", ".psam")
        lines = example_pgen.with_suffix(".pvar").read_text().splitlines()
        header = [i for i, line in enumerate(lines) if line.startswith("#CHROM")][0]
        lines[header] += "\tINFO"
        lines[header + 1 :] = [f"{line}\tNOTE=two words;AF=0.5"
                               for line in lines[header + 1 :]]
        (tmp_path / "x.pvar").write_text("\n".join(lines) + "\n")
        plink2("--pfile", str(tmp_path / "x"), "--make-bed", "--out",
               str(tmp_path / "y"))  # PLINK 2 takes it
        pgen = read_pgen(tmp_path / "x")
        bed = read_genotypes(DATA / "example.bed", drop_monomorphic=False)
        assert np.array_equal(pgen.dosage, bed.dosage)
        assert pgen.variants.equals(bed.variants)

    def test_pgen__space_separated_records_under_a_tab_header(self, example_pgen,
                                                              tmp_path):
        _copy_fileset(example_pgen, tmp_path, ".pgen", ".pvar")
        lines = example_pgen.with_suffix(".psam").read_text().splitlines()
        (tmp_path / "x.psam").write_text(
            "\n".join([lines[0], *(" ".join(line.split()) for line in lines[1:])])
            + "\n")
        assert read_pgen(tmp_path / "x").samples.tolist() == \
            read_pgen(example_pgen).samples.tolist()

    def test_pgen__a_tab_ending_each_record_is_no_field(self, example_pgen, tmp_path):
        _copy_fileset(example_pgen, tmp_path, ".pgen", ".pvar")
        lines = example_pgen.with_suffix(".psam").read_text().splitlines()
        (tmp_path / "x.psam").write_text("".join(f"{line}\t\n" for line in lines))
        assert read_pgen(tmp_path / "x").samples.tolist() == \
            read_pgen(example_pgen).samples.tolist()
