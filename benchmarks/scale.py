"""Scale study (issue 13): time, peak memory and Q error of ``admixspec run``.

Settings (``--setting``):

* ``a``: 20,000 individuals x 500,000 SNPs, K = 6, the default fit.
* ``b``: 100,000 individuals x 100,000 SNPs, K = 4, a 10,000-individual
  reference (``--reference-size 10000``) + projection; the Q error of the
  projected and of the reference individuals, beside the fit of the reference
  alone (``--keep PREFIX.K.ref``).
* ``custom``: sizes from ``--individuals``/``--snps``/``-K``/``--reference-size``
  (scaled-down versions of a and b on a small machine).

Genotypes are simulated under the Balding-Nichols model (F_ST 0.1,
Dirichlet(0.5) proportions) one block of SNPs at a time, so the simulation
itself never holds more than a block of frequencies, and written as a PLINK
.bed with bed-reader's streaming writer; the true Q goes to ``PREFIX.truth.Q``.
Each fit runs as its own ``admixspec`` process under ``/usr/bin/time -v``,
which reports its peak resident memory. Results are appended to
``OUT/scale.csv``.

Usage::

    python benchmarks/scale.py --setting custom --individuals 3000 --snps 100000 \
        -K 4 --out /tmp/scale --extra=--no-refine
    # streamed from disk: the int8 matrix exceeds half of --memory (MiB)
    python benchmarks/scale.py --setting custom --individuals 2000 --snps 500000 \
        -K 4 --out /tmp/scale --extra="--memory 256 --no-refine --threads 1"
    # the issue's settings, each a 2.5 GB .bed (10^10 genotypes), simulated first
    NUMBA_NUM_THREADS=2 python benchmarks/scale.py --setting b --out /tmp/scale \
        --extra="--memory 2000 --threads 2"
    NUMBA_NUM_THREADS=2 python benchmarks/scale.py --setting a --out /tmp/scale \
        --extra="--memory 2000 --threads 2 --no-refine"
"""

from __future__ import annotations

import argparse
import csv
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SETTINGS = {
    "a": {"individuals": 20_000, "snps": 500_000, "K": 6, "reference_size": None},
    "b": {"individuals": 100_000, "snps": 100_000, "K": 4, "reference_size": 10_000},
}
#: Genotypes simulated per block: a block's frequencies are this many doubles (512 MiB).
SIM_BLOCK_ENTRIES = 2**26


def simulate_bed(prefix: Path, n_individuals: int, n_snps: int, K: int, *, seed: int,
                 fst: float = 0.1, alpha: float = 0.5) -> None:
    """Balding-Nichols genotypes written SNP block by SNP block to ``prefix.bed``."""
    from bed_reader import create_bed

    rng = np.random.default_rng(seed)
    Q = rng.dirichlet(np.full(K, alpha), size=n_individuals)
    np.savetxt(f"{prefix}.truth.Q", Q, fmt="%.6f")
    shape = (1 - fst) / fst
    properties = {
        "iid": [f"ind{i}" for i in range(n_individuals)],
        "fid": [f"ind{i}" for i in range(n_individuals)],
        "chromosome": np.full(n_snps, "1"),
        "sid": [f"snp{j}" for j in range(n_snps)],
        "bp_position": np.arange(1, n_snps + 1),
        "allele_1": np.full(n_snps, "A"),
        "allele_2": np.full(n_snps, "C"),
    }
    with create_bed(f"{prefix}.bed", n_individuals, n_snps, properties=properties,
                    count_A1=False) as writer:
        block = max(1, SIM_BLOCK_ENTRIES // n_individuals)
        for start in range(0, n_snps, block):
            size = min(block, n_snps - start)
            ancestral = rng.uniform(0.05, 0.95, size)
            P = rng.beta(ancestral[:, None] * shape, (1 - ancestral[:, None]) * shape,
                         (size, K))
            frequency = Q @ P.T  # (individuals, block)
            # Binomial(2, f) as two Bernoulli(f) draws: the same distribution as
            # rng.binomial, six times faster (10^10 genotypes in settings a and b)
            dosage = (rng.random(frequency.shape, dtype=np.float32)
                      < frequency).view(np.int8)
            dosage += rng.random(frequency.shape, dtype=np.float32) < frequency
            for column in dosage.T:  # the writer takes one SNP at a time
                writer.write(column)


def timed_run(arguments: list[str]) -> dict:
    """Run ``admixspec`` under ``/usr/bin/time -v``: wall seconds and peak RSS (GiB)."""
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "admixspec", "run",
               *arguments]
    print("$", shlex.join(command[2:]), flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        output = done.stderr.split("\tCommand being timed")[0]  # without time's report
        sys.exit(f"admixspec failed ({done.returncode}):\n{output[-3000:]}")
    peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)",
                            done.stderr).group(1))
    return {"wall_s": round(wall, 1), "peak_rss_gib": round(peak_kb / 2**20, 3)}


