"""Seconds of the subset search's simplex score: the numba kernel against NumPy.

:func:`admixspec.spectral.search.infeasibility` (the Cholesky kernel) and the
batched eigendecomposition it replaced (``_infeasibility_by_eigh``, which
still scores the ill-conditioned subsets) on random candidate rows, at the
search's shapes: the most subsets, ``--subsets``, of ``c`` candidates over
``m`` individuals at ``K``. Prints the best of ``--repeats`` timings of each
and their largest relative difference.

Usage::

    python benchmarks/subset_infeasibility.py --shapes 40x105k7 30x1000k4 40x200k3
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
import time

import numba
import numpy as np
from threadpoolctl import threadpool_limits

from admixspec.spectral.search import _infeasibility_by_eigh, infeasibility

SHAPE = re.compile(r"(\d+)x(\d+)k(\d+)")


def best_seconds(repeats, function, *args):
    """Shortest of ``repeats`` wall times of ``function(*args)``, and its value."""
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        value = function(*args)
        seconds.append(time.perf_counter() - start)
    return min(seconds), value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", default=["40x105k7"],
                        help="<candidates>x<individuals>k<K>")
    parser.add_argument("--subsets", type=int, default=20_000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    numba.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    for shape in args.shapes:
        found = SHAPE.fullmatch(shape)
        if found is None:
            sys.exit(f"unknown shape {shape}: <candidates>x<individuals>k<K>")
        c, m, K = map(int, found.groups())
        vectors = rng.standard_normal((c, m))
        subsets = np.array(list(itertools.islice(
            itertools.combinations(range(c), K), args.subsets)))
        with threadpool_limits(args.threads):
            infeasibility(vectors, subsets[:2])  # load the cached kernel
            kernel, new = best_seconds(args.repeats, infeasibility, vectors, subsets)
            numpy, old = best_seconds(args.repeats, _infeasibility_by_eigh, vectors,
                                      vectors @ vectors.T, subsets)
        difference = np.max(np.abs(new - old) / np.abs(old))
        print(f"{len(subsets)} subsets of {c} candidates, {m} individuals, K={K}, "
              f"{args.threads} thread(s): kernel {kernel:.3f} s, NumPy {numpy:.3f} s "
              f"({numpy / kernel:.1f}x), largest relative difference "
              f"{difference:.1e}", flush=True)


if __name__ == "__main__":
    main()
