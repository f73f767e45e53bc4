"""The command line's flags, the library's logging, ``run``'s optional outputs and
``simulate``'s files, on odd-but-legal and illegal inputs.

Each test states a property that a defect found by hand once broke.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from admixspec import read_q, simulate_balding_nichols
from admixspec.cli import main, parse_arguments
from admixspec.io import write_plink, write_simulation
from admixspec.io.results import earlier_outputs


def _run(argv, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _usage_error(argv, capsys) -> str:
    """argparse's one-line usage error (exit 2) for ``argv``."""
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in argv])
    assert exit_info.value.code == 2
    return capsys.readouterr().err.strip()


@pytest.fixture
def bed_fixture(tmp_path) -> Path:
    """A 20 x 200 PLINK fileset, K = 2."""
    write_plink(tmp_path / "x", simulate_balding_nichols(20, 200, 2, seed=1).genotypes)
    return tmp_path / "x.bed"


class TestNumericFlags:
    @pytest.mark.parametrize("flag", ["--tol", "-C"])
    @pytest.mark.parametrize("value", ["inf", "1e400"])
    def test_run__an_infinite_tolerance_is_a_usage_error(self, flag, value, tmp_path,
                                                          capsys):
        # -C inf stopped the fit after its first iteration, silently
        err = _usage_error(["run", tmp_path / "missing.bed", "2", flag, value], capsys)
        assert err == ("admixspec run: error: argument -C/--tol: must be finite, got "
                       "inf (see 'admixspec run --help')")

    @pytest.mark.parametrize(("argv", "flag"), [
        (["plot", "r", "-o", "r.png", "--width", "inf"], "--width"),
        (["plot", "r", "-o", "r.png", "--panel-height", "inf"], "--panel-height"),
        (["simulate", "--out", "s", "--alpha", "inf"], "--alpha"),
        (["simulate", "--out", "s", "--length", "inf"], "--length"),
    ])
    def test_other_positive_number_flags__refuse_infinity_too(self, argv, flag,
                                                               capsys):
        err = _usage_error(argv, capsys)
        assert f"argument {flag}: must be finite, got inf" in err


class TestLibraryLogging:
    _PROBE = ("import logging, admixspec\n"
              "{configure}"
              "logging.getLogger('admixspec.io').warning('probe warning')\n")

    def _stderr(self, configure: str = "") -> str:
        done = subprocess.run(
            [sys.executable, "-c", self._PROBE.format(configure=configure)],
            capture_output=True, text=True, timeout=120, check=True)
        return done.stderr

    def test_import__an_unconfigured_application_gets_no_stray_log_lines(self):
        # without a NullHandler, logging.lastResort printed the library's
        # warnings as bare lines on the application's stderr
        assert self._stderr() == ""

    def test_import__a_configured_application_still_sees_the_warnings(self):
        err = self._stderr("logging.basicConfig(format='%(name)s %(message)s')\n")
        assert err == "admixspec.io probe warning\n"


    def test_main__leaves_a_callers_captured_warnings_captured(self, tmp_path,
                                                              capsys):
        # main() ended with logging.captureWarnings(False), whatever the caller had
        import logging
        import warnings

        logging.captureWarnings(True)
        try:
            capturing = warnings.showwarning
            assert main(["summary", str(tmp_path / "none")]) == 1
            assert warnings.showwarning is capturing
        finally:
            logging.captureWarnings(False)
        capsys.readouterr()


