"""Bug hunt: supervised mode, the reference side of projection, simulate, workflow."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from admixspec import simulate_balding_nichols
from admixspec.cli import main
from admixspec.core.exceptions import InputError, UsageError
from admixspec.io import read_pop, read_q, write_plink
from admixspec.simulate import simulate_admixture

ROOT = Path(__file__).resolve().parent.parent


def run(argv, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def supervised_fixture(tmp_path) -> Path:
    """60 individuals of 2 populations, the first 30 unadmixed, as PLINK."""
    sim = simulate_balding_nichols(60, 1500, 2, fst=0.2, unadmixed_fraction=0.5,
                                   seed=2)
    write_plink(tmp_path / "sim", sim.genotypes)
    np.save(tmp_path / "truth.npy", sim.Q)
    (tmp_path / "populations.txt").write_text("\n".join(sim.populations) + "\n")
    return tmp_path / "sim"


class TestPopLabels:
    @pytest.mark.parametrize("word", ["NA", ".", "nan", "None"])
    def test_read_pop__a_label_the_fit_reads_as_unknown_is_a_one_line_error(
            self, tmp_path, word):
        # 'NA' (North Africa, Native American...) named a population in the .pop,
        # but the supervised fit read it as unknown: its reference individuals
        # were silently estimated, K lost a supervised component and the
        # columns of Q moved
        path = tmp_path / "x.pop"
        path.write_text(f"CEU\n{word}\n-\n{word}\n")
        with pytest.raises(InputError) as error:
            read_pop(path, n_individuals=4)
        assert str(error.value) == (
            f"{path}:2: {word!r} on 2 line(s) would make those individuals of unknown "
            "ancestry, not a population: mark unknown individuals with '-', and give "
            "the population another name")

    def test_read_pop__refuses_exactly_the_fits_unknown_words_beyond_dash(self):
        from admixspec.io.admixture import _NAMELESS_WORDS
        from admixspec.ml.project import UNKNOWN_LABELS

        assert _NAMELESS_WORDS == UNKNOWN_LABELS - {"-", ""}

    def test_run_supervised__population_named_NA_is_refused_not_dropped(
            self, supervised_fixture, capsys):
        truth = (supervised_fixture.parent / "populations.txt").read_text().split()
        labels = ["NA" if p == "pop1" else p for p in truth[:30]] + ["-"] * 30
        pop = supervised_fixture.parent / "sim.pop"
        pop.write_text("\n".join(labels) + "\n")
        out = supervised_fixture.parent / "out" / "x"
        code, _, err = run(["run", f"{supervised_fixture}.bed", "-K", "2",
                            "--supervised", "--out", out, "-q"], capsys)
        assert code == 1
        first = labels.index("NA") + 1
        assert err.splitlines() == [
            f"admixspec: error: {pop}:{first}: 'NA' on 15 line(s) would make those "
            "individuals of unknown ancestry, not a population: mark unknown "
            "individuals with '-', and give the population another name"]
        assert not Path(f"{out}.2.Q").exists()

    def test_run_supervised__column_k_is_the_kth_population_to_appear(
            self, supervised_fixture, capsys):
        truth_q = np.load(supervised_fixture.parent / "truth.npy")
        truth = (supervised_fixture.parent / "populations.txt").read_text().split()
        names = {"pop1": "ZZZ", "pop2": "AAA"}  # first appearance is not sorted order
        labels = [names[p] for p in truth[:30]] + ["-"] * 30
        assert labels[0] == "ZZZ"
        (supervised_fixture.parent / "sim.pop").write_text("\n".join(labels) + "\n")
        out = supervised_fixture.parent / "x"
        code, _, _ = run(["run", f"{supervised_fixture}.bed", "-K", "2",
                          "--supervised", "--out", out, "-q"], capsys)
        assert code == 0
        Q = read_q(f"{out}.2.Q")
        assert np.abs(Q[30:] - truth_q[30:]).mean() < 0.05
        log = Path(f"{out}.2.log").read_text()
        assert "references ['ZZZ', 'AAA']" in log


class TestSimulateArguments:
    @pytest.mark.parametrize(("argument", "value"), [
        ("alpha", np.inf), ("split_time", np.inf), ("population_size", np.inf),
        ("mutation_rate", np.inf), ("recombination_rate", np.inf),
        ("sequence_length", np.inf), ("block_rate", np.inf),
        ("bp_per_morgan", np.inf),
    ])
    def test_simulate_admixture__infinity_is_a_usage_error_naming_the_argument(
            self, argument, value):
        # --alpha inf, --ne inf, --length inf... were tracebacks from numpy or
        # msprime (NaN probabilities, infinite waiting time, int(inf))
        small = {"n_haplotypes": 4, "sequence_length": 1e5, argument: value}
        with pytest.raises(UsageError, match=f"^{argument} must be finite, got inf$"):
            simulate_admixture(5, 2, **small)

    def test_simulate_balding_nichols__infinite_alpha_is_a_usage_error(self):
        with pytest.raises(UsageError, match="^alpha must be finite, got inf$"):
            simulate_balding_nichols(5, 10, 2, alpha=np.inf)

    def test_simulate_admixture__blocks_under_1_bp_are_a_usage_error(self):
        # --bp-per-morgan 1e-300 was numpy's "Maximum allowed dimension
        # exceeded"; a little above, an out-of-memory of ~length blocks
        with pytest.raises(UsageError, match="shorter than 1 bp on average"):
            simulate_admixture(5, 2, n_haplotypes=4, sequence_length=1e5,
                               bp_per_morgan=10, block_rate=20)

    @pytest.mark.parametrize("proportions", [
        [[0, 0], [1, 0]], [[np.nan, 1], [1, 0]], [[np.inf, 1], [1, 0]],
    ])
    def test_simulate_admixture__unusable_proportions_are_a_usage_error(
            self, proportions):
        # a row of zeros, NaN or infinity made NaN draw probabilities: numpy's
        # "Probabilities contain NaN" from inside the mosaics
        with pytest.raises(UsageError, match="^proportions must be a non-negative"):
            simulate_admixture(K=2, proportions=proportions, n_haplotypes=4,
                               sequence_length=1e5, seed=1)

    def test_cli_simulate__one_admixed_individual_is_refused_for_what_it_is(
            self, tmp_path, capsys):
        # no SNP is polymorphic among one individual, so none was kept, and the
        # error said to raise --length, which never helps
        code, _, err = run(["simulate", "--out", tmp_path / "x", "-m", "1",
                            "--n-haplotypes", "4", "--length", "1e5"], capsys)
        assert code == 2
        assert err.splitlines() == [
            "admixspec: error: one admixed individual has no SNP polymorphic among "
            "the admixed individuals, the SNPs kept: simulate at least 2 (n_admixed, "
            "--n-admixed)"]

    @pytest.mark.parametrize("flag", ["--alpha", "--ne", "--length"])
    def test_cli_simulate__infinity_is_one_line(self, flag, tmp_path, capsys):
        # the last of two --length wins
        with pytest.raises(SystemExit) as exit_info:  # the argument parser's exit
            run(["simulate", "--out", tmp_path / "x", "--n-haplotypes", "4", "-m", "5",
                 "--length", "1e5", flag, "inf"], capsys)
        err = capsys.readouterr().err
        assert exit_info.value.code == 2
        assert len(err.splitlines()) == 1
        assert re.match(rf"admixspec simulate: error: argument {flag}: must be finite, "
                        r"got inf \(see 'admixspec simulate --help'\)$", err)
        assert not list(tmp_path.iterdir())


    @pytest.mark.parametrize(("argv", "message"), [
        (["--fst", "0.3"],
         "--fst (--model balding-nichols only) would be ignored by --model msprime: "
         "add --model balding-nichols, or leave them out"),
        (["--model", "balding-nichols", "--ne", "5000", "--length", "1e6"],
         "--ne, --length (--model msprime only) would be ignored by --model "
         "balding-nichols: add --model msprime, or leave them out"),
    ])
    def test_cli_simulate__a_flag_of_the_other_model_is_refused_not_ignored(
            self, argv, message, tmp_path, capsys):
        # `simulate --fst 0.3` ran the (default) coalescent model, which has no
        # F_ST: the data had nothing of the F_ST asked for, and nothing said so
        code, _, err = run(["simulate", "--out", tmp_path / "x", "-m", "5", *argv],
                           capsys)
        assert code == 2
        assert err.splitlines() == [f"admixspec: error: {message}"]
        assert not list(tmp_path.iterdir())


class TestReferenceSample:
    def test_reference_sample__fewer_than_64_snps_over_budget_takes_them_all(
            self, tmp_path):
        # a budget below 64 SNPs for the reference, on a file of fewer than 64,
        # asked numpy for 64 of them without replacement: a traceback
        from admixspec.fit.reference import reference_sample
        from admixspec.io.reader import open_streamed

        sim = simulate_balding_nichols(200, 50, 2, seed=1)
        write_plink(tmp_path / "x", sim.genotypes)
        genotypes = open_streamed(tmp_path / "x.bed", memory_bytes=2000)
        n_snps = genotypes.chunks.n_snps  # the SNPs kept (polymorphic)
        assert 2000 / 2 // 150 < n_snps < 64
        rows, snps, G = reference_sample(genotypes, 150, seed=1)
        assert len(rows) == 150
        assert snps.tolist() == list(range(n_snps))
        assert G.shape == (150, n_snps)


class TestWorkflow:
    @staticmethod
    def _dry_run(tmp_path, K: str) -> str:
        exe = shutil.which("snakemake", path=f"{Path(sys.executable).parent}"
                                              f"{os.pathsep}{os.environ['PATH']}")
        if exe is None:
            pytest.skip("snakemake is not installed")
        config = tmp_path / "config.yaml"
        config.write_text(
            f"input: {ROOT / 'data' / 'example.bed'}\noutdir: {tmp_path / 'res'}\n"
            f"name: ex\nK: {K}\ncv: 0\nseed: 1\nthreads: 1\nfilters: ''\nextra: ''\n"
            "labels: ''\npopulation_order: []\nplot_format: png\n")
        result = subprocess.run(
            [exe, "-s", str(ROOT / "workflows" / "Snakefile"), "--cores", "1",
             "--configfile", str(config), "--directory", str(tmp_path), "-n", "-p"],
            capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        return result.stdout + result.stderr

    def test_run_rule__declares_every_file_admixspec_run_writes(self, tmp_path,
                                                                  capsys):
        # PREFIX.K.P.snps was written but not declared: a downstream rule's
        # `--project PREFIX.K.P` could not name it as an input
        plan = self._dry_run(tmp_path, "[2]")
        declared = {Path(p.strip()).name for line in plan.splitlines()
                    if line.strip().startswith("output:") and ".2.Q" in line
                    for p in line.split(":", 1)[1].split(",")}
        out = tmp_path / "direct" / "ex"
        code, _, _ = run(["run", ROOT / "data" / "example.bed", "-K", "2", "--out", out,
                          "--seed", "1", "-q"], capsys)
        assert code == 0
        written = {p.name for p in out.parent.iterdir()}
        assert written == {"ex.2.Q", "ex.2.P", "ex.2.P.snps", "ex.2.log", "ex.2.json"}
        assert written <= declared

    def test_config__one_K_without_brackets_is_that_K(self, tmp_path):
        # `K: 3` stopped the Snakefile with Python's "'int' object is not iterable"
        plan = self._dry_run(tmp_path, "3")
        assert "-K 3 --out" in plan


class TestStreamedReferenceLog:
    def test_fit_streamed__reference_loglikelihood_names_the_snps_it_is_on(
            self, tmp_path):
        # "Reference loglikelihood: X" was the in-memory fit's on a sample of
        # the SNPs, next to everyone's on all of them, and said nothing of it
        from admixspec import fit_admixture
        from admixspec.io.reader import open_streamed

        sim = simulate_balding_nichols(150, 1000, 2, fst=0.2, seed=3)
        write_plink(tmp_path / "x", sim.genotypes)
        genotypes = open_streamed(tmp_path / "x.bed", memory_bytes=50_000)
        result = fit_admixture(genotypes, 2, seed=1, reference_size=100)
        fitted = result.diagnostics["streamed"]["reference_snps"]
        assert fitted < genotypes.chunks.n_snps
        lines = [line for line in result.log_lines
                 if line.startswith(("Reference loglikelihood", "Loglikelihood"))]
        loglik = result.diagnostics["streamed"]["reference_loglik_subset"]
        assert lines == [
            f"Reference loglikelihood (on the {fitted} SNPs fitted in memory): "
            f"{loglik:.6f}",
            f"Loglikelihood: {result.loglik:.6f}"]
