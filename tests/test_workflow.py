"""The Snakemake workflow runs end to end on the bundled example."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
BIN = Path(sys.executable).parent


def _snakemake() -> str:
    search = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    exe = shutil.which("snakemake", path=search)
    if exe is None:
        pytest.skip("snakemake is not installed (pip install 'admixspec[workflow]')")
    return exe


def _write_config(folder: Path, **overrides) -> Path:
    settings = {
        "input": str(DATA / "example.bed"),
        "outdir": str(folder / "results"),
        "name": "example",
        "K": "[2, 3, 4, 5]",
        "cv": "2",
        "seed": "1",
        "threads": "1",
        "filters": '""',
        "extra": '""',
        "labels": str(DATA / "example.labels.tsv"),
        "population_order": "[]",
        "plot_format": "png",
    }
    settings.update(overrides)
    config = folder / "config.yaml"
    config.write_text("".join(f"{key}: {value}\n" for key, value in settings.items()))
    return config


def _run_snakemake(folder: Path, config: Path, *extra: str):
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(
        [
            _snakemake(), "-s", str(ROOT / "workflows" / "Snakefile"),
            "--cores", "2", "--configfile", str(config), "--directory", str(folder),
            *extra,
        ],
        capture_output=True, text=True, env=env, timeout=900,
    )


class TestWorkflow:
    def test_workflow__dry_run_plans_every_output(self, tmp_path):
        config = _write_config(
            tmp_path, filters='"--maf 0.01"', population_order="[pop3, pop1]",
            plot_format="pdf",
        )
        result = _run_snakemake(tmp_path, config, "--dry-run", "--printshellcmds")
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        plan = result.stdout + result.stderr
        for K in (2, 3, 4, 5):
            assert f"-K {K} --out" in plan
        assert "--cv 2" in plan and "--maf 0.01" in plan
        assert "example.ancestry.pdf" in plan and "--population-order pop3,pop1" in plan
        assert "admixspec summary" in plan

    def test_workflow__example_gives_Q_P_cv_plot_and_summary(self, tmp_path):
        config = _write_config(tmp_path)
        result = _run_snakemake(tmp_path, config)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        results = tmp_path / "results"
        from admixspec.io.admixture import read_p, read_q
        from admixspec.io.results import read_run_log

        n_individuals = len((DATA / "example.fam").read_text().splitlines())
        for K in (2, 3, 4, 5):
            Q = read_q(results / f"example.{K}.Q")
            assert Q.shape == (n_individuals, K)
            assert read_p(results / f"example.{K}.P").shape[1] == K
            log = read_run_log(results / f"example.{K}.log")
            assert log["loglik"] is not None
            assert set(log["cv_errors"]) == {K}
        from matplotlib.image import imread

        bars = imread(str(results / "example.ancestry.png"))
        assert bars.shape[0] > 300 and bars.shape[1] > 600
        assert (bars[..., :3].min(axis=2) < 0.95).mean() > 0.3  # not blank
        assert (results / "example.cv.png").stat().st_size > 5000
        import pandas as pd

        summary = pd.read_csv(results / "example.summary.tsv", sep="\t")
        assert summary["K"].tolist() == [2, 3, 4, 5]
        assert summary["loglik"].notna().all() and summary["cv_error"].notna().all()
        assert summary["best"].sum() == 1
        assert summary["loglik"].iloc[-1] > summary["loglik"].iloc[0]
