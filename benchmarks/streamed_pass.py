"""The streamed passes over a ``.bed``: filtering, decoding, counting, per source tree.

Writes a Balding-Nichols PLINK fileset (``gpu_speed.write_biobank``; 10,000 x
60,000 by default, 150 MB), then times three passes over it in a fresh child
process per source tree, the trees alternating, ``--repeats`` times:

* ``filter``: :func:`admixspec.io.reader.open_streamed` (reads the ``.fam``/
  ``.bim``, then decodes every chunk once to filter it and count each kept
  individual's calls);
* ``decode``: every chunk of the opened source decoded into its buffer;
* ``count``: :meth:`~admixspec.io.streamed.StreamedChunks.statistics` (decode
  and count every chunk).

Pass a worktree of an older commit to ``--trees`` to compare (each child
imports admixspec from its tree). Prints a Markdown table of medians.

Usage::

    git worktree add /tmp/old <commit>
    python benchmarks/streamed_pass.py --trees /tmp/old . [--threads 2]
        [--individuals 10000] [--snps 60000] [--memory-mib 1024] [--repeats 3]
        [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CHILD = """
import json, sys, time
from admixspec.io.reader import open_streamed
bed, memory = sys.argv[1], float(sys.argv[2])
times = {}
start = time.perf_counter()
opened = open_streamed(bed, memory_bytes=memory)
times["filter"] = time.perf_counter() - start
start = time.perf_counter()
for _ in opened.chunks.chunks_with_progress("decoded"):
    pass
times["decode"] = time.perf_counter() - start
start = time.perf_counter()
opened.chunks.statistics()
times["count"] = time.perf_counter() - start
print(json.dumps(times))
"""


def fileset(directory: Path, individuals: int, snps: int) -> str:
    """The benchmark's ``.bed`` in ``directory``, written unless it is there."""
    sys.path.insert(0, str(Path(__file__).parent))
    from gpu_speed import write_biobank

    prefix = directory / f"bn_{individuals}x{snps}"
    if not Path(f"{prefix}.bed").exists():
        write_biobank(str(prefix), individuals, snps, 5, threads=2)
    return f"{prefix}.bed"


def passes(tree: str, bed: str, memory: float, threads: int) -> dict:
    """One child's pass times (seconds), admixspec imported from ``tree``.

    The child runs in ``tree``: ``python -c`` puts its working directory first
    on the path, ahead of PYTHONPATH.
    """
    tree = Path(tree).resolve()
    env = dict(os.environ, PYTHONPATH=str(tree),
               NUMBA_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads))
    result = subprocess.run([sys.executable, "-c", CHILD, str(Path(bed).resolve()),
                             str(memory)], env=env, cwd=tree, check=True,
                            capture_output=True, text=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trees", nargs="+", default=["."])
    parser.add_argument("--individuals", type=int, default=10_000)
    parser.add_argument("--snps", type=int, default=60_000)
    parser.add_argument("--memory-mib", type=float, default=1024)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", help="directory for the fileset (default: temporary)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(args.keep or scratch)
        directory.mkdir(parents=True, exist_ok=True)
        bed = fileset(directory, args.individuals, args.snps)
        for tree in args.trees:  # numba caches compiled before timing
            passes(tree, bed, args.memory_mib * 2**20, args.threads)
        runs = {tree: [] for tree in args.trees}
        for _ in range(args.repeats):
            for tree in args.trees:
                runs[tree].append(passes(tree, bed, args.memory_mib * 2**20,
                                         args.threads))
    print(f"{args.individuals:,} x {args.snps:,}, --memory {args.memory_mib:g} MiB, "
          f"{args.threads} threads, median of {args.repeats}\n")
    print("| tree | filter pass (s) | decode pass (s) | count pass (s) |")
    print("| --- | --- | --- | --- |")
    for tree, times in runs.items():
        cells = [f"{np.median([t[name] for t in times]):.2f}"
                 for name in ("filter", "decode", "count")]
        print(f"| {tree} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