class TestKAfterOptions:
    @pytest.mark.parametrize(("words", "attribute", "value"), [
        (["-B4", "3"], "bootstrap", 4),  # ADMIXTURE's spelling
        (["-B", "4", "3"], "bootstrap", 4),
        (["--cv=5", "3"], "cv", 5),
        (["-j4", "3"], "threads", 4),
        (["-s", "42", "3"], "seed", 42),
        (["--bootstrap", "4", "3", "--supervised"], "bootstrap", 4),
    ])
    def test_run__K_after_an_option_is_read_as_K(self, words, attribute, value):
        # 'run x.bed -B4 3' was refused: "unrecognized arguments: 3"
        args = parse_arguments(["run", "x.bed", *words])
        assert args.input == "x.bed"
        assert args.K_after_input == [[3]]
        assert getattr(args, attribute) == value

    def test_run__a_bare_supervised_after_the_input_leaves_K_to_K(self, tmp_path,
                                                                 monkeypatch):
        # ADMIXTURE's --supervised takes no value: 'run x.bed --supervised 3'
        # read 3 as the POPFILE and then asked for K
        monkeypatch.chdir(tmp_path)
        args = parse_arguments(["run", "x.bed", "--supervised", "3"])
        assert (args.supervised, args.K_after_input) == ("", [[3]])
        (tmp_path / "3").write_text("A\n")  # a population file named 3 is one
        args = parse_arguments(["run", "x.bed", "--supervised", "3", "2"])
        assert (args.supervised, args.K_after_input) == ("3", [[2]])

    def test_plot__Q_files_after_options_are_inputs(self):
        # 'plot r.2.Q -o f.png r.3.Q' was "unrecognized arguments: r.3.Q"
        args = parse_arguments(["plot", "r.2.Q", "-o", "f.png", "r.3.Q", "--no-align",
                                "r.4.Q"])
        assert args.inputs == ["r.2.Q", "r.3.Q", "r.4.Q"]
        assert (args.out, args.no_align) == ("f.png", True)

    def test_run__K_after_options_writes_that_Ks_files(self, bed_fixture, tmp_path,
                                                       capsys):
        code, out, err = _run(["run", bed_fixture, "-j1", "-s", "7", "2", "--init",
                               "svd", "--out", tmp_path / "o", "-q"], capsys)
        assert code == 0, err
        assert out.startswith("Loglikelihood: ")
        assert read_q(tmp_path / "o.2.Q").shape == (20, 2)

    def test_run__without_an_input_only_the_input_is_asked_for_when_K_is_given(
            self, capsys):
        # 'run -K 3' said "the following arguments are required: input, K"
        assert _usage_error(["run", "-K", "3"], capsys) == (
            "admixspec run: error: the following arguments are required: input (see "
            "'admixspec run --help')")

    def test_run__a_count_flag_that_took_K_still_says_so(self, capsys):
        err = _usage_error(["run", "x.bed", "-B", "3"], capsys)
        assert "'-B 3' read 3 as the number of replicates (-B3 says so)" in err


class TestEarlierOutputs:
    #: What a run without --runs, -B or --reference-size must leave: other
    #: names, another K, another prefix
    _OTHERS = ("o.2.mode2.Q.bak", "o.2.modeX.Q", "o.2.mode02.Q", "o.3.mode2.Q",
               "o.3.Q_se", "oo.2.mode2.Q", "xo.2.modes.tsv", "o.2.mode.Q")
    _STALE = ("o.2.modes.tsv", "o.2.mode2.Q", "o.2.mode9.Q", "o.2.mode12.Q",
              "o.2.Q_se", "o.2.Q_bias", "o.2.ref")

    def test_run__removes_the_optional_files_an_earlier_run_of_K_left(
            self, bed_fixture, tmp_path, capsys):
        # 'run --runs 8' then 'run --runs 3' (or no --runs): the earlier
        # mode<M>.Q files, Q_se, Q_bias and ref stayed beside the new Q
        for name in self._STALE + self._OTHERS:
            (tmp_path / name).write_text("0.5 0.5\n")
        code, _, err = _run(["run", bed_fixture, "2", "--init", "svd", "-j1",
                             "--out", tmp_path / "o"], capsys)
        assert code == 0, err
        left = {path.name for path in tmp_path.iterdir()}
        assert not left & set(self._STALE)
        assert set(self._OTHERS) <= left
        assert {"o.2.Q", "o.2.P", "o.2.log", "o.2.json"} <= left
        assert "admixspec: K=2: removed o.2.mode12.Q, left by an earlier run" in (
            err.splitlines())

    def test_run__keeps_the_optional_files_it_wrote(self, bed_fixture, tmp_path,
                                                    capsys):
        (tmp_path / "o.2.mode40.Q").write_text("0.5 0.5\n")
        code, _, err = _run(["run", bed_fixture, "2", "--runs", "2", "-j1", "-q",
                             "--out", tmp_path / "o"], capsys)
        assert code == 0, err
        assert (tmp_path / "o.2.modes.tsv").is_file()
        table = (tmp_path / "o.2.modes.tsv").read_text().splitlines()[1:]
        q_files = [line.split("\t")[-1] for line in table]
        assert all((tmp_path / name).is_file() for name in q_files)
        assert not (tmp_path / "o.2.mode40.Q").exists()

    def test_earlier_outputs__a_prefix_is_a_name_not_a_pattern(self, tmp_path):
        for name in ("r[1].2.mode2.Q", "r1.2.mode2.Q", "r[1].2.Q_se"):
            (tmp_path / name).write_text("")
        assert [p.name for p in earlier_outputs(tmp_path / "r[1]", 2, [])] == [
            "r[1].2.Q_se", "r[1].2.mode2.Q"]
        assert earlier_outputs(tmp_path / "r[1]", 2, [tmp_path / "r[1].2.Q_se",
                                                      tmp_path / "r[1].2.mode2.Q"]) == []


