"""The command line, in-process: subcommands and one test per bad-input case."""

from __future__ import annotations

import errno
import gzip
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from admixspec import (
    InputError,
    read_genotypes,
    read_p,
    read_q,
    simulate_balding_nichols,
)
from admixspec.cli import get_parser, main
from admixspec.cli import parse_arguments as _parse
from admixspec.io import write_plink, write_vcf

from .conftest import failing_on_call

DATA = Path(__file__).resolve().parent.parent / "data"

VCF_HEADER = (
    "##fileformat=VCFv4.2\n"
    "##contig=<ID=1,length=1000>\n"
    '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
    "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ta\tb\tc\n"
)


def run(argv, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(capsys, argv, code: int, message: str) -> None:
    status, _, err = run(argv, capsys)
    assert status == code
    assert err.splitlines() == [f"admixspec: error: {message}"]


@pytest.fixture
def plink_fixture(tmp_path) -> Path:
    sim = simulate_balding_nichols(20, 200, 2, seed=1)
    write_plink(tmp_path / "sim", sim.genotypes)
    return tmp_path / "sim"


@pytest.fixture
def vcf_gz_fixture(tmp_path) -> Path:
    sim = simulate_balding_nichols(20, 400, 2, seed=1)
    path = tmp_path / "sim.vcf.gz"
    write_vcf(path, sim.genotypes, index=False)
    return path


class TestParser:
    def test_get_parser__subcommands_have_runners(self):
        parser = get_parser()
        for argv in (["simulate", "--out", "x"], ["info", "x.vcf"]):
            assert callable(parser.parse_args(argv).runner)

    @pytest.mark.parametrize(
        ("admixture_argv", "argv"),
        [
            # ADMIXTURE's manual: `admixture --cv hapmap3.bed $K`, `-B`, `--supervised`
            (["--cv", "d.bed", "3"], ["d.bed", "-K", "3", "--cv"]),
            (["-j4", "--cv=10", "d.bed", "3"],
             ["d.bed", "-K", "3", "-j", "4", "--cv", "10"]),
            (["-B", "d.bed", "3"], ["d.bed", "-K", "3", "-B"]),
            (["-B2000", "d.bed", "3"], ["d.bed", "-K", "3", "-B", "2000"]),
            (["--supervised", "d.bed", "3"], ["d.bed", "-K", "3", "--supervised"]),
            (["--supervised", "d.pop", "d.bed", "3"],
             ["d.bed", "-K", "3", "--supervised", "d.pop"]),
            (["--bootstrap", "d.vcz", "3"], ["d.vcz", "-K", "3", "--bootstrap"]),
            # not ADMIXTURE's, and parsed as before: `--` ends the options, and a
            # population file after the input stays --supervised's
            (["-K", "3", "--cv", "--", "d.bed"], ["d.bed", "-K", "3", "--cv"]),
            (["d.bed", "-K", "3", "--supervised", "ref.bed"],
             ["d.bed", "-K", "3", "--supervised=ref.bed"]),
        ],
    )
    def test_run__admixture_command_lines_mean_what_they_mean_to_admixture(
        self, admixture_argv, argv
    ):
        def parsed(words):
            namespace = vars(_parse(["run", *words]))
            namespace["K"] = namespace["K"] or namespace.pop("K_after_input")
            namespace.pop("K_after_input", None)
            namespace.pop("usage_error")  # a bound method of each parse's own parser
            return namespace

        assert parsed(admixture_argv) == parsed(argv)

    @pytest.mark.parametrize("subcommand", ["plot", "report"])
    def test_help__ids_states_its_default_and_no_None(self, subcommand, capsys):
        # recorded_sample_ids: the input PREFIX.K.json records, else PREFIX.fam
        with pytest.raises(SystemExit):
            main([subcommand, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        ids = text.split("--ids FILE ", 1)[1].split(" --population-order", 1)[0]
        assert ids.endswith("default: the input that PREFIX.K.json records, else "
                            "PREFIX.fam, whichever first holds one ID per Q row"
                            + ("; without them, individuals are numbered"
                               if subcommand == "report" else ""))
        assert "(default: None)" not in text

    def test_main__no_subcommand_prints_help_and_returns_2(self, capsys):
        code, _, err = run([], capsys)
        assert code == 2
        assert "subcommands" in err


class TestSimulate:
    def test_simulate__defaults_are_simulate_admixtures(self):
        import inspect

        from admixspec import simulate_admixture

        args = get_parser().parse_args(["simulate", "--out", "x"])
        defaults = inspect.signature(simulate_admixture).parameters
        flags = {"n_haplotypes": "n_haplotypes", "split_time": "split_time",
                 "population_size": "ne", "mutation_rate": "mutation_rate",
                 "recombination_rate": "recombination_rate",
                 "sequence_length": "length", "block_rate": "block_rate",
                 "bp_per_morgan": "bp_per_morgan", "alpha": "alpha"}
        for name, flag in flags.items():
            assert getattr(args, flag) == defaults[name].default, name

    def test_simulate__balding_nichols_writes_every_file(self, tmp_path, capsys):
        prefix = tmp_path / "out" / "bn"
        code, _, _ = run(
            ["simulate", "--model", "balding-nichols", "--out", prefix, "-m", "30",
             "--n-snps", "500", "-K", "2", "--seed", "4", "-q"],
            capsys,
        )
        assert code == 0
        for suffix in (".vcf.gz", ".bed", ".bim", ".fam", ".truth.Q", ".truth.P",
                       ".labels.tsv", ".params.json"):
            assert Path(f"{prefix}{suffix}").exists(), suffix
        assert read_q(f"{prefix}.truth.Q").shape == (30, 2)
        assert read_p(f"{prefix}.truth.P").shape == (500, 2)
        params = json.loads(Path(f"{prefix}.params.json").read_text())
        assert params["parameters"]["seed"] == 4
        assert params["parameters"]["command_line"].startswith("admixspec simulate")

    def test_simulate__msprime_vcf_and_plink_agree_with_truth(self, tmp_path, capsys):
        pytest.importorskip("msprime")
        prefix = tmp_path / "ms"
        code, _, err = run(
            ["simulate", "--out", prefix, "-m", "10", "--n-haplotypes", "6",
             "--length", "1e6", "--seed", "2"],
            capsys,
        )
        assert code == 0
        assert "simulated 10 individuals" in err
        vcf = read_genotypes(f"{prefix}.vcf.gz")
        bed = read_genotypes(f"{prefix}.bed")
        np.testing.assert_array_equal(vcf.dosage, bed.dosage)
        assert read_p(f"{prefix}.truth.P").shape == (vcf.n_snps, 3)
        np.testing.assert_allclose(read_q(f"{prefix}.truth.Q").sum(axis=1), 1, atol=3e-5)
        if Path(f"{prefix}.vcf.gz.tbi").exists():
            assert read_genotypes(f"{prefix}.vcf.gz", region="1:1-500000").n_snps < (
                vcf.n_snps
            )

    def test_simulate__K_below_1_is_usage_error(self, tmp_path, capsys):
        with pytest.raises(SystemExit) as exit_info:
            main(["simulate", "--out", str(tmp_path / "x"), "-K", "0"])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert err.splitlines() == [
            "admixspec simulate: error: argument -K: must be an integer >= 1, got 0 "
            "(see 'admixspec simulate --help')"
        ]


class TestUsageErrors:
    def test_run__empty_K_range_is_one_line_usage_error(self, plink_fixture, tmp_path,
                                                         capsys):
        prefix = tmp_path / "out" / "x"
        with pytest.raises(SystemExit) as exit_info:
            main(["run", str(plink_fixture), "-K", "5-2", "--out", str(prefix)])
        assert exit_info.value.code == 2
        assert capsys.readouterr().err.splitlines() == [
            "admixspec run: error: argument -K/--K: empty K range '5-2': write the "
            "smaller K first, e.g. '2-5' (see 'admixspec run --help')"
        ]
        assert not prefix.parent.exists()

    def test_run__K_below_1_is_a_usage_error_before_the_input_is_read(self, tmp_path,
                                                                      capsys):
        missing = tmp_path / "absent.bed"  # reading it would fail with 'not found'
        with pytest.raises(SystemExit) as exit_info:
            main(["run", str(missing), "-K", "0-3", "--out", str(tmp_path / "x")])
        assert exit_info.value.code == 2
        assert capsys.readouterr().err.splitlines() == [
            "admixspec run: error: argument -K/--K: K must be at least 1, got '0-3' "
            "(see 'admixspec run --help')"
        ]
        assert list(tmp_path.iterdir()) == []

    @pytest.mark.parametrize(
        ("K_argv", "message"),
        [
            ([], "the following arguments are required: K (after the input, as "
                 "ADMIXTURE takes it, or -K)"),
            (["3", "-K", "2-4"],
             "K is given twice: 3 after the input and -K 2,3,4; give one"),
        ],
    )
    def test_run__K_once_before_the_input_is_read(self, K_argv, message, tmp_path,
                                                  capsys):
        missing = tmp_path / "absent.bed"  # reading it would fail with 'not found'
        with pytest.raises(SystemExit) as exit_info:
            main(["run", str(missing), *K_argv, "--out", str(tmp_path / "x")])
        assert exit_info.value.code == 2
        assert capsys.readouterr().err.splitlines() == [
            f"admixspec run: error: {message} (see 'admixspec run --help')"
        ]
        assert list(tmp_path.iterdir()) == []

    def test_run__input_after_minus_K_says_to_put_it_first(self, tmp_path, capsys):
        with pytest.raises(SystemExit) as exit_info:
            main(["run", "-K", "3", str(tmp_path / "absent.bed")])
        assert exit_info.value.code == 2
        assert capsys.readouterr().err.splitlines() == [
            f"admixspec run: error: argument -K/--K: not a K value or range: "
            f"'{tmp_path / 'absent.bed'}'; -K takes every value after it, so give the "
            "input before -K (see 'admixspec run --help')"
        ]

    def test_plot__empty_K_range_is_usage_error(self, tmp_path, capsys):
        with pytest.raises(SystemExit) as exit_info:
            main(["plot", str(tmp_path / "x"), "-K", "2,6-4", "-o", "x.png"])
        assert exit_info.value.code == 2
        assert "empty K range '6-4'" in capsys.readouterr().err

    def test_simulate__without_msprime_one_line_naming_the_extra(
        self, tmp_path, capsys, monkeypatch
    ):
        monkeypatch.setitem(sys.modules, "msprime", None)  # import msprime fails
        assert_one_line_error(
            capsys, ["simulate", "--out", tmp_path / "x"], 1,
            "simulate_admixture needs msprime: pip install 'admixspec[sim]'",
        )
        assert list(tmp_path.iterdir()) == []


    @pytest.mark.parametrize(
        ("module", "argv", "message"),
        [
            ("allel",
             ["info", DATA / "example.bed", "--indep-pairwise", "50", "5", "0.2"],
             "--indep-pairwise needs scikit-allel: pip install 'admixspec[allel]'"),
            ("pgenlib", ["info", DATA / "example.pgen"],
             "reading .pgen files needs pgenlib: pip install 'admixspec[pgen]'"),
        ],
    )
    def test_missing_optional_package__one_line_naming_the_extra(
        self, module, argv, message, capsys, monkeypatch
    ):
        monkeypatch.setitem(sys.modules, module, None)  # import fails
        assert_one_line_error(capsys, argv, 1, message)


class TestWarnings:
    @pytest.mark.filterwarnings("always::admixspec.core.exceptions.ConvergenceWarning")
    def test_run__warning_is_one_admixspec_line(self, plink_fixture, tmp_path, capsys):
        code, _, err = run(
            ["run", plink_fixture, "-K", "2", "--init", "svd", "--max-iter", "2",
             "--out", tmp_path / "x", "-q"],
            capsys,
        )
        assert code == 0
        lines = err.splitlines()
        assert [line for line in lines if "ConvergenceWarning" in line] == [
            line for line in lines if line.startswith("admixspec: ConvergenceWarning: ")
        ] != []
        assert all(line.startswith("admixspec: ") for line in lines), lines

    def test_main__restores_python_warning_display(self, plink_fixture, capsys):
        before = (warnings.showwarning, warnings.formatwarning)
        run(["info", plink_fixture], capsys)
        assert (warnings.showwarning, warnings.formatwarning) == before


class TestThreads:
    @pytest.mark.parametrize("threads", [None, 1])
    def test_run__reads_a_bed_on_the_threads_of_j(self, plink_fixture, tmp_path,
                                                  capsys, monkeypatch, threads):
        # -j is the whole run's thread count, the .bed reader's included
        import bed_reader

        seen = []
        open_bed = bed_reader.open_bed

        def spy(*args, **kwargs):
            seen.append(kwargs.get("num_threads"))
            return open_bed(*args, **kwargs)

        monkeypatch.setattr(bed_reader, "open_bed", spy)
        flags = [] if threads is None else ["-j", threads]
        code, _, _ = run(["run", plink_fixture, "-K", "2", "--init", "svd",
                          "--out", tmp_path / "x", "-q", *flags], capsys)
        assert code == 0
        assert seen == [threads]


class TestRunOutputs:
    def test_run__full_disk_part_way_leaves_none_of_that_K_and_names_the_file(
        self, plink_fixture, tmp_path, capsys, monkeypatch
    ):
        # K=2 writes Q, P, P.snps, log, json (5 fsyncs); the disk fills on K=3's P.
        full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        monkeypatch.setattr(os, "fsync", failing_on_call(os.fsync, 7, full))
        prefix = tmp_path / "out" / "x"
        assert_one_line_error(
            capsys, ["run", plink_fixture, "-K", "2-3", "--out", prefix, "-q"], 1,
            f"{prefix}.3.P: No space left on device",
        )
        assert sorted(p.name for p in prefix.parent.iterdir()) == [
            "x.2.P", "x.2.P.snps", "x.2.Q", "x.2.json", "x.2.log"
        ]

    def test_run__K_after_the_input_as_admixture_takes_it_is_minus_K(
        self, plink_fixture, tmp_path, capsys
    ):
        # ADMIXTURE's `admixture data.bed 3`: the same fit, the same files
        for name, K_argv in (("positional", ["2-3"]), ("flag", ["-K", "2-3"])):
            code, _, _ = run(["run", plink_fixture, *K_argv, "--out", tmp_path / name,
                              "-q", "-j", "1"], capsys)
            assert code == 0
        for K in (2, 3):
            assert (tmp_path / f"positional.{K}.Q").read_bytes() == (
                tmp_path / f"flag.{K}.Q").read_bytes()

    def test_run__prints_admixtures_result_lines_on_stdout(self, plink_fixture,
                                                           tmp_path, capsys):
        # the manual's `admixture --cv x.bed $K > log$K.out; grep -h CV log*.out`
        code, out, _ = run(["run", "--cv", plink_fixture, "2-3", "--out",
                            tmp_path / "x", "-q", "-j", "1"], capsys)
        assert code == 0
        expected = []
        for K in (2, 3):
            log = (tmp_path / f"x.{K}.log").read_text().splitlines()
            finals = [line for line in log if line.startswith("Loglikelihood: ")]
            cv = [line for line in log if line.startswith(f"CV error (K={K}): ")]
            expected += [finals[-1], *cv]
        assert len(expected) == 4 and out.splitlines() == expected

    def test_run__a_closed_stdout_does_not_stop_the_fits(self, plink_fixture, tmp_path,
                                                         monkeypatch):
        class Closed:  # `admixspec run ... | head -0`
            def write(self, text):
                raise BrokenPipeError(32, "Broken pipe")

            def flush(self):
                pass

        monkeypatch.setattr(sys, "stdout", Closed())
        assert main(["run", str(plink_fixture), "2-3", "--out", str(tmp_path / "x"),
                     "-q", "-j", "1"]) == 0
        assert (tmp_path / "x.2.Q").exists() and (tmp_path / "x.3.Q").exists()

    def test_run__bootstrap_bias_keeps_its_sign(self, plink_fixture, tmp_path, capsys):
        # Q_bias (replicate mean - estimate) is not a proportion: not clamped to
        # [1e-5, 1 - 1e-5] as .Q is.
        prefix = tmp_path / "x"
        code, _, _ = run(
            ["run", plink_fixture, "-K", "2", "-B", "4", "--out", prefix, "-q"], capsys
        )
        assert code == 0
        bias = np.loadtxt(f"{prefix}.2.Q_bias")
        assert bias.shape == (20, 2) and bias.min() < 0
        np.testing.assert_allclose(bias.sum(axis=1), 0, atol=1e-5)


class TestInfo:
    def test_info__human_summary_of_example(self, capsys):
        code, out, _ = run(["info", DATA / "example.bed", "-q"], capsys)
        assert code == 0
        assert "individuals:      60 kept, 0 removed" in out
        assert "variants:         10000 read, 10000 kept" in out
        assert "ploidy:" in out and "missing calls:" in out
        # the example has 3 simulated ancestral populations
        assert "spectral K hint:  K = 3 " in out

    def test_info__json_reports_filters(self, capsys):
        code, out, _ = run(
            ["info", DATA / "example.vcf.gz", "--maf", "0.1", "--json", "-q"], capsys
        )
        assert code == 0
        summary = json.loads(out)
        assert summary["individuals"] == 60
        assert summary["variants_read"] == 10_000
        removed = summary["removed"]["maf"]["removed"]
        assert summary["variants_kept"] == 10_000 - removed
        assert removed > 0
        assert summary["ploidy"]["haploid_as_homozygous"] == 0
        assert summary["k_hint"]["K"] == 3

    def test_info__keep_file(self, tmp_path, capsys):
        keep = tmp_path / "keep.txt"
        keep.write_text("pop1-01\nadm-05\npop3-10\n")
        code, out, _ = run(
            ["info", DATA / "example.bed", "--keep", keep, "--json", "-q"], capsys)
        assert code == 0
        assert json.loads(out)["individuals"] == 3


class TestBadInput:
    def test_missing_file(self, tmp_path, capsys):
        path = tmp_path / "absent.vcf.gz"
        assert_one_line_error(capsys, ["info", path], 1, f"{path}: file not found")

    def test_missing_plink_prefix(self, tmp_path, capsys):
        path = tmp_path / "absent"
        assert_one_line_error(capsys, ["info", path], 1, f"{path}: file not found")

    def test_truncated_bgzf(self, vcf_gz_fixture, capsys):
        data = vcf_gz_fixture.read_bytes()
        vcf_gz_fixture.write_bytes(data[: len(data) - 100])
        assert_one_line_error(
            capsys, ["info", vcf_gz_fixture], 1,
            f"{vcf_gz_fixture}: truncated or corrupt BGZF file (the end-of-file block "
            "is missing)",
        )

    def test_truncated_gzip(self, tmp_path, capsys):
        path = tmp_path / "plain.vcf.gz"
        body = "".join(f"1\t{i}\t.\tA\tC\t.\t.\t.\tGT\t0/0\t0/1\t1/1\n"
                       for i in range(1, 500))
        data = gzip.compress((VCF_HEADER + body).encode())
        path.write_bytes(data[: len(data) // 2])
        assert_one_line_error(
            capsys, ["info", path], 1,
            f"{path}: truncated gzip file (unexpected end of data)",
        )

    def test_header_only_vcf(self, tmp_path, capsys):
        path = tmp_path / "header.vcf"
        path.write_text(VCF_HEADER)
        assert_one_line_error(
            capsys, ["info", path], 1, f"{path}: has no variant records (header only)"
        )

    def test_vcf_without_gt(self, tmp_path, capsys):
        path = tmp_path / "nogt.vcf"
        path.write_text(
            VCF_HEADER.replace(
                '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
                '##FORMAT=<ID=DP,Number=1,Type=Integer,Description="Depth">',
            )
            + "1\t5\t.\tA\tC\t.\t.\t.\tDP\t3\t4\t5\n"
        )
        assert_one_line_error(
            capsys, ["info", path], 1,
            f"{path}: has no GT (genotype) FORMAT field in its header",
        )

    def test_bed_size_disagrees_with_bim_and_fam(self, plink_fixture, capsys):
        with open(f"{plink_fixture}.fam", "a") as handle:
            for i in range(4):  # 24 individuals need 6 bytes per SNP, not 5
                handle.write(f"x{i} x{i} 0 0 0 -9\n")
        bed = f"{plink_fixture}.bed"
        assert_one_line_error(
            capsys, ["info", bed], 1,
            f"{bed}: size 1003 bytes disagrees with the .bim (200 SNPs) and .fam "
            "(24 individuals) line counts: expected 1203 bytes",
        )

    def test_bed_wrong_magic(self, plink_fixture, capsys):
        bed = Path(f"{plink_fixture}.bed")
        bed.write_bytes(b"\x00\x00\x01" + bed.read_bytes()[3:])
        assert_one_line_error(
            capsys, ["info", bed], 1,
            f"{bed}: not a PLINK 1 .bed file (wrong magic bytes: expected 6c 1b, "
            "found 00 00)",
        )

    def test_fewer_than_2_individuals_after_filtering(self, plink_fixture, tmp_path,
                                                      capsys):
        keep = tmp_path / "one.txt"
        keep.write_text("ind3\n")
        assert_one_line_error(
            capsys, ["info", plink_fixture, "--keep", keep], 1,
            f"{plink_fixture}.bed: fewer than 2 individuals left after filtering "
            "(1 left)",
        )

    def test_fewer_than_2_snps_after_filtering(self, plink_fixture, capsys):
        assert_one_line_error(
            capsys, ["info", plink_fixture, "--region", "1:5-5"], 1,
            f"{plink_fixture}.bed: fewer than 2 usable SNPs left after filtering "
            "(1 left)",
        )

    def test_library_usage_error_exits_2(self, plink_fixture, capsys):
        assert_one_line_error(
            capsys, ["info", plink_fixture, "--region", "1:9-3"], 2,
            "invalid region '1:9-3': end before start",
        )

    def test_debug_shows_the_traceback(self, tmp_path):
        with pytest.raises(InputError, match="file not found"):
            main(["info", str(tmp_path / "absent.vcf"), "--debug"])


class TestSubprocess:
    def test_malformed_vcf__exactly_one_stderr_line_from_the_real_process(
            self, tmp_path):
        """htslib's own messages stay off stderr, which holds only our line.

        The line quotes htslib's reason: cyvcf2 says only "cannot parse VCF
        header" (it was all the line said).
        """
        import subprocess
        import sys

        path = tmp_path / "bad.vcf"
        path.write_text("##fileformat=VCFv4.2\n#CHROM\tPOS\n1\tx\n")
        result = subprocess.run(
            [sys.executable, "-m", "admixspec", "info", str(path)],
            capture_output=True, text=True, check=False,
        )
        assert result.returncode == 1
        assert result.stderr.splitlines() == [
            f"admixspec: error: {path}: cannot read as VCF/BCF (cannot parse VCF "
            'header: Could not parse the "#CHROM.." line, either the fields are '
            "incorrect or spaces are present instead of tabs)"]

    def test_closed_stdout__exits_quietly_as_head_expects(self):
        """`admixspec info x | head`: the reader gone, no traceback, status 1."""
        import subprocess
        import sys

        with subprocess.Popen(
                [sys.executable, "-m", "admixspec", "info", str(DATA / "example.bed")],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
            process.stdout.close()  # before the process writes its first line
            errors = process.stderr.read()
            assert process.wait(timeout=600) == 1
        assert "Traceback" not in errors
        assert "Broken pipe" not in errors
        assert "error" not in errors


class TestProcessState:
    def test_main__restores_the_callers_logging(self, tmp_path):
        import logging

        admixspec_logger = logging.getLogger("admixspec")
        before = (list(admixspec_logger.handlers), admixspec_logger.level,
                  admixspec_logger.propagate)
        main(["simulate", "--model", "balding-nichols", "-m", "10", "--n-snps", "50",
              "--out", str(tmp_path / "x"), "-q"])
        assert (list(admixspec_logger.handlers), admixspec_logger.level,
                admixspec_logger.propagate) == before

    def test_main__in_process_leaves_the_garbage_collector_alone(self):
        """Only the process's own run (argv None) freezes it, as it exits next."""
        import gc

        frozen = gc.get_freeze_count()
        assert main(["info", str(DATA / "example.bed")]) == 0
        assert gc.get_freeze_count() == frozen

    def test_main__console_run_freezes_the_garbage_collector(self, monkeypatch):
        """Exit then skips collecting numba's, pandas' and scipy's objects."""
        import gc

        monkeypatch.setattr(sys, "argv",
                            ["admixspec", "info", str(DATA / "example.bed")])
        try:
            assert main() == 0
            assert gc.get_freeze_count() > 0
        finally:
            gc.unfreeze()


def write_bed(path: Path, edit) -> Path:
    """A 20 x 200 simulated ``.bed`` whose int8 dosage ``edit`` changes in place."""
    import dataclasses

    genotypes = simulate_balding_nichols(20, 200, 2, seed=1).genotypes
    dosage = genotypes.dosage.copy()
    edit(dosage)
    write_plink(path, dataclasses.replace(genotypes, dosage=dosage))
    return Path(f"{path}.bed")


def assert_refused_before_reading(capsys, tmp_path, flags, message,
                                  subcommand=("run",)) -> None:
    """``flags`` exit 2 with ``message``, although the input does not exist."""
    missing = tmp_path / "absent.bed"  # reading it would fail with 'not found'
    argv = [*subcommand, missing, "-K", "2", *flags] if subcommand == ("run",) else [
        *subcommand, *flags]
    assert_one_line_error(capsys, argv, 2, message)


class TestArgumentChecks:
    @pytest.mark.parametrize(("flags", "flag"), [
        (["--cv", "1"], "--cv"),
        (["-B", "1"], "-B/--bootstrap"),
        (["--reference-size", "1"], "--reference-size"),
    ])
    def test_run__counts_that_need_two_refuse_one_before_reading(self, flags, flag,
                                                                 tmp_path, capsys):
        # one CV fold holds everything out, one bootstrap replicate has no
        # spread, a reference of one individual has no moments
        with pytest.raises(SystemExit) as exit_info:
            main(["run", str(tmp_path / "absent.bed"), "-K", "2", *flags])
        assert exit_info.value.code == 2
        assert capsys.readouterr().err.splitlines() == [
            f"admixspec run: error: argument {flag}: must be an integer >= 2, got 1 "
            "(see 'admixspec run --help')"
        ]

    def test_run__threads_above_numbas_limit_are_lowered_with_a_warning(
            self, plink_fixture, tmp_path, capsys):
        # the .bed reader started every thread asked for: -j 4096 took minutes
        import numba

        limit = numba.config.NUMBA_NUM_THREADS
        code, _, err = run(["run", str(plink_fixture), "-K", "2", "-j", str(limit + 1),
                            "--out", str(tmp_path / "o")], capsys)
        assert code == 0
        assert (f"-j/--threads {limit + 1} is more than the {limit} threads this "
                f"machine runs (NUMBA_NUM_THREADS, by default its CPU count): using "
                f"{limit}") in err

    @pytest.mark.parametrize("subcommand", ["run", "simulate"])
    @pytest.mark.parametrize("kind", ["separator", "directory"])
    def test_out_naming_a_directory_is_a_usage_error(self, subcommand, kind, tmp_path,
                                                     capsys):
        # a prefix 'dir/' would write hidden files 'dir/.2.Q'
        out = f"{tmp_path}{os.sep}" if kind == "separator" else str(tmp_path)
        argv = (["run", tmp_path / "absent.bed", "-K", "2"] if subcommand == "run"
                else ["simulate", "--model", "balding-nichols"])
        assert_one_line_error(
            capsys, [*argv, "--out", out], 2,
            f"--out is a prefix for the output files, not a directory: {out}")
        assert list(tmp_path.iterdir()) == []

    @pytest.mark.parametrize(("flags", "message"), [
        (["--supervised", "x.pop", "--project", "ref.2.P"],
         "--supervised cannot be combined with --project: a projection keeps the "
         "reference's P and never uses the labels; give one"),
        (["--plain-projection"],
         "--plain-projection is an option of --project, which was not given"),
        (["--keep-ambiguous"],
         "--keep-ambiguous is an option of --project, which was not given"),
    ])
    def test_run__flags_another_makes_meaningless_are_usage_errors(
        self, flags, message, tmp_path, capsys
    ):
        assert_refused_before_reading(capsys, tmp_path, flags, message)


class TestOutputFolder:
    """An output folder that takes no files fails before the input is read
    (which does not exist: reading it would fail with 'file not found')."""

    @pytest.mark.parametrize("subcommand", ["run", "simulate"])
    def test_output_folder_that_takes_no_files_fails_before_the_work(
        self, subcommand, tmp_path, capsys
    ):
        # Linux's /proc/self takes no new file, even root's: a folder made
        # read-only with chmod still takes root's
        argv = (["run", tmp_path / "absent.bed", "-K", "2"] if subcommand == "run"
                else ["simulate", "--model", "balding-nichols"])
        assert_one_line_error(
            capsys, [*argv, "--out", "/proc/self/r"], 1,
            "/proc/self: cannot create the output files here (No such file or "
            "directory); choose another --out")

    def test_run__output_folder_under_a_file_fails_before_reading_the_input(
        self, tmp_path, capsys
    ):
        (tmp_path / "file").write_text("")
        folder = tmp_path / "file" / "runs"
        assert_one_line_error(
            capsys, ["run", tmp_path / "absent.bed", "-K", "2", "--out",
                     folder / "r"], 1,
            f"{tmp_path / 'file'}: cannot create the output folder {folder} here "
            "(Not a directory); choose another --out")


class TestProjection:
    def test_run__a_K_other_than_the_projected_Ps_names_it_before_any_fit(
        self, plink_fixture, tmp_path, capsys
    ):
        reference = tmp_path / "ref.2.P"  # bare: one row per SNP of the input
        reference.write_text("0.2 0.8\n" * 200)
        assert_one_line_error(
            capsys, ["run", plink_fixture, "-K", "2-3", "--project", reference,
                     "--out", tmp_path / "out" / "x", "-q"], 2,
            f"--project {reference} has 2 columns (components), but -K asks for "
            "K = 3: a projection's K is its P's; give -K 2")
        assert not (tmp_path / "out").exists()  # not even K = 2's files


class TestSupervised:
    def test_run__k_below_the_pop_files_populations_names_it_before_fitting(
            self, plink_fixture, tmp_path, capsys):
        # the supervised fit refused it per K, after the first K's files, and
        # without saying which labels
        (tmp_path / "ref.pop").write_text("A\nB\nC\n" + "-\n" * 17)
        code, _, err = run(["run", plink_fixture, "-K", "2-3", "--supervised",
                            tmp_path / "ref.pop", "--out", tmp_path / "o"], capsys)
        assert code == 1
        assert err.splitlines()[-1] == (
            f"admixspec: error: {tmp_path / 'ref.pop'}: K=2 is smaller than the 3 "
            "reference populations it names")
        assert not list(tmp_path.glob("o.*"))

    @staticmethod
    def _cohort(tmp_path, edit=None):
        """30 x 200; its .pop of 30 lines: ind0, ind4, ... are A, ind2, ind6, ... B."""
        import dataclasses

        genotypes = simulate_balding_nichols(30, 200, 2, seed=1).genotypes
        if edit is not None:
            genotypes = dataclasses.replace(genotypes, dosage=genotypes.dosage.copy())
            edit(genotypes.dosage)
        write_plink(tmp_path / "x", genotypes)
        (tmp_path / "x.pop").write_text("".join(
            ("A" if i % 4 == 0 else "B" if i % 4 == 2 else "-") + "\n"
            for i in range(30)))
        return tmp_path / "x.bed"

    def test_run__keep_takes_the_kept_individuals_lines_of_the_inputs_pop(
            self, tmp_path, capsys):
        # the .pop follows the .fam, as ADMIXTURE's: it was refused ("has 30
        # lines but the genotypes have 15 individuals")
        bed = self._cohort(tmp_path)
        keep = tmp_path / "keep.txt"
        keep.write_text("".join(f"ind{i}\n" for i in range(0, 30, 2)))  # A, B, A, ...
        code, _, err = run(["run", bed, "-K", "2", "--supervised", "--keep", keep,
                            "--out", tmp_path / "o", "-q", "-j", "1"], capsys)
        assert code == 0, err
        Q = read_q(tmp_path / "o.2.Q")
        assert Q.shape == (15, 2)
        np.testing.assert_allclose(Q[0::2, 0], 1, atol=1e-4)  # the A's
        np.testing.assert_allclose(Q[1::2, 1], 1, atol=1e-4)  # the B's

    def test_run__mind_takes_the_lines_of_the_individuals_it_leaves(self, tmp_path,
                                                                   capsys):
        def no_calls(dosage):
            dosage[[0, 3]] = -1  # ind0 (A) and ind3 (-) are removed

        bed = self._cohort(tmp_path, no_calls)
        code, _, err = run(["run", bed, "-K", "2", "--supervised", "--mind", "0.5",
                            "--out", tmp_path / "o", "-q", "-j", "1"], capsys)
        assert code == 0, err
        Q = read_q(tmp_path / "o.2.Q")
        assert Q.shape == (28, 2)
        # ind1, ind2 (B), ind4 (A): B is the first population named
        np.testing.assert_allclose(Q[[1, 2], [0, 1]], 1, atol=1e-4)

    def test_run__a_pop_of_the_kept_individuals_is_still_taken_as_is(self, tmp_path,
                                                                    capsys):
        bed = self._cohort(tmp_path)
        keep = tmp_path / "keep.txt"
        keep.write_text("".join(f"ind{i}\n" for i in range(10)))
        (tmp_path / "kept.pop").write_text("A\n-\nB\n" + "-\n" * 7)
        code, _, err = run(["run", bed, "-K", "2", "--supervised", tmp_path / "kept.pop",
                            "--keep", keep, "--out", tmp_path / "o", "-q", "-j", "1"],
                           capsys)
        assert code == 0, err
        np.testing.assert_allclose(read_q(tmp_path / "o.2.Q")[[0, 2], [0, 1]], 1,
                                   atol=1e-4)

    def test_run__a_pop_of_neither_count_is_the_one_line_error(self, tmp_path, capsys):
        bed = self._cohort(tmp_path)
        keep = tmp_path / "keep.txt"
        keep.write_text("".join(f"ind{i}\n" for i in range(10)))
        (tmp_path / "other.pop").write_text("A\nB\n" + "-\n" * 18)
        assert_one_line_error(
            capsys, ["run", bed, "-K", "2", "--supervised", tmp_path / "other.pop",
                     "--keep", keep, "--out", tmp_path / "o", "-q"], 1,
            f"{tmp_path / 'other.pop'}: has 20 lines but the genotypes have 10 "
            "individuals")


class TestMonomorphicSnps:
    def test_run__console_ends_on_the_files_log_likelihood(self, tmp_path, capsys):
        # the fit logged the log-likelihood of the polymorphic SNPs only, and the
        # console never saw the monomorphic SNPs' term that the files add
        sim = simulate_balding_nichols(20, 200, 2, seed=1)
        sim.genotypes.dosage[:, :10] = 2  # ten SNPs with one observed allele
        write_plink(tmp_path / "mono", sim.genotypes)
        code, out, err = run(["run", tmp_path / "mono.bed", "-K", "2",
                              "--out", tmp_path / "o"], capsys)
        assert code == 0
        console = [line for line in err.splitlines() if "Loglikelihood: " in line][-1]
        final = [line for line in out.splitlines() if line.startswith("Loglikelihood: ")]
        assert console.endswith(final[-1])
        assert final[-1] in (tmp_path / "o.2.log").read_text().splitlines()


class TestUnusableData:
    @pytest.mark.parametrize(("name", "call"), [("same", 2), ("missing", -1)])
    def test_run__no_snp_that_varies_is_an_input_error_naming_the_file(
        self, name, call, tmp_path, capsys
    ):
        def constant(dosage):
            dosage[:] = call

        bed = write_bed(tmp_path / name, constant)
        assert_one_line_error(
            capsys, ["run", bed, "-K", "2", "--out", tmp_path / "out" / "x", "-q"], 1,
            f"{bed}: fewer than 2 usable SNPs left after filtering (0 left: the other "
            "200 have one observed allele, or none)")
        assert not (tmp_path / "out").exists()

    def test_run__individuals_without_a_call_are_named_in_a_warning(self, tmp_path,
                                                                     capsys):
        def no_calls(dosage):
            dosage[[3, 7]] = -1

        bed = write_bed(tmp_path / "uncalled", no_calls)
        code, _, err = run(["run", bed, "-K", "2", "--init", "svd", "--out",
                            tmp_path / "x", "-j", "1", "-q"], capsys)
        assert code == 0
        assert (f"admixspec: {bed}: 2 individual(s) have no called genotype (ind3, "
                "ind7): their Q rows only reflect the fit's start, not data; --mind "
                "(e.g. --mind 0.99) removes them") in err.splitlines()

    def test_run__more_cv_folds_than_observed_entries_is_a_usage_error(self, tmp_path,
                                                                       capsys):
        def few_calls(dosage):
            dosage[:, 2:] = -1  # 2 SNPs x 20 individuals: 40 entries

        bed = write_bed(tmp_path / "few", few_calls)
        assert_one_line_error(
            capsys, ["run", bed, "-K", "2", "--cv", "41", "--out", tmp_path / "x", "-q"],
            2,
            "cv=41 folds (--cv) exceed the 40 observed genotype entries they "
            "partition: use at most 40")
        assert not list(tmp_path.glob("x.*"))

    def test_run__an_empty_cv_fold_is_one_line_and_writes_nothing(self, tmp_path,
                                                                  capsys):
        def few_calls(dosage):
            dosage[:, 2:] = -1

        bed = write_bed(tmp_path / "few", few_calls)
        code, _, err = run(["run", bed, "-K", "2", "--cv", "40", "--out",
                            tmp_path / "x", "-q", "-j", "1"], capsys)
        # folds are drawn by a hash of each entry: some of 40 over 40 are empty
        assert code == 2
        assert err.count("\n") == 1
        assert "holds none of the 40 observed genotype entries" in err
        assert not list(tmp_path.glob("x.*"))


class TestScheduler:
    def test_run__unknown_scheduler_scheme_is_one_line_before_reading(
        self, tmp_path, capsys
    ):
        pytest.importorskip("distributed")
        assert_refused_before_reading(
            capsys, tmp_path, ["--scheduler", "bogus://"],
            "--scheduler bogus://: not a Dask scheduler address (unknown address "
            "scheme 'bogus' (known schemes: ['inproc', 'tcp', 'tls', 'ucx', 'ws', "
            "'wss'])); give tls://host:port (or tcp://host:port)")

    def test_run__malformed_scheduler_file_is_one_line_naming_it(self, tmp_path,
                                                                 capsys):
        pytest.importorskip("distributed")
        scheduler_file = tmp_path / "scheduler.json"
        scheduler_file.write_text("{bad")
        assert_one_line_error(
            capsys, ["run", tmp_path / "absent.bed", "-K", "2", "--scheduler",
                     scheduler_file], 1,
            f"{scheduler_file}: not a Dask scheduler file (--scheduler): not JSON "
            "(Expecting property name enclosed in double quotes: line 1 column 2 "
            "(char 1))")


class TestSimulateShort:
    @pytest.mark.filterwarnings("always::UserWarning")
    def test_simulate__fewer_snps_than_asked_warns_to_raise_the_length(self, tmp_path,
                                                                       capsys):
        pytest.importorskip("msprime")
        code, _, err = run(["simulate", "--out", tmp_path / "s", "-m", "5",
                            "--length", "1000", "--n-snps", "50"], capsys)
        assert code == 0
        n_snps = read_genotypes(f"{tmp_path / 's'}.bed").n_snps
        assert 0 < n_snps < 50
        assert (f"admixspec: UserWarning: the simulated 1000 bp held only {n_snps} "
                f"usable SNPs of the 50 asked for; all {n_snps} are kept: raise the "
                "sequence length (--length) for more") in err.splitlines()

    def test_simulate__no_usable_snp_is_a_usage_error(self, tmp_path, capsys):
        pytest.importorskip("msprime")
        assert_one_line_error(
            capsys, ["simulate", "--out", tmp_path / "s", "-m", "5", "--length", "10"],
            2, "the simulated 10 bp held no usable SNP: raise the sequence length "
            "(--length)")
        assert list(tmp_path.iterdir()) == []


class TestPlotAllOrNone:
    def test_plot__cv_out_without_cv_lines_writes_no_figure(self, plink_fixture,
                                                            tmp_path, capsys):
        prefix = tmp_path / "r"
        assert run(["run", plink_fixture, "-K", "2", "--init", "svd", "--out", prefix,
                    "-q", "-j", "1"], capsys)[0] == 0
        assert_one_line_error(
            capsys, ["plot", prefix, "-o", tmp_path / "p.png", "--cv-out",
                     tmp_path / "cv.png"], 1,
            "no 'CV error (K=...)' line in the logs (run with --cv)")
        assert not list(tmp_path.glob("*.png"))


class TestAdmixtureParity:
    """What a user of ADMIXTURE 1.3 types and reads back."""

    @pytest.mark.parametrize(("words", "message"), [
        # -c's value was read as the input, and the input blamed for not being a K
        (["-c", "0.01"], "ADMIXTURE's -c (the stopping rule of the CV and bootstrap "
         "refits) is not an option here: admixspec chooses that rule itself; -C sets "
         "the point estimate's"),
        (["-m", "em"], "ADMIXTURE's -m/--method is not an option here: maximum "
         "likelihood is always ADMIXTURE's default, block relaxation with "
         "quasi-Newton acceleration (-m block -a qn3)"),
        (["--method=em"], "ADMIXTURE's -m/--method is not an option here: maximum "
         "likelihood is always ADMIXTURE's default, block relaxation with "
         "quasi-Newton acceleration (-m block -a qn3)"),
        (["-a=sqs3"], "ADMIXTURE's -a/--acceleration is not an option here: maximum "
         "likelihood is always ADMIXTURE's default, block relaxation with "
         "quasi-Newton acceleration (-m block -a qn3)"),
        (["-l", "10"], "ADMIXTURE's penalized estimation (-l/--lambda) is not "
         "supported"),
        (["--lambda=10"], "ADMIXTURE's penalized estimation (-l/--lambda) is not "
         "supported"),
        (["-P"], "ADMIXTURE's -P (projection onto PREFIX.K.P.in) is --project PFILE "
         "here: give the reference's .P file, e.g. --project ref.3.P"),
        (["--haploid=male:23,24"], "ADMIXTURE's --haploid is not supported: every "
         "call is read as diploid, a haploid one as homozygous (as PLINK 1 stores "
         "it)"),
        (["--chunks", "4"], "unrecognized arguments: --chunks"),
    ])
    def test_run__options_it_lacks_are_named_before_the_rest_is_read(
        self, words, message, tmp_path, capsys
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(["run", *words, str(tmp_path / "absent.bed"), "3"])
        assert exit_info.value.code == 2
        assert capsys.readouterr().err.splitlines() == [
            f"admixspec run: error: {message} (see 'admixspec run --help')"]

    def test_run__K_before_the_input_says_the_input_comes_first(self, tmp_path,
                                                                capsys):
        # the hint was -K's ("-K takes every value after it"), and no -K was given
        with pytest.raises(SystemExit) as exit_info:
            main(["run", "3", str(tmp_path / "absent.bed")])
        assert exit_info.value.code == 2
        assert capsys.readouterr().err.splitlines() == [
            f"admixspec run: error: argument K: not a K value or range: "
            f"'{tmp_path / 'absent.bed'}'; give the input first, then K, as ADMIXTURE "
            "takes them (see 'admixspec run --help')"]

    @pytest.mark.parametrize(("flag", "what", "attached"), [
        ("--cv", "folds", "--cv=3"), ("-B", "replicates", "-B3")])
    def test_run__K_taken_as_a_count_says_so(self, flag, what, attached, tmp_path,
                                             capsys):
        # ADMIXTURE reads `data.bed --cv 3` as K = 3; here --cv takes the 3, and
        # the error said only that K was missing
        with pytest.raises(SystemExit) as exit_info:
            main(["run", str(tmp_path / "absent.bed"), flag, "3"])
        assert exit_info.value.code == 2
        assert capsys.readouterr().err.splitlines() == [
            "admixspec run: error: the following arguments are required: K (after "
            f"the input, as ADMIXTURE takes it, or -K); '{flag} 3' read 3 as the "
            f"number of {what} ({attached} says so); give K after the input (see "
            "'admixspec run --help')"]

    @pytest.mark.parametrize("subcommand", ["run", "plot", "summary"])
    def test_minus_K_twice_takes_both(self, subcommand):
        # the second -K replaced the first: `-K 2 -K 4` fitted K = 4 alone
        argv = {"run": ["run", "d.bed"], "plot": ["plot", "x", "-o", "x.png"],
                "summary": ["summary", "x"]}[subcommand]
        assert _parse([*argv, "-K", "2", "-K", "4"]).K == [[2], [4]]

    def test_run__pgen_input_names_the_outputs_and_pop_after_its_prefix(
        self, plink_fixture, tmp_path, capsys, monkeypatch
    ):
        # they were sim.pgen.2.Q and sim.pgen.pop, where ADMIXTURE's are sim.2.Q
        # and sim.pop (likewise a .vcz store's)
        pytest.importorskip("pgenlib")
        plink2 = shutil.which("plink2")
        if plink2 is None:
            pytest.skip("plink2 not installed")
        pgen = tmp_path / "pgen" / "sim"
        pgen.parent.mkdir()
        subprocess.run([plink2, "--bfile", str(plink_fixture), "--make-pgen", "--out",
                        str(pgen), "--threads", "1"], check=True, capture_output=True)
        pgen.with_suffix(".pop").write_text("A\n" * 5 + "B\n" * 5 + "-\n" * 10)
        monkeypatch.chdir(tmp_path)
        code, _, err = run(["run", pgen.with_suffix(".pgen"), "2", "--supervised",
                            "-q", "-j", "1"], capsys)
        assert (code, err) == (0, "")
        assert sorted(path.name for path in tmp_path.glob("sim.2.*")) == [
            "sim.2.P", "sim.2.P.snps", "sim.2.Q", "sim.2.json", "sim.2.log"]

    def test_run__K_1_writes_Q_as_1_as_admixture_does(self, plink_fixture, tmp_path,
                                                        capsys):
        # ADMIXTURE's hapmap3.1.Q is 1.000000 on every row; ours was 0.999990
        code, _, _ = run(["run", plink_fixture, "1", "--out", tmp_path / "x", "-q",
                          "-j", "1"], capsys)
        assert code == 0
        assert set((tmp_path / "x.1.Q").read_text().splitlines()) == {"1.000000"}

    def test_run__K_the_individuals_cannot_take_names_the_input(self, plink_fixture,
                                                                  tmp_path, capsys):
        assert_one_line_error(
            capsys, ["run", plink_fixture, "20", "--out", tmp_path / "x", "-q"], 2,
            f"{plink_fixture}: K must be smaller than the number of individuals "
            "(20), got 20")

    def test_summary__log_likelihood_keeps_the_logs_decimals(self, tmp_path, capsys):
        # ADMIXTURE's HapMap3 K=3 stdout log, saved beside its Q as PREFIX.K.log:
        # pandas printed -3.799887e+06 and the TSV -3799887.172
        (tmp_path / "h.3.Q").write_text("0.2 0.3 0.5\n" * 4)
        (tmp_path / "h.3.log").write_text(
            "Loglikelihood: -3799887.171935\nCV error (K=3): 0.47835\n")
        code, out, _ = run(["summary", tmp_path / "h"], capsys)
        assert code == 0
        assert out.splitlines()[1].split() == [
            "3", "-", "-3799887.171935", "0.47835", "-", "True"]
        code, _, _ = run(["summary", tmp_path / "h", "-o", tmp_path / "s.tsv"], capsys)
        assert code == 0
        assert (tmp_path / "s.tsv").read_text().splitlines()[1].split("\t") == [
            "3", "", "-3799887.171935", "0.47835", "", "True"]
