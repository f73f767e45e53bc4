"""``admixspec run --memory``: a .bed over the budget is fitted streamed from disk."""

import json
from pathlib import Path

import numpy as np
import pytest

from admixspec import simulate_balding_nichols
from admixspec.cli import main
from admixspec.core.metrics import q_error
from admixspec.io import read_q, write_plink
from admixspec.io.reader import memory_budget


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    """300 x 6,000 (1.7 MiB of int8): streamed under --memory 1 and 2."""
    sim = simulate_balding_nichols(300, 6000, 3, fst=0.1, alpha=0.5, missing_rate=0.01,
                                   seed=3)
    folder = tmp_path_factory.mktemp("stream")
    write_plink(folder / "toy", sim.genotypes)
    return folder, sim


def _run(folder, name, *flags):
    out = folder / name
    assert main(["run", str(folder / "toy.bed"), "-K", "3", "--out", str(out), "-q",
                 "-j", "1", *map(str, flags)]) == 0
    return read_q(f"{out}.3.Q"), json.loads(Path(f"{out}.3.json").read_text()), \
        Path(f"{out}.3.log").read_text()


def test_streamed_fit_reaches_the_in_memory_optimum(cohort):
    folder, sim = cohort
    Q_mem, mem, _ = _run(folder, "mem")
    Q_str, streamed, log = _run(folder, "streamed", "--memory", 1)
    # 1 MiB: the reference's moments use a SNP sample, ML then runs on every SNP
    info = streamed["diagnostics"]["streamed"]
    assert info["reference_snps"] < 6000 and info["chunks"] > 1
    assert "Streamed: 300 individuals x 6000 SNPs" in log
    assert streamed["path"] == mem["path"] + "+streamed"
    assert streamed["loglik"] == pytest.approx(mem["loglik"], rel=1e-7)
    assert q_error(Q_mem, Q_str) < 1e-3  # components may come in another order
    assert q_error(sim.Q, Q_str) < 1.05 * q_error(sim.Q, Q_mem)


def test_streamed_projection_equals_the_in_memory_one(cohort):
    folder, _ = cohort
    # 2 MiB holds the 100-individual reference on every SNP, not the cohort
    Q_mem, mem, _ = _run(folder, "mem_ref", "--reference-size", 100)
    Q_str, streamed, _ = _run(folder, "str_ref", "--reference-size", 100, "--memory", 2)
    assert streamed["diagnostics"]["streamed"]["reference_snps"] == 6000
    assert streamed["path"] == mem["path"]
    P_mem = np.loadtxt(folder / "mem_ref.3.P")
    np.testing.assert_array_equal(np.loadtxt(folder / "str_ref.3.P"), P_mem)
    # projected in chunks of individuals, read from disk, as in memory
    assert np.abs(Q_str - Q_mem).max() <= 2e-6
    # the reference's IDs, as an in-memory run writes them
    assert ((folder / "str_ref.3.ref").read_text()
            == (folder / "mem_ref.3.ref").read_text())
    info = streamed["diagnostics"]["streamed"]
    assert info["projection_chunk_size"] == 2**20 // 6000  # half the budget's worth
    assert len(info["projection_iterations"]) == 2  # 200 others in two chunks
    assert streamed["loglik"] == pytest.approx(mem["loglik"], rel=1e-7)


def test_streamed_ml__no_least_squares_pass_over_the_file(cohort, monkeypatch):
    # the EM passes on P start from the reference fit's P, the projection from
    # uniform proportions: no least-squares start, which would decode the file
    # on the host (on a GPU the passes themselves run on the device)
    from admixspec.ml import project as project_module

    calls = []

    def counting(function):
        def counted(genotypes, *args):
            calls.append((function.__name__, isinstance(genotypes, np.ndarray)))
            return function(genotypes, *args)
        return counted

    for name in ("least_squares_p", "least_squares_q"):
        original = getattr(project_module, name)
        monkeypatch.setattr(project_module, name, counting(original))
    folder, _ = cohort
    _, streamed, _ = _run(folder, "no_ls", "--memory", 1)
    assert streamed["path"].startswith("ml-svd") and "+streamed" in streamed["path"]
    assert not [call for call in calls if not call[1]], calls


def test_a_budget_that_holds_the_matrix_reads_it(cohort):
    folder, _ = cohort
    _, record, log = _run(folder, "fits", "--memory", 100)
    assert "streamed" not in record["diagnostics"] and "Streamed" not in log


@pytest.mark.parametrize("flags", [["--cv", 2], ["--indep-pairwise", 50, 5, 0.2]])
def test_what_needs_memory_is_refused_in_one_line(cohort, flags, capsys):
    folder, _ = cohort
    code = main(["run", str(folder / "toy.bed"), "-K", "3", "--out",
                 str(folder / "refused"), "-q", "--memory", "1",
                 *map(str, flags)])
    assert code != 0
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "memory" in error[0]