class TestSimulationFiles:
    _NAMES = ("sim.vcf.gz", "sim.vcf.gz.tbi", "sim.bed", "sim.bim", "sim.fam",
              "sim.truth.Q", "sim.truth.P", "sim.labels.tsv", "sim.params.json")

    @staticmethod
    def _no_space(path, obj):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    def test_write_simulation__a_failure_part_way_writes_no_file(self, tmp_path,
                                                                 monkeypatch):
        # the genotype files and the truth were in place before params.json failed
        monkeypatch.setattr("admixspec.io.simulation.write_json", self._no_space)
        sim = simulate_balding_nichols(10, 50, 2, seed=1)
        with pytest.raises(OSError, match="No space left"):
            write_simulation(sim, tmp_path / "sim")
        assert list(tmp_path.iterdir()) == []

    def test_write_simulation__a_failure_leaves_an_earlier_set_whole(self, tmp_path,
                                                                     monkeypatch):
        # a new .bed beside the old truth.Q would be a data set with a wrong truth
        write_simulation(simulate_balding_nichols(10, 50, 2, seed=1), tmp_path / "sim")
        before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
        monkeypatch.setattr("admixspec.io.simulation.write_json", self._no_space)
        with pytest.raises(OSError):
            write_simulation(simulate_balding_nichols(10, 50, 2, seed=2),
                             tmp_path / "sim")
        assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before

    def test_write_simulation__a_failed_rename_removes_the_files_moved(
            self, tmp_path, monkeypatch):
        replace = os.replace
        into_folder = []

        def third_fails(source, target):
            if Path(target).parent == tmp_path:
                into_folder.append(target)
                if len(into_folder) == 3:
                    raise OSError(errno.EIO, "Input/output error")
            return replace(source, target)

        monkeypatch.setattr(os, "replace", third_fails)
        with pytest.raises(OSError, match="Input/output error"):
            write_simulation(simulate_balding_nichols(10, 50, 2, seed=1),
                             tmp_path / "sim")
        assert list(tmp_path.iterdir()) == []

    def test_simulate__a_failed_write_is_one_line_naming_the_file(self, tmp_path,
                                                                  monkeypatch, capsys):
        # not the hidden folder the files are staged in
        monkeypatch.setattr("admixspec.io.simulation.write_json", self._no_space)
        code, _, err = _run(["simulate", "--model", "balding-nichols", "-m", "10",
                             "--n-snps", "50", "--out", tmp_path / "sim", "-q"],
                            capsys)
        assert code == 1
        assert err.splitlines() == [
            f"admixspec: error: {tmp_path / 'sim.params.json'}: No space left on device"]
        assert list(tmp_path.iterdir()) == []

    def test_simulate__writes_exactly_the_files_its_params_json_lists(self, tmp_path,
                                                                     capsys):
        code, _, err = _run(["simulate", "--model", "balding-nichols", "-m", "10",
                             "--n-snps", "50", "--out", tmp_path / "sim"], capsys)
        assert code == 0, err
        listed = json.loads((tmp_path / "sim.params.json").read_text())["files"]
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(listed)
        assert set(listed) >= set(self._NAMES) - {"sim.vcf.gz.tbi"}


class TestFlagsRefusedBeforeReading:
    @pytest.mark.parametrize(("flags", "message"), [
        (["--supervised", "--runs", "2"], "runs > 1 (--runs) are for unsupervised "
         "fits: a supervised fit does not depend on its start"),
        (["--project", "ref.2.P", "--runs", "3"], "runs > 1 (--runs) are for "
         "unsupervised fits: a projection fit does not depend on its start"),
        (["--supervised", "--reference-size", "10"], "a reference (--reference-size) "
         "cannot be combined with projection or supervised fits (--project, "
         "--supervised), which fit everyone"),
    ])
    def test_run__flags_that_exclude_each_other_are_refused_before_the_input_is_read(
            self, flags, message, tmp_path, capsys):
        # were refused by fit_admixture, after reading the input and the K hint
        # (5 s on the 1000 Genomes reference): here the input does not even exist
        code, _, err = _run(["run", tmp_path / "missing.bed", "2", *flags, "--out",
                             tmp_path / "o"], capsys)
        assert code == 2
        assert err.splitlines() == [f"admixspec: error: {message}"]


def test_write_simulation__without_tabix_an_earlier_vcfs_index_is_removed(
        tmp_path, monkeypatch):
    # the new sim.vcf.gz kept the earlier data set's sim.vcf.gz.tbi beside it
    import shutil

    write_simulation(simulate_balding_nichols(10, 50, 2, seed=1), tmp_path / "sim")
    if not (tmp_path / "sim.vcf.gz.tbi").exists():
        pytest.skip("tabix is not installed")
    which = shutil.which
    monkeypatch.setattr(shutil, "which",
                        lambda name, *a, **k: None if name == "tabix" else which(name))
    written = write_simulation(simulate_balding_nichols(10, 60, 2, seed=2),
                               tmp_path / "sim")
    assert not (tmp_path / "sim.vcf.gz.tbi").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in written)
