"""Sample and SNP selection on input held to PLINK's conventions (bug hunt).

``--keep`` (one- and two-column files), what ``info`` counts, ``--region``'s
reads, SNP matching for ``--project`` and the ``.ref`` file of
``--reference-size``.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import admixspec.io.plink as plink_io
from admixspec import InputError, simulate_balding_nichols
from admixspec.cli import get_parser, main
from admixspec.io import read_genotypes, read_keep, write_plink
from admixspec.io.reader import format_keep, open_genotypes
from admixspec.io.snps import match_snps

N_FAMILIES, MEMBERS = 6, 4


@pytest.fixture
def family_fixture(tmp_path) -> Path:
    """A fileset of 6 families numbering their members 1 to 4 (IIDs repeat)."""
    sim = simulate_balding_nichols(N_FAMILIES * MEMBERS, 300, 2, seed=5)
    families = np.repeat([f"F{f}" for f in range(N_FAMILIES)], MEMBERS)
    members = np.tile([str(m + 1) for m in range(MEMBERS)], N_FAMILIES)
    genotypes = dataclasses.replace(sim.genotypes, samples=members, families=families)
    write_plink(tmp_path / "fam", genotypes)
    return tmp_path / "fam"


@pytest.fixture
def distinct_fixture(tmp_path) -> Path:
    """A fileset whose FIDs are not its IIDs (F0 ind0, F1 ind1, ...)."""
    sim = simulate_balding_nichols(20, 300, 2, seed=6)
    families = np.array([f"F{i}" for i in range(20)])
    write_plink(tmp_path / "cohort",
                dataclasses.replace(sim.genotypes, families=families))
    return tmp_path / "cohort"


def pairs(genotypes) -> list[tuple[str, str]]:
    return list(zip(genotypes.families.astype(str).tolist(),
                    genotypes.samples.astype(str).tolist(), strict=True))


def write(path: Path, text: str, **kwargs) -> Path:
    with open(path, "w", **kwargs) as handle:
        handle.write(text)
    return path


class TestKeepPairs:
    def test_two_column_keep__selects_the_fid_iid_pairs_of_a_family_fileset(
            self, family_fixture, tmp_path):
        keep = write(tmp_path / "keep.txt", "F1 2\nF3 4\n")
        genotypes = read_genotypes(f"{family_fixture}.bed", keep=keep,
                                   drop_monomorphic=False)
        assert pairs(genotypes) == [("F1", "2"), ("F3", "4")]
        everyone = read_genotypes(f"{family_fixture}.bed", drop_monomorphic=False)
        np.testing.assert_array_equal(genotypes.dosage[0],
                                      everyone.dosage[1 * MEMBERS + 1])

    def test_two_column_keep__a_pair_whose_fid_differs_is_an_error_not_the_iid(
            self, distinct_fixture, tmp_path):
        keep = write(tmp_path / "keep.txt", "F3 ind3\nF9 ind5\n")
        with pytest.raises(InputError, match=r"1 requested sample\(s\) not in the "
                           r".fam file \(first: FID 'F9' IID 'ind5'; IID 'ind5' is "
                           r"there with FID 'F5'"):
            read_genotypes(f"{distinct_fixture}.bed", keep=keep)

    def test_two_column_keep__streamed_selects_the_same_pairs_as_in_memory(
            self, family_fixture, tmp_path):
        keep = write(tmp_path / "keep.txt", "".join(
            f"F{f} {m}\n" for f in range(N_FAMILIES) for m in (1, 3)))
        streamed = open_genotypes(f"{family_fixture}.bed", keep=keep, memory_mib=0.001)
        in_memory = open_genotypes(f"{family_fixture}.bed", keep=keep)
        assert hasattr(streamed, "chunks")
        assert pairs(streamed) == pairs(in_memory)
        assert pairs(in_memory) == [(f"F{f}", str(m)) for f in range(N_FAMILIES)
                                    for m in (1, 3)]

    @pytest.mark.skipif(shutil.which("plink2") is None, reason="plink2 not installed")
    def test_two_column_keep__a_pgen_selects_the_fid_iid_pairs(self, family_fixture):
        subprocess.run(["plink2", "--bfile", str(family_fixture), "--make-pgen",
                        "--out", str(family_fixture)], check=True, capture_output=True)
        keep = write(family_fixture.parent / "keep.txt", "F2 3\nF4 1\n")
        pgen = read_genotypes(f"{family_fixture}.pgen", keep=keep)
        assert pairs(pgen) == [("F2", "3"), ("F4", "1")]
        write(keep, "B 1\n")
        with pytest.raises(InputError, match=r"fam.psam: 1 requested sample\(s\) not in "
                           r"the .psam file \(first: FID 'B' IID '1'; IID '1' is there "
                           r"with FID 'F0'"):
            read_genotypes(f"{family_fixture}.pgen", keep=keep)

    def test_read_keep__a_byte_order_mark_is_not_part_of_the_first_id(self, tmp_path):
        keep = write(tmp_path / "keep.txt", "ind3\r\nind5\r\n", encoding="utf-8-sig",
                     newline="")
        assert read_keep(keep) == ["ind3", "ind5"]

    def test_read_keep__two_column_lines_give_pairs_one_column_lines_iids(
            self, tmp_path):
        paired = read_keep(write(tmp_path / "a.txt", "F1 1\nF2 1\nF1 1\n"))
        assert (list(paired), paired.families) == (["1", "1"], ("F1", "F2"))
        mixed = read_keep(write(tmp_path / "b.txt", "A\nfam1 B\n"))
        assert (list(mixed), mixed.families) == (["A", "B"], None)


class TestKeepCounted:
    @pytest.mark.parametrize("suffix", [".bed", ".vcf.gz"])
    def test_info__counts_the_individuals_that_keep_left_out(self, tmp_path, capsys,
                                                            suffix):
        data = Path(__file__).parents[1] / "data" / f"example{suffix}"
        keep = write(tmp_path / "keep.txt", "pop1-01\nadm-05\npop3-10\n")
        assert main(["info", str(data), "--keep", str(keep), "--json", "-q"]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert (summary["individuals"], summary["individuals_removed"]) == (3, 57)
        assert summary["removed"]["keep"]["reason"] == (
            f"not among the 3 IDs of --keep {keep}, matched by IID")

    def test_keep_entry__streamed_and_in_memory_count_alike_before_mind(
            self, family_fixture, tmp_path):
        keep = write(tmp_path / "keep.txt", "".join(
            f"F{f} {m}\n" for f in range(N_FAMILIES) for m in (1, 2, 3)))
        streamed = open_genotypes(f"{family_fixture}.bed", keep=keep, memory_mib=0.001,
                                  mind=0.5)
        in_memory = open_genotypes(f"{family_fixture}.bed", keep=keep, mind=0.5)
        entries = [entry for entry in in_memory.filter_log if entry["filter"] == "keep"]
        assert entries == [{
            "filter": "keep", "unit": "individuals", "removed": N_FAMILIES,
            "reason": f"not among the {3 * N_FAMILIES} IDs of --keep {keep}, matched "
                      "by FID and IID"}]
        def filters(log):
            return [(entry["filter"], entry["removed"]) for entry in log]

        assert filters(streamed.filter_log)[:3] == filters(in_memory.filter_log)[:3]
        assert filters(in_memory.filter_log)[:3] == [
            ("biallelic_snp", 0), ("keep", N_FAMILIES), ("mind", 0)]
        assert entries[0] in streamed.filter_log


class TestRegion:
    @pytest.mark.parametrize("memory_mib", [None, 0.001])  # in memory, streamed
    def test_region__reads_the_bim_once(self, distinct_fixture, monkeypatch,
                                        memory_mib):
        calls = []
        real = plink_io.read_bim
        monkeypatch.setattr(plink_io, "read_bim",
                            lambda path: calls.append(path) or real(path))
        genotypes = open_genotypes(f"{distinct_fixture}.bed", region="1:10-200",
                                   memory_mib=memory_mib)
        assert genotypes.n_snps > 0
        assert hasattr(genotypes, "chunks") == (memory_mib is not None)
        assert len(calls) == 1


class TestProjectionReference:
    def test_match_snps__snps_at_unknown_position_0_pair_by_id(self):
        n = 400
        reference = pd.DataFrame({
            "chrom": ["1"] * n, "pos": [0] * n, "id": [f"rs{i}" for i in range(n)],
            "counted": ["A"] * n, "other": ["G"] * n})
        target = reference.iloc[::-1].reset_index(drop=True)
        match = match_snps(reference, target)
        assert match.counts["matched"] == n
        assert match.counts["duplicate"] == 0
        np.testing.assert_array_equal(match.reference, n - 1 - match.target)

    def test_format_keep__fid_iid_lines_only_where_the_fids_are_not_the_iids(self):
        text = format_keep(["1", "2", "1"], ["F1", "F1", "F2"])
        assert text == "F1\t1\nF1\t2\nF2\t1\n"
        assert format_keep(["a", "b"], ["a", "b"]) == "a\nb\n"

    def test_run_reference_size__the_ref_file_keeps_the_reference_of_a_family_fileset(
            self, family_fixture, tmp_path):
        out = tmp_path / "out"
        assert main(["run", f"{family_fixture}.bed", "-K", "2", "--seed", "1",
                     "--reference-size", "10", "--no-refine", "--out", str(out),
                     "-q"]) == 0
        ref = Path(f"{out}.2.ref")
        reference = read_genotypes(f"{family_fixture}.bed", keep=ref)
        lines = [tuple(line.split("\t")) for line in ref.read_text().splitlines()]
        assert len(lines) == 10
        assert sorted(pairs(reference)) == sorted(lines)


def test_maf_help__says_how_chromosome_x_differs_from_plink():
    parser = get_parser()
    run = parser._subparsers._group_actions[0].choices["run"]
    help_text = next(a.help for a in run._actions if "--maf" in a.option_strings)
    assert "chromosome X" in help_text and "plink --maf counts it once" in help_text
