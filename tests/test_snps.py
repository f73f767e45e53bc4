"""The SNPs of a P file (``PREFIX.K.P.snps``) and projection by SNP matching."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from admixspec import Genotypes, project
from admixspec.cli import main
from admixspec.core.exceptions import InputError
from admixspec.io import CLAMP, read_genotypes, read_p, read_q, write_vcf
from admixspec.io.snps import (
    format_snps,
    match_snps,
    projection_reference,
    read_snps,
    snps_path,
)
from admixspec.ml.debias import debiased_project, p_covariance

from .conftest import DATA, KG1092, require_realdata

BED = str(DATA / "example.bed")


def _table(rows):
    return pd.DataFrame(rows, columns=["chrom", "pos", "id", "counted", "other"])


REFERENCE = _table([
    ("1", 100, "rs1", "A", "G"),   # 0: same in the target
    ("1", 200, "rs2", "C", "T"),   # 1: swapped in the target (flip)
    ("1", 300, "rs3", "A", "C"),   # 2: other strand (T/G)
    ("1", 400, "rs4", "A", "T"),   # 3: strand-ambiguous
    ("2", 500, "rs5", "G", "A"),   # 4: moved (another build): matched by ID
    ("2", 600, "rs6", "G", "A"),   # 5: other alleles at the same position
    ("2", 700, "rs7", "C", "A"),   # 6: missing from the target
    ("3", 800, "rs8", "C", "G"),   # 7: ambiguous, swapped in the target
])
TARGET = _table([
    ("chr2", 9500, "rs5", "A", "G"),  # 0 -> 4, flipped
    ("chr1", 100, "rs1", "A", "G"),   # 1 -> 0
    ("chr1", 200, ".", "T", "C"),     # 2 -> 1, flipped
    ("chr1", 300, "rs3", "T", "G"),   # 3 -> 2, strand
    ("chr1", 400, "rs4", "A", "T"),   # 4 ambiguous
    ("chr2", 600, "rs6", "G", "T"),   # 5 other alleles
    ("chr9", 1, "rsX", "A", "C"),     # 6 target only
    ("chr3", 800, "rs8", "G", "C"),   # 7 ambiguous
])


class TestMatchSnps:
    def test_pairs_flips_and_counts(self):
        match = match_snps(REFERENCE, TARGET)
        assert match.target.tolist() == [0, 1, 2, 3]
        assert match.reference.tolist() == [4, 0, 1, 2]
        assert match.flip.tolist() == [True, False, True, False]
        assert match.counts == {
            "reference": 8, "target": 8, "ambiguous": 2, "by_position": 3, "by_id": 1,
            "matched": 4, "flipped": 2, "strand": 1, "allele_mismatch": 1,
            "duplicate": 0, "missing": 1, "target_only": 1,
        }

    def test_ambiguous_kept__matched_as_given_never_complemented(self):
        match = match_snps(REFERENCE, TARGET, ambiguous=True)
        pairs = dict(zip(match.target.tolist(), match.reference.tolist(), strict=True))
        assert pairs[4] == 3 and pairs[7] == 7
        flips = dict(zip(match.target.tolist(), match.flip.tolist(), strict=True))
        assert flips[4] is False and flips[7] is True
        assert match.counts["ambiguous"] == 0

    def test_reference_p__flipped_rows_count_the_targets_allele(self):
        match = match_snps(REFERENCE, TARGET)
        P = np.arange(16, dtype=float).reshape(8, 2) / 20
        np.testing.assert_allclose(match.reference_p(P),
                                   [1 - P[4], P[0], 1 - P[1], P[2]])

    def test_duplicate_positions__dropped(self):
        reference = _table([("1", 10, "a", "A", "G"), ("1", 20, "b", "C", "T")])
        target = _table([("1", 10, "x", "A", "G"), ("1", 10, "y", "G", "A"),
                         ("1", 20, "b", "C", "T")])
        match = match_snps(reference, target)
        assert match.reference.tolist() == [1] and match.counts["duplicate"] == 1

    def test_plink_chromosome_codes__match_vcf_names_by_position(self):
        # PLINK writes X, Y, XY and MT as 23, 24, 25 and 26; a VCF names them
        reference = _table([("23", 10, ".", "A", "G"), ("24", 20, ".", "C", "T"),
                            ("25", 30, ".", "A", "C"), ("26", 40, ".", "G", "A")])
        target = _table([("chrX", 10, ".", "A", "G"), ("chrY", 20, ".", "C", "T"),
                         ("X", 30, ".", "A", "C"), ("chrM", 40, ".", "G", "A")])
        match = match_snps(reference, target)
        assert match.reference.tolist() == [0, 1, 2, 3]
        assert match.counts["by_position"] == 4

    def test_identical_tables__everything_in_order(self):
        variants = read_genotypes(BED).variants
        match = match_snps(variants, variants, ambiguous=True)
        np.testing.assert_array_equal(match.target, np.arange(len(variants)))
        np.testing.assert_array_equal(match.reference, np.arange(len(variants)))
        assert not match.flip.any()

    def test_target_only__not_the_reference_snps_it_dropped(self):
        # a target that is a part of the reference has no SNP "not in the
        # reference", whatever was dropped (ambiguous, other alleles)
        target = REFERENCE.iloc[[0, 1, 3, 5, 7]].copy()
        target.loc[5, "other"] = "T"  # rs6: other alleles at the same position
        match = match_snps(REFERENCE, target)
        assert match.counts["matched"] == 2
        assert match.counts["target_only"] == 0
        assert "0 target SNPs not in the reference" in match.describe()

    def test_describe__one_line_with_every_count(self):
        line = match_snps(REFERENCE, TARGET).describe()
        assert "\n" not in line
        assert line.startswith("SNP matching: 4 of 8 reference SNPs matched")
        assert "2 flipped" in line and "2 strand-ambiguous" in line


class TestSnpTable:
    def test_round_trip(self, tmp_path):
        path = tmp_path / "x.2.P.snps"
        path.write_text(format_snps(REFERENCE))
        pd.testing.assert_frame_equal(read_snps(path),
                                      REFERENCE.astype({"pos": "int64"}))

    def test_missing_column__input_error(self, tmp_path):
        path = tmp_path / "x.2.P.snps"
        path.write_text("chrom\tpos\tid\n1\t2\trs1\n")
        with pytest.raises(InputError, match="missing column"):
            read_snps(path)

    def test_bad_position__input_error_with_line(self, tmp_path):
        path = tmp_path / "x.2.P.snps"
        path.write_text(format_snps(REFERENCE).replace("\t300\t", "\tx\t"))
        with pytest.raises(InputError, match=r"x.2.P.snps:4: position is not a whole"):
            read_snps(path)


@pytest.fixture(scope="module")
def example_fixture():
    return read_genotypes(BED, drop_monomorphic=False)


class TestProjectionReference:
    def test_bare_p__rows_taken_in_order(self, example_fixture, tmp_path):
        path = tmp_path / "r.2.P"
        path.write_text("0.2 0.8\n" * example_fixture.n_snps)
        reference = projection_reference(path, example_fixture)
        assert reference.columns is None and reference.P.shape == (10_000, 2)

    def test_bare_p__of_the_polymorphic_snps(self, tmp_path):
        G = np.array([[0, 1, 2, 0], [0, 2, 1, 1]], dtype=np.int8)
        genotypes = Genotypes.from_array(G)
        path = tmp_path / "r.1.P"
        path.write_text("0.5\n0.6\n0.7\n")
        assert projection_reference(path, genotypes).columns.tolist() == [1, 2, 3]

    def test_bare_p__other_row_count_is_an_input_error(self, example_fixture, tmp_path):
        path = tmp_path / "r.2.P"
        path.write_text("0.2 0.8\n" * 7)
        with pytest.raises(InputError, match="has 7 SNPs but the genotypes have 10000"):
            projection_reference(path, example_fixture)

    def test_table_of_other_length__input_error(self, example_fixture, tmp_path):
        path = tmp_path / "r.2.P"
        path.write_text("0.2 0.8\n" * 3)
        snps_path(path).write_text(format_snps(example_fixture.variants.iloc[:2]))
        with pytest.raises(InputError, match="has 2 SNPs but r.2.P has 3 rows"):
            projection_reference(path, example_fixture)

    def test_below_minimum_overlap__input_error(self, example_fixture, tmp_path):
        path = tmp_path / "r.2.P"
        path.write_text("0.2 0.8\n" * 100)
        table = example_fixture.variants.iloc[:100].copy()
        table["chrom"] = "22"
        table["id"] = "."
        snps_path(path).write_text(format_snps(table))
        with pytest.raises(InputError, match=r"only 0 of its 100 SNPs \(0.0%\)"):
            projection_reference(path, example_fixture)


    def test_below_minimum_overlap__says_how_many_were_ambiguous(self, tmp_path):
        genotypes = Genotypes(np.array([[0, 1, 2, 1], [2, 1, 0, 1]], dtype=np.int8),
                              np.array(["a", "b"]), REFERENCE.iloc[:4].copy())
        path = tmp_path / "r.1.P"
        path.write_text("0.5\n" * 4)
        snps_path(path).write_text(format_snps(REFERENCE.iloc[:4]))
        with pytest.raises(InputError, match=r"only 3 of its 4 SNPs \(75.0%\) .*; 1 of "
                           r"them, strand-ambiguous \(A/T, C/G\), were dropped "
                           r"\(--keep-ambiguous keeps them\)$"):
            projection_reference(path, genotypes, min_overlap=0.9)

    @pytest.mark.parametrize(("path", "used"), [
        ("ml-svd", True), ("spectral+ml+projection+joint", True), ("supervised", True),
        ("projection", False), ("ml-svd+projection", False),
        ("spectral+streamed+projection", False),
    ])
    def test_reference_q__only_of_a_run_that_fitted_p_on_it(self, example_fixture,
                                                             tmp_path, path, used):
        # a projection run's Q is of the projected individuals; a reference fit's
        # of everyone, while its P is the reference's: neither tells P's noise
        p_path = tmp_path / "r.2.P"
        p_path.write_text("0.2 0.8\n" * example_fixture.n_snps)
        (tmp_path / "r.2.Q").write_text("0.5 0.5\n" * 10)
        (tmp_path / "r.2.json").write_text(json.dumps({"path": path}))
        reference = projection_reference(p_path, example_fixture)
        assert (reference.reference_q is not None) is used
        if not used:
            assert any("r.2.Q is" in line and "taken as exact" in line
                       for line in reference.lines)


def _recoded_half(genotypes, rows, *, seed):
    """Individuals ``rows`` with a tenth of the SNPs removed and every third SNP's
    counted and other allele swapped (dosage recoded): returns the Genotypes and
    the kept original SNP indices."""
    rng = np.random.default_rng(seed)
    n = genotypes.n_snps
    kept = np.sort(rng.choice(n, n - n // 10, replace=False))
    part = genotypes.subset(individuals=rows, snps=kept)
    dosage = part.dosage.copy()
    swap = np.arange(len(kept)) % 3 == 0
    block = dosage[:, swap]
    dosage[:, swap] = np.where(block < 0, block, 2 - block)
    variants = part.variants.copy()
    variants.loc[swap, ["counted", "other"]] = variants.loc[
        swap, ["other", "counted"]].to_numpy()
    return Genotypes(dosage, part.samples, variants), kept, swap


def _ambiguous(variants):
    pair = variants["counted"].str.upper() + variants["other"].str.upper()
    return pair.isin(["AT", "TA", "CG", "GC"]).to_numpy()


def _project_shared(genotypes, rows, kept, P_file, *, corrected=True, tol=1e-4):
    """The same individuals' Q from the .bed on the SNPs both sides share (bare P),
    corrected for P's noise with the reference's Q beside it, clamped as a .Q file is
    written."""
    P = read_p(P_file)
    shared = kept[~_ambiguous(genotypes.variants.iloc[kept])]
    G = genotypes.dosage[np.ix_(rows, shared)]
    Q = project(G, P[shared], tol=tol)
    if corrected:
        Q_ref = read_q(str(P_file)[: -len(".P")] + ".Q")
        Q = debiased_project(G, P[shared], p_covariance(None, Q_ref, P[shared]), Q)
    return np.clip(Q, *CLAMP), shared


class TestProjectCommand:
    def test_vcf_with_removed_and_swapped_snps__q_of_the_shared_snps(
            self, example_fixture, tmp_path, capsys):
        genotypes = example_fixture
        ids = tmp_path / "reference.ids"
        ids.write_text("".join(f"{s}\n" for s in genotypes.samples[:30]))
        ref = tmp_path / "ref"
        assert main(["run", BED, "-K", "3", "--keep", str(ids), "--out", str(ref),
                     "-q"]) == 0
        # the reference's SNP table names its P rows: every SNP of the input
        table = read_snps(f"{ref}.3.P.snps")
        pd.testing.assert_frame_equal(table, genotypes.variants.astype({"pos": "int64"}))
        rows = np.arange(30, 60)
        target, kept, swap = _recoded_half(genotypes, rows, seed=1)
        vcf = tmp_path / "target.vcf.gz"
        write_vcf(vcf, target, index=False)
        out = tmp_path / "projected"
        assert main(["run", str(vcf), "-K", "3", "--project", f"{ref}.3.P",
                     "--out", str(out)]) == 0
        err = capsys.readouterr().err
        expected, shared = _project_shared(genotypes, rows, kept, f"{ref}.3.P")
        np.testing.assert_allclose(read_q(f"{out}.3.Q"), expected, atol=1e-6)
        n_flipped = int((swap & ~_ambiguous(target.variants)).sum())
        n_ambiguous = int(_ambiguous(genotypes.variants).sum())
        line = (f"SNP matching: {len(shared)} of 10000 reference SNPs matched in the "
                f"target's {len(kept)} ({len(shared)} by chromosome and position, 0 by "
                f"ID); {n_flipped} flipped")
        assert line in err
        log = Path(f"{out}.3.log").read_text()
        assert line in log and f"{n_ambiguous} strand-ambiguous" in log
        removed = np.ones(10_000, dtype=bool)
        removed[kept] = False
        n_missing = int((removed & ~_ambiguous(genotypes.variants)).sum())
        assert f"{n_missing} reference SNPs missing from the target" in log
        # P's rows are the matched SNPs, not "one per variant read"
        assert (f"P rows: {len(shared)} SNPs, named in projected.3.P.snps, the "
                "target's SNPs that the --project P has (SNP matching above), with "
                "that P's rows") in log
        assert "Projection: corrected for the sampling noise of P, estimated from 30" \
            in log
        record = json.loads(Path(f"{out}.3.json").read_text())
        assert record["projection_snps"]["flipped"] == n_flipped
        # ADMIXTURE's plain projection on request
        plain = tmp_path / "plain"
        assert main(["run", str(vcf), "-K", "3", "--project", f"{ref}.3.P",
                     "--plain-projection", "--out", str(plain), "-q"]) == 0
        expected_plain, _ = _project_shared(genotypes, rows, kept, f"{ref}.3.P",
                                            corrected=False)
        np.testing.assert_allclose(read_q(f"{plain}.3.Q"), expected_plain, atol=1e-6)
        assert "corrected" not in Path(f"{plain}.3.log").read_text()
        # the projected P and its table: the target's SNPs and counting
        P = read_p(f"{out}.3.P")
        assert P.shape == (len(shared), 3)
        assert read_snps(f"{out}.3.P.snps")["id"].tolist() == \
            genotypes.variants["id"].to_numpy()[shared].tolist()
        # projected again onto that P: the Q beside it is of the projected
        # individuals, not of those P was fitted on, so P is taken as exact
        again = tmp_path / "again"
        assert main(["run", str(vcf), "-K", "3", "--project", f"{out}.3.P",
                     "--out", str(again), "-q"]) == 0
        np.testing.assert_allclose(read_q(f"{again}.3.Q"), expected_plain, atol=1e-5)

    def test_too_little_overlap__one_line_error(self, example_fixture, tmp_path, capsys):
        path = tmp_path / "r.3.P"
        path.write_text("0.2 0.3 0.5\n" * 50)
        table = example_fixture.variants.iloc[:50].copy()
        table["chrom"], table["id"] = "22", "."
        snps_path(path).write_text(format_snps(table))
        status = main(["run", BED, "-K", "3", "--project", str(path), "--out",
                       str(tmp_path / "x")])
        err = capsys.readouterr().err.strip().splitlines()
        assert status == 1
        assert [line for line in err if "error" in line] == err[-1:]
        assert err[-1].startswith(
            f"admixspec: error: {path}.snps: only 0 of its 50 SNPs")


@pytest.mark.slow
class TestThousandGenomesProjection:
    """Issue 21: fit K = 3 on half of each 1000 Genomes population, project the other
    half from a VCF with a tenth of the SNPs removed and every third SNP's alleles
    swapped."""

    def test_projected_q__equals_bed_projection_and_places_the_populations(
            self, tmp_path, capsys):
        folder = require_realdata(KG1092)
        bed = folder / "1kg.ref.phase1_release_v3.20101123_thinned_autosomal_overlap.bed"
        labels = pd.read_csv(folder / "labels.tsv", sep="\t")
        genotypes = read_genotypes(bed, drop_monomorphic=False)
        population = labels.set_index("sample_id").loc[genotypes.samples, "population"]
        population = population.to_numpy()
        first = np.zeros(genotypes.n_individuals, dtype=bool)
        for name in np.unique(population):
            members = np.flatnonzero(population == name)
            first[members[: (len(members) + 1) // 2]] = True
        ids = tmp_path / "half.ids"
        ids.write_text("".join(f"{s}\n" for s in genotypes.samples[first]))
        ref = tmp_path / "ref"
        assert main(["run", str(bed), "-K", "3", "--keep", str(ids), "--out", str(ref),
                     "-q"]) == 0
        rows = np.flatnonzero(~first)
        target, kept, swap = _recoded_half(genotypes, rows, seed=21)
        vcf = tmp_path / "other_half.vcf.gz"
        write_vcf(vcf, target, index=False)
        out = tmp_path / "projected"
        assert main(["run", str(vcf), "-K", "3", "--project", f"{ref}.3.P",
                     "--out", str(out)]) == 0
        log = Path(f"{out}.3.log").read_text()
        Q = read_q(f"{out}.3.Q")
        expected, shared = _project_shared(genotypes, rows, kept, f"{ref}.3.P")
        np.testing.assert_allclose(Q, expected, atol=1e-6)
        n_flipped = int((swap & ~_ambiguous(target.variants)).sum())
        assert f"SNP matching: {len(shared)} of {genotypes.n_snps} reference SNPs" in log
        assert f"; {n_flipped} flipped" in log
        removed = np.ones(genotypes.n_snps, dtype=bool)
        removed[kept] = False
        n_missing = int((removed & ~_ambiguous(genotypes.variants)).sum())
        assert f"{n_missing} reference SNPs missing" in log
        projected = population[rows]
        for names in (["YRI"], ["CEU"], ["CHB", "JPT"]):
            mean = Q[np.isin(projected, names)].mean(axis=0)
            assert mean.max() >= 0.9, (names, mean)