def q_errors(truth: np.ndarray, Q: np.ndarray, rows: np.ndarray | None) -> dict:
    """Mean absolute Q error, overall and for the reference/projected rows."""
    from admixspec.core.metrics import match_components

    Q = Q[:, match_components(truth, Q)]
    error = np.abs(Q - truth).mean(axis=1)
    out = {"q_error": round(float(error.mean()), 5)}
    if rows is not None:
        projected = np.setdiff1d(np.arange(len(truth)), rows)
        out["q_error_reference"] = round(float(error[rows].mean()), 5)
        out["q_error_projected"] = round(float(error[projected].mean()), 5)
    return out


def _parse(argv) -> tuple[argparse.Namespace, dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--setting", choices=("a", "b", "custom"), required=True)
    parser.add_argument("--individuals", type=int)
    parser.add_argument("--snps", type=int)
    parser.add_argument("-K", type=int)
    parser.add_argument("--reference-size", type=int)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--extra", default="", help="more admixspec run flags, quoted")
    parser.add_argument("--reference-alone", action="store_true",
                        help="also fit the reference alone (--keep PREFIX.K.ref)")
    parser.add_argument("--reuse-cohort", action="store_true",
                        help="with --reference-alone: take the cohort fit's files from "
                        "an earlier run instead of fitting the cohort again")
    args = parser.parse_args(argv)
    config = dict(SETTINGS.get(args.setting, {}))
    for key in ("individuals", "snps", "K", "reference_size"):
        if getattr(args, key) is not None:
            config[key] = getattr(args, key)
    if not {"individuals", "snps", "K"} <= set(config):
        parser.error("--setting custom needs --individuals, --snps and -K")
    return args, config


def _fit(data: Path, out: Path, config: dict, args, *flags: str):
    """One timed ``admixspec run`` on ``data.bed``; returns its record and Q."""
    run = [f"{data}.bed", "-K", str(config["K"]), "--seed", str(args.seed),
           "--out", str(out), *flags, *shlex.split(args.extra)]
    record = {"setting": args.setting, **config, "extra": args.extra, **timed_run(run)}
    return record, np.loadtxt(f"{out}.{config['K']}.Q", ndmin=2)


def _append_csv(table: Path, records: list[dict]) -> None:
    fields = ["setting", "individuals", "snps", "K", "reference_size", "extra", "fit",
              "wall_s", "peak_rss_gib", "q_error", "q_error_reference",
              "q_error_projected"]
    new = not table.exists()
    with open(table, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        if new:
            writer.writeheader()
        writer.writerows(records)


def main(argv=None) -> None:
    args, config = _parse(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    data = args.out / f"bn_{config['individuals']}x{config['snps']}_K{config['K']}"
    if not Path(f"{data}.bed").exists():
        clock = time.perf_counter()
        simulate_bed(data, config["individuals"], config["snps"], config["K"],
                     seed=args.seed)
        print(f"simulated {data}.bed in {time.perf_counter() - clock:.0f} s", flush=True)
    truth = np.loadtxt(f"{data}.truth.Q", ndmin=2)
    fit = args.out / f"{data.name}_fit"
    size = config.get("reference_size")
    reference_file = Path(f"{fit}.{config['K']}.ref")
    reuse = args.reuse_cohort and reference_file.exists()
    if reuse:
        Q = np.loadtxt(f"{fit}.{config['K']}.Q", ndmin=2)
    else:
        record, Q = _fit(data, fit, config, args,
                         *(["--reference-size", str(size)] if size else []))
    rows = None
    if reference_file.exists():  # sample IDs are ind<row>
        rows = np.array([int(i[3:]) for i in reference_file.read_text().split()])
    cohort_errors = q_errors(truth, Q, rows)
    print("cohort:", cohort_errors, flush=True)
    records = [] if reuse else [{**record, "fit": "cohort", **cohort_errors}]
    if args.reference_alone and rows is not None:
        record, Q_alone = _fit(data, args.out / f"{data.name}_reference_alone", config,
                               args, "--keep", str(reference_file),
                               "--reference-size", str(len(rows)))
        records.append({**record, "fit": "reference alone",
                        **q_errors(truth[rows], Q_alone, None)})
    _append_csv(args.out / "scale.csv", records)
    for record in records:
        print(record, flush=True)


if __name__ == "__main__":
    main()
