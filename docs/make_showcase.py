"""The docs' showcase figure: 1000 Genomes phase 1 (1,092 individuals, 14 populations).

Runs ``admixspec run`` for K = 2..8 on the thinned phase-1 panel in
``../shared/realdata/1kg_phase1_1092_flashpca/`` (the project's workspace copy
of flashpca's reference data), then draws all K as aligned panels grouped by
``labels.tsv`` (populations ordered by continent) and writes

* ``docs/figures/1kg_showcase.png`` — the figure,
* ``docs/figures/1kg_showcase_cv.png`` — CV error against K (with ``--cv``),
* ``docs/figures/1kg_showcase.tsv`` — K, log-likelihood, CV error, seconds.

Usage::

    python docs/make_showcase.py [--K 2-8] [--cv 5] [--threads 2] [--workdir DIR]
                                 [--skip-run] [-- extra admixspec run flags]

Timings depend on the machine and on its load; the table records them as measured.

The committed figure was made with::

    NUMBA_NUM_THREADS=1 python docs/make_showcase.py --threads 1 --cv 5

i.e. every K run to ADMIXTURE's stopping rule (log-likelihood gain < 1e-4, at most
1000 iterations) with 5-fold cross-validation; the ``converged`` column of
``1kg_showcase.tsv`` says which K reached the stopping rule.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "realdata" / "1kg_phase1_1092_flashpca"
BED = DATA / "1kg.ref.phase1_release_v3.20101123_thinned_autosomal_overlap.bed"
FIGURES = ROOT / "docs" / "figures"
#: Populations left to right: Africa, Europe, the Americas, East Asia.
ORDER = ["YRI", "LWK", "ASW", "CEU", "GBR", "FIN", "TSI", "IBS",
         "MXL", "CLM", "PUR", "CHB", "CHS", "JPT"]


def _last_gain(log: Path) -> float:
    """Log-likelihood gain of the last EM iteration in an admixspec run log."""
    gains = [line.rsplit("(delta):", 1)[1] for line in log.read_text().splitlines()
             if "(EM)" in line and "(delta):" in line]
    return float(gains[-1]) if gains else float("nan")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--K", default="2-8", help="K range for admixspec run")
    parser.add_argument("--cv", type=int, default=0, help="CV folds (default 0: no CV)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--workdir", type=Path, default=ROOT / "benchmarks" / "results" / "showcase"
    )
    parser.add_argument(
        "--skip-run", action="store_true", help="only redraw from existing Q files"
    )
    parser.add_argument("extra", nargs="*", help="admixspec run flags (after --)")
    args = parser.parse_args(argv)
    if not BED.exists():
        print(f"real data not available: {DATA}", file=sys.stderr)
        return 1

    import admixspec
    from admixspec.io.results import summarize_runs

    args.workdir.mkdir(parents=True, exist_ok=True)
    prefix = args.workdir / "1kg"
    if not args.skip_run:
        command = [
            sys.executable, "-m", "admixspec", "run", str(BED), "-K", args.K,
            "--out", str(prefix), "--seed", str(args.seed), "-j", str(args.threads),
            *args.extra,
        ]
        if args.cv:
            command += ["--cv", str(args.cv)]
        print("$", " ".join(command), flush=True)
        start = time.perf_counter()
        subprocess.run(command, check=True)
        print(f"admixspec run: {time.perf_counter() - start:.1f} s wall", flush=True)

    FIGURES.mkdir(parents=True, exist_ok=True)
    fig = admixspec.plot_ancestry(
        prefix,
        labels=DATA / "labels.tsv",
        sample_ids=BED.with_suffix(".fam"),
        population_order=ORDER,
        title="1000 Genomes phase 1: 1,092 individuals, 14,079 SNPs (admixspec)",
        out=FIGURES / "1kg_showcase.png",
        dpi=110,
    )
    print("alignment permutations:", [p.tolist() for p in fig.admixspec_permutations])
    table = summarize_runs(prefix)
    records = [json.loads(Path(f"{prefix}.{K}.json").read_text()) for K in table["K"]]
    table["path"] = [r.get("path") for r in records]
    table["em_iterations"] = [r.get("n_iter") for r in records]
    table["converged"] = [r.get("converged") for r in records]
    table["last_gain"] = [_last_gain(Path(f"{prefix}.{K}.log")) for K in table["K"]]
    table.to_csv(
        FIGURES / "1kg_showcase.tsv", sep="\t", index=False, float_format="%.6g"
    )
    print(table.to_string(index=False))
    if table["cv_error"].notna().any():
        admixspec.plot_cv(prefix, out=FIGURES / "1kg_showcase_cv.png")
    print(f"wrote {FIGURES / '1kg_showcase.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