def test_without_memory_a_bed_beyond_a_quarter_of_the_machine_is_streamed(cohort,
                                                                        monkeypatch):
    # PLINK's default --memory is half of physical memory: on a machine of
    # 2 MiB, the 1.7 MiB matrix exceeds half of the 1 MiB default budget
    monkeypatch.setattr("admixspec.io.reader._physical_memory", lambda: 2 * 2**20)
    folder, _ = cohort
    _, record, log = _run(folder, "default_budget")
    assert record["diagnostics"]["streamed"]["chunks"] > 1
    assert "Streamed: 300 individuals x 6000 SNPs" in log
    assert memory_budget(None) == (2**20, "the default --memory 1 MiB, half of this "
                                           "machine's memory")


@pytest.mark.parametrize("flags", [[], ["--memory", "1"]])
def test_a_missing_bim_is_the_readers_one_line_error(tmp_path, flags, capsys):
    sim = simulate_balding_nichols(20, 100, 2, seed=1)
    write_plink(tmp_path / "toy", sim.genotypes)
    (tmp_path / "toy.bim").unlink()
    code = main(["run", str(tmp_path / "toy.bed"), "-K", "2", "--out",
                 str(tmp_path / "x"), *flags])
    assert code != 0
    assert capsys.readouterr().err.strip().splitlines() == [
        f"admixspec: error: {tmp_path / 'toy.bim'}: file not found (the .bim file of "
        "the PLINK fileset)"]


def test_individuals_without_a_call_are_named_when_streamed_too(tmp_path, capsys):
    # the in-memory run warned of them; the streamed run skipped the check, though
    # its filters had counted every individual's calls
    import dataclasses

    genotypes = simulate_balding_nichols(100, 6000, 2, seed=1).genotypes
    dosage = genotypes.dosage.copy()
    dosage[[3, 7]] = -1
    write_plink(tmp_path / "uncalled", dataclasses.replace(genotypes, dosage=dosage))
    bed = tmp_path / "uncalled.bed"
    warning = (f"admixspec: {bed}: 2 individual(s) have no called genotype (ind3, "
               "ind7): their Q rows only reflect the fit's start, not data; --mind "
               "(e.g. --mind 0.99) removes them")
    for name, flags in (("mem", []), ("streamed", ["--memory", "1"])):
        assert main(["run", str(bed), "-K", "2", "--out", str(tmp_path / name), "-q",
                     "-j", "1", *flags]) == 0
        assert warning in capsys.readouterr().err.splitlines(), name
    record = json.loads((tmp_path / "streamed.2.json").read_text())
    assert "streamed" in record["diagnostics"]


@pytest.mark.parametrize(("flags", "reference"), [
    ([], "reference all 300 individuals, fitted in memory"),
    (["--reference-size", 100], "reference 100 of 300 individuals (random), fitted"),
])
def test_streamed_log_says_whether_the_reference_is_everyone(cohort, flags, reference):
    # it said "reference 300 individuals (random)" of the whole cohort
    folder, _ = cohort
    _, _, log = _run(folder, "who", "--memory", 2, *flags)
    streamed = [line for line in log.splitlines() if line.startswith("Streamed: ")]
    assert len(streamed) == 1 and reference in streamed[0], streamed


@pytest.fixture(scope="module")
def over_half_fixture(tmp_path_factory):
    """100 x 6,000 on chromosome 1, positions 1-6000: 0.57 MiB, over half of 1 MiB."""
    folder = tmp_path_factory.mktemp("over_half")
    write_plink(folder / "toy", simulate_balding_nichols(100, 6000, 2, seed=2).genotypes)
    return folder / "toy.bed"


def _run_log(bed, out, capsys, *flags):
    assert main(["run", str(bed), "-K", "2", "--out", str(out), "-j", "1",
                 "--memory", "1", *map(str, flags)]) == 0
    return capsys.readouterr().err


def test_what_region_and_keep_select_decides_whether_to_stream(over_half_fixture,
                                                               tmp_path, capsys):
    # the whole file's 100 x 6000 decided, and the log said the 100 x 5000 of
    # the region took "more than half of --memory 1 MiB"
    keep = tmp_path / "keep.txt"
    keep.write_text("".join(f"ind{i}\n" for i in range(80)))
    for name, flags in (("region", ["--region", "1:1-5000"]),
                        ("keep", ["--keep", keep])):
        err = _run_log(over_half_fixture, tmp_path / name, capsys, *flags)
        assert "streaming" not in err, name
        assert "streamed" not in json.loads(
            (tmp_path / f"{name}.2.json").read_text())["diagnostics"], name
    err = _run_log(over_half_fixture, tmp_path / "whole", capsys)
    assert ("SNPs (of 100 x 6000 selected: 0.57 MiB of int8 genotypes, more than half "
            f"of --memory 1 MiB) from {over_half_fixture} in ") in err


def test_streaming_log_names_the_selected_size_that_decided(over_half_fixture, tmp_path,
                                                            capsys):
    # 100 x 5500 selected (0.52 MiB) are streamed; --maf then removes SNPs, and
    # what remains may be under half of the budget: the line says which size decided
    err = _run_log(over_half_fixture, tmp_path / "x", capsys, "--region", "1:1-5500",
                   "--maf", "0.2")
    line = next(line for line in err.splitlines() if "streaming " in line)
    n_snps = int(line.split(" individuals x ")[1].split()[0])
    assert n_snps < 5500
    assert (f"streaming 100 individuals x {n_snps} SNPs (of 100 x 5500 selected: 0.52 "
            "MiB of int8 genotypes, more than half of --memory 1 MiB)") in line
