"""The Snakemake workflow runs end to end on the bundled example."""

from __future__ import annotations

import os
import re
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


ENV_FILE = ROOT / "workflows" / "envs" / "admixspec.yaml"

# A stand-in for conda (none is installed here, and conda's channels are out of
# reach): it answers snakemake's checks and, for `conda env create`, records the
# environment file it was given and the ADMIXSPEC_SOURCE it sees, then makes
# the environment's folder. Building the environment for real needs conda.
FAKE_CONDA = """#!{python}
import json, os, shutil, sys
args = sys.argv[1:]
if args[:2] == ["info", "--json"]:
    print(json.dumps({{"conda_prefix": {prefix!r}, "platform": "linux-64"}}))
elif args == ["--version"]:
    print("conda 24.7.1")
elif args[:2] == ["config", "--get"]:
    print(json.dumps({{"get": {{"channel_priority": "strict"}}}}))
elif args[:2] == ["env", "create"]:
    env_file = args[args.index("--file") + 1].strip('"')
    shutil.copy(env_file, {record!r})
    with open({record!r} + ".source", "w") as handle:
        handle.write(os.environ.get("ADMIXSPEC_SOURCE", ""))
    os.makedirs(args[args.index("--prefix") + 1].strip('"'))
elif args[0] != "clean":
    sys.exit(f"fake conda: unexpected arguments {{args}}")
"""


def _conda_dependencies() -> dict[str, str]:
    yaml = pytest.importorskip("yaml")
    env = yaml.safe_load(ENV_FILE.read_text())
    return {
        name: bound
        for name, bound in (
            entry.split(" ", 1) if " " in entry else (entry, "")
            for entry in env["dependencies"]
            if isinstance(entry, str)
        )
    }


class TestCondaEnvironment:
    def test_env_file__has_every_runtime_dependency_at_pyprojects_bound(self):
        tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        conda = _conda_dependencies()
        for requirement in project["dependencies"]:
            name, bound = re.match(r"([A-Za-z0-9_.-]+)\s*(.*)", requirement).groups()
            assert conda.get(name) == bound, f"{name}: conda {conda.get(name)!r}"
        assert conda["python"] == project["requires-python"]

    def test_use_conda__every_rule_gets_the_env_with_this_checkout_as_source(
        self, tmp_path
    ):
        yaml = pytest.importorskip("yaml")
        conda = tmp_path / "conda" / "bin" / "conda"
        conda.parent.mkdir(parents=True)
        record = tmp_path / "env-given-to-conda.yaml"
        conda.write_text(FAKE_CONDA.format(
            python=sys.executable, prefix=str(conda.parent.parent), record=str(record),
        ))
        conda.chmod(0o755)
        env = dict(os.environ, PATH=f"{conda.parent}{os.pathsep}{BIN}{os.pathsep}"
                   f"{os.environ.get('PATH', '')}")
        env.pop("ADMIXSPEC_SOURCE", None)
        result = subprocess.run(
            [_snakemake(), "-s", str(ROOT / "workflows" / "Snakefile"), "--cores", "1",
             "--configfile", str(_write_config(tmp_path)), "--directory", str(tmp_path),
             "--use-conda", "--conda-create-envs-only"],
            capture_output=True, text=True, env=env, timeout=300,
        )
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        given = yaml.safe_load(record.read_text())
        assert given == yaml.safe_load(ENV_FILE.read_text())
        # conda passes the pip lines to pip, which expands ${ADMIXSPEC_SOURCE}
        pip = next(e["pip"] for e in given["dependencies"] if isinstance(e, dict))
        source = Path(record.with_name(record.name + ".source").read_text())
        assert pip == ["-e ${ADMIXSPEC_SOURCE}"] and source == ROOT

    def test_rules__each_declares_the_env(self):
        rules = (ROOT / "workflows" / "rules" / "admixspec.smk").read_text()
        blocks = re.split(r"^rule ", rules, flags=re.M)[1:]
        assert len(blocks) == 3
        for block in blocks:
            declared = re.search(r"^    conda:\n        ADMIXSPEC_ENV$", block, re.M)
            assert declared, block[:40]
