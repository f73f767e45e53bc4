# admixspec rules. All of them call the admixspec command line only.
#
# The single rule to copy into your own Snakefile is `admixspec_run`: one
# ADMIXTURE-style fit per K, with cross-validation; see docs/workflow.md.
#
# Every rule declares its software environment, envs/admixspec.yaml, so that
# `snakemake --use-conda` builds it (admixspec and its dependencies) where
# snakemake runs and runs every job in it, on this machine or a cluster's
# nodes; without --use-conda the `admixspec` on PATH is used.

import os
import shlex
from pathlib import Path

# envs/admixspec.yaml pip-installs admixspec from this checkout (the folder
# above workflows/); a value already in the environment wins.
os.environ.setdefault("ADMIXSPEC_SOURCE", str(Path(workflow.current_basedir).parents[1]))
ADMIXSPEC_ENV = "../envs/admixspec.yaml"


def _admixspec_genotype_files(path):
    """The input file plus, for PLINK, the .bim/.fam beside the .bed."""
    path = str(path)
    if path.endswith(".bed"):
        stem = path[: -len(".bed")]
        return [path, stem + ".bim", stem + ".fam"]
    return [path]


ADMIXSPEC_PREFIX = str(Path(config["outdir"]) / config["name"])
# one K (K: 3) or a list of them (K: [2, 3, 4])
ADMIXSPEC_KS = [int(K) for K in (config["K"] if isinstance(config["K"], list)
                                 else [config["K"]])]
ADMIXSPEC_CV = int(config.get("cv", 0) or 0)
ADMIXSPEC_FORMAT = config.get("plot_format", "png")


rule admixspec_run:
    """Fit K ancestral populations; ADMIXTURE-style PREFIX.K.Q/.P/.log plus .json."""
    input:
        _admixspec_genotype_files(config["input"]),
    output:
        Q=ADMIXSPEC_PREFIX + ".{K}.Q",
        P=ADMIXSPEC_PREFIX + ".{K}.P",
        # the P rows' SNPs, which `admixspec run --project PREFIX.K.P` matches by
        snps=ADMIXSPEC_PREFIX + ".{K}.P.snps",
        log=ADMIXSPEC_PREFIX + ".{K}.log",
        json=ADMIXSPEC_PREFIX + ".{K}.json",
    wildcard_constraints:
        K=r"\d+",
    params:
        prefix=ADMIXSPEC_PREFIX,
        cv=f"--cv {ADMIXSPEC_CV}" if ADMIXSPEC_CV else "",
        seed=config.get("seed", 1),
        options=" ".join([config.get("filters", "") or "", config.get("extra", "") or ""]),
    threads: int(config.get("threads", 1))
    log:
        ADMIXSPEC_PREFIX + ".{K}.stderr",
    conda:
        ADMIXSPEC_ENV
    shell:
        "admixspec run {input[0]:q} -K {wildcards.K} --out {params.prefix:q}"
        " --seed {params.seed} -j {threads} {params.cv} {params.options} 2> {log:q}"


rule admixspec_plot:
    """Stacked-bar plot of all K (one colour per component across K) and CV error vs K."""
    input:
        Q=expand(ADMIXSPEC_PREFIX + ".{K}.Q", K=ADMIXSPEC_KS),
        logs=expand(ADMIXSPEC_PREFIX + ".{K}.log", K=ADMIXSPEC_KS),
        labels=[config["labels"]] if config.get("labels") else [],
    output:
        bars=ADMIXSPEC_PREFIX + ".ancestry." + ADMIXSPEC_FORMAT,
        cv=[ADMIXSPEC_PREFIX + ".cv." + ADMIXSPEC_FORMAT] if ADMIXSPEC_CV else [],
    params:
        labels=(
            f"--labels {shlex.quote(str(config['labels']))}"
            f" --ids {shlex.quote(str(config['input']))}"
            if config.get("labels")
            else ""
        ),
        order=(
            "--population-order " + shlex.quote(",".join(config["population_order"]))
            if config.get("population_order")
            else ""
        ),
        cv=(
            f"--cv-out {shlex.quote(ADMIXSPEC_PREFIX + '.cv.' + ADMIXSPEC_FORMAT)}"
            if ADMIXSPEC_CV
            else ""
        ),
    conda:
        ADMIXSPEC_ENV
    shell:
        "admixspec plot {input.Q:q} {params.labels} {params.order}"
        " --out {output.bars:q} {params.cv}"


rule admixspec_summary:
    """Table of K, log-likelihood, CV error, wall time and the best K."""
    input:
        expand(ADMIXSPEC_PREFIX + ".{K}.{ext}", K=ADMIXSPEC_KS, ext=["Q", "log", "json"]),
    output:
        ADMIXSPEC_PREFIX + ".summary.tsv",
    params:
        prefix=ADMIXSPEC_PREFIX,
        Ks=" ".join(map(str, ADMIXSPEC_KS)),
    conda:
        ADMIXSPEC_ENV
    shell:
        "admixspec summary {params.prefix:q} -K {params.Ks} --out {output:q}"
