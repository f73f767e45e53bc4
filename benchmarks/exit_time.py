"""How long an ``admixspec run`` process takes to exit after its last output.

Runs ``python -m admixspec run INPUT -K K --init svd`` several times, each as
its own process on one thread, and times, from the process's start, the
moment its last log line ("K=...: wrote ...") reaches stderr and the moment
the process has exited. The difference is the interpreter's exit: nothing of
the run is left to do by then.

Run (``PYTHONPATH`` picks the tree measured; INPUT as an absolute path):
  PYTHONPATH=$PWD python benchmarks/exit_time.py \\
      $PWD/../shared/realdata/hapmap3_admixture_tutorial/hapmap3.bed -K 3 --runs 8
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import thread_env


def one_run(bed, K, folder):
    """(wall seconds, seconds from the last log line to the process's exit)."""
    command = [sys.executable, "-m", "admixspec", "run", bed, "-K", str(K),
               "--init", "svd", "-j", "1", "--out", "run"]
    start = time.perf_counter()
    # in the temporary folder: `python -m` looks in the working folder before
    # PYTHONPATH, which would otherwise measure the checkout run from
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=folder,
                          env=thread_env(1)) as process:
        last = None
        for line in process.stderr:
            if ": wrote " in line:
                last = time.perf_counter()
        process.wait()
    end = time.perf_counter()
    if process.returncode != 0 or last is None:
        sys.exit(f"admixspec run failed (exit status {process.returncode})")
    return end - start, end - last


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("-K", type=int, default=3)
    parser.add_argument("--runs", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        times = [one_run(args.input, args.K, folder) for _ in range(args.runs)]
    walls, exits = zip(*times, strict=True)
    print("wall (s):", " ".join(f"{t:.2f}" for t in walls))
    print("exit (s):", " ".join(f"{t:.3f}" for t in exits))
    print(f"median wall {median(walls):.2f} s, median exit {median(exits):.3f} s")


if __name__ == "__main__":
    main()
