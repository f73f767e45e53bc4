"""``run --runs 10`` against one run on the ADMIXTURE tutorial's HapMap3 data (issue 21).

Runs ``admixspec run hapmap3.bed -K 4 5`` (one run per K) and then
``admixspec run hapmap3.bed -K 4 5 --runs 10`` as child processes, at the
threads the environment sets, and prints each one's wall and CPU time (the
children's user + system time: on a shared machine wall time is an upper
bound), then for every K of the ``--runs`` call: the modes its log names,
whether the best run's log-likelihood (the log's final ``Loglikelihood:``
line) equals the best of the runs' lines, and the ratio of CPU times.

Usage::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/runs_hapmap3.py [--workdir DIR] [--runs 10]
"""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "realdata" / "hapmap3_admixture_tutorial"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(args, cwd) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), _children_cpu()
    subprocess.run([sys.executable, "-m", "admixspec", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - wall, _children_cpu() - cpu


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=ROOT / "out" / "runs_hapmap3")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--K", type=int, nargs="+", default=[4, 5])
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    bed = str(DATA / "hapmap3.bed")
    Ks = [str(K) for K in args.K]
    one = _run(["run", bed, "-K", *Ks, "--out", "one"], args.workdir)
    print(f"one run per K: wall {one[0]:.1f} s, CPU {one[1]:.1f} s", flush=True)
    many = _run(["run", bed, "-K", *Ks, "--runs", str(args.runs), "--out", "many"],
                args.workdir)
    print(f"--runs {args.runs}: wall {many[0]:.1f} s, CPU {many[1]:.1f} s; "
          f"ratio wall {many[0] / one[0]:.2f}, CPU {many[1] / one[1]:.2f}", flush=True)
    for K in args.K:
        log = (args.workdir / f"many.{K}.log").read_text()
        final = float(re.findall(r"^Loglikelihood: (\S+)$", log, re.M)[-1])
        runs = [float(x) for x in re.findall(r"^Run \S+: .*loglikelihood (\S+),", log,
                                             re.M)]
        single = float(re.findall(r"^Loglikelihood: (\S+)$",
                                  (args.workdir / f"one.{K}.log").read_text(), re.M)[-1])
        print(f"K={K}: {len(runs)} runs; best run {final:.6f}, best of the runs "
              f"{max(runs):.6f}, equal: {final == max(runs)}; one run {single:.6f}")
        for line in log.splitlines():
            if line.startswith(("Modes", "Mode ", "Runs:")):
                print("   ", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
