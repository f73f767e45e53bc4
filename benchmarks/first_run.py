"""A first run's wall time (numba compiles the kernels) against a later run's.

Each ``admixspec run`` is its own process with ``NUMBA_CACHE_DIR`` set to a
fresh temporary folder: the first run of each pair compiles every kernel it
calls, as on a machine where admixspec was just installed or upgraded, and
the second loads them from that cache. Also counts the kernels compiled
(numba's cache index files). Other flags are passed to ``admixspec run``.

Usage::

    python benchmarks/first_run.py data/example.bed -K 3 -j 1
    python benchmarks/first_run.py data/example.bed -K 3 -j 1 --pairs 2
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed_run(arguments, cache, out):
    """Wall seconds of one ``admixspec run`` process with numba's cache at ``cache``."""
    environment = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    clock = time.perf_counter()
    subprocess.run([sys.executable, "-m", "admixspec", "run", *arguments, "-q",
                    "--out", str(out)], env=environment, check=True)
    return time.perf_counter() - clock


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("--pairs", type=int, default=1,
                        help="first and later runs, each pair with its own empty cache")
    args, run_flags = parser.parse_known_args(argv)
    for pair in range(1, args.pairs + 1):
        with tempfile.TemporaryDirectory() as work:
            cache, out = Path(work) / "numba", Path(work) / "out" / "run"
            first = timed_run([args.input, *run_flags], cache, out)
            later = timed_run([args.input, *run_flags], cache, out)
            kernels = len(list(cache.rglob("*.nbi")))
            label = " ".join([args.input, *run_flags])
            print(f"{label} pair {pair}: first run {first:.1f} s ({kernels} kernels "
                  f"compiled), later run {later:.1f} s", flush=True)


if __name__ == "__main__":
    main()
