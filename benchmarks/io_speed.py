"""Genotype reading speed and memory: VCF.gz and PLINK, 1,000 x 100,000 by default.

Simulates a Balding-Nichols data set (1% missing calls), writes it as a
BGZF-compressed VCF and as a PLINK fileset, then reads each back with
``admixspec.read_genotypes`` in a fresh child process and prints the wall time
and the child's peak resident memory (VmHWM of the whole Python process:
interpreter, imported libraries, the dosage matrix and the reader's
temporaries; the baseline after imports is printed too).

Goals (issue 2): VCF.gz read < 60 s and < 1 GiB; PLINK read < 5 s.

Usage::

    python benchmarks/io_speed.py [--n-individuals 1000] [--n-snps 100000]
        [--repeats 1] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Peak memory is the child's VmHWM (peak resident set size of this process
# image). getrusage's ru_maxrss would be wrong here: Linux carries it across
# fork + exec, so it would report the parent's (simulation's) peak.
PEAK = """
def peak_mib():
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""

CHILD = PEAK + """
import json, sys, time
from admixspec import read_genotypes
start = time.perf_counter()
g = read_genotypes(sys.argv[1])
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak_mib": peak_mib(),
                  "shape": list(g.dosage.shape)}))
"""

BASELINE = PEAK + """
import json
import admixspec, cyvcf2, bed_reader
print(json.dumps({"peak_mib": peak_mib()}))
"""


def _child(code: str, *args: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", code, *args], check=True, capture_output=True, text=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-individuals", type=int, default=1000)
    parser.add_argument("--n-snps", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", metavar="DIR",
                        help="write the files here and keep them")
    args = parser.parse_args(argv)

    from admixspec import simulate_balding_nichols
    from admixspec.io import write_plink, write_vcf

    folder = Path(args.keep or tempfile.mkdtemp(prefix="admixspec-io-"))
    folder.mkdir(parents=True, exist_ok=True)
    vcf_path, prefix = folder / "bench.vcf.gz", folder / "bench"
    if not vcf_path.exists() or not Path(f"{prefix}.bed").exists():
        start = time.perf_counter()
        sim = simulate_balding_nichols(
            args.n_individuals, args.n_snps, 3, missing_rate=0.01, seed=args.seed
        )
        simulated = time.perf_counter() - start
        start = time.perf_counter()
        write_vcf(vcf_path, sim.genotypes, index=False)
        vcf_write = time.perf_counter() - start
        start = time.perf_counter()
        write_plink(prefix, sim.genotypes)
        plink_write = time.perf_counter() - start
        del sim
        print(f"simulate {args.n_individuals} x {args.n_snps}: {simulated:.1f} s; "
              f"write VCF.gz {vcf_write:.1f} s "
              f"({vcf_path.stat().st_size / 2**20:.0f} MiB); "
              f"write PLINK {plink_write:.1f} s")

    baseline = _child(BASELINE)["peak_mib"]
    print(f"baseline process after imports: {baseline:.0f} MiB peak RSS")
    goals = {"VCF.gz": (60.0, 1024.0), "PLINK": (5.0, None)}
    for label, path in (("VCF.gz", vcf_path), ("PLINK", Path(f"{prefix}.bed"))):
        for _ in range(args.repeats):
            result = _child(CHILD, str(path))
            seconds_goal, memory_goal = goals[label]
            verdict = "ok" if result["seconds"] < seconds_goal else "SLOWER THAN GOAL"
            if memory_goal is not None and result["peak_mib"] >= memory_goal:
                verdict += ", MEMORY ABOVE GOAL"
            print(f"read {label:6s} {result['shape'][0]} x {result['shape'][1]}: "
                  f"{result['seconds']:6.2f} s, peak RSS {result['peak_mib']:6.0f} MiB "
                  f"(goal < {seconds_goal:g} s"
                  + (f", < {memory_goal:g} MiB" if memory_goal else "")
                  + f"): {verdict}")
    if not args.keep:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()


if __name__ == "__main__":
    main()
