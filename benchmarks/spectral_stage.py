"""Seconds of the default's spectral stage on small cohorts, and its Q's bytes.

``fit_admixture(refine=False)`` on each data set, once to load numba's cached
kernels and once timed; prints the spectral stage's seconds
(``timings["spectral"]``) and a digest of Q, so two trees can be compared on
the same data (``PYTHONPATH=<tree>``, alternating runs) and a change that
should keep the estimate can be checked byte for byte. Data sets:
ADAMIXTURE's demo data (``demo``, K = 7) and the seed paper's coalescent
simulations ``sim<individuals>x<SNPs>k<K>a<alpha>``
(:func:`admixspec.simulate_admixture`, seed 3, cached in
``benchmarks/results/spectral_stage/``).

Usage::

    python benchmarks/spectral_stage.py --threads 1 2 --data demo sim60x30000k5a0.3 \\
        sim200x20000k3a0.5 sim1000x20000k4a0.5
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path

import numba
import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import load

import admixspec

CACHE = Path(__file__).resolve().parent / "results" / "spectral_stage"
SIMULATION = re.compile(r"sim(\d+)x(\d+)k(\d+)a([\d.]+)")


def data(name):
    """(dosage, K) of a named data set."""
    if name == "demo":
        return load("demo").dosage, 7
    found = SIMULATION.fullmatch(name)
    if found is None:
        sys.exit(f"unknown data set {name}: demo or sim<m>x<n>k<K>a<alpha>")
    path = CACHE / f"{name}.npz"
    m, n, K, alpha = found.groups()
    if not path.exists():
        sim = admixspec.simulate_admixture(int(m), int(K), n_snps=int(n),
                                           alpha=float(alpha), seed=3)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, dosage=sim.genotypes.dosage)
    return np.load(path)["dosage"], int(K)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", nargs="+", default=["demo"])
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    args = parser.parse_args(argv)
    for name in args.data:
        dosage, K = data(name)
        for threads in args.threads:
            numba.set_num_threads(threads)
            with threadpool_limits(threads):
                admixspec.fit_admixture(dosage, K, seed=42, refine=False)
                result = admixspec.fit_admixture(dosage, K, seed=42, refine=False)
            digest = hashlib.sha1(result.Q.tobytes()).hexdigest()[:10]
            print(f"{name} {dosage.shape[0]} x {dosage.shape[1]} K={K} "
                  f"threads={threads}: spectral stage "
                  f"{result.timings['spectral']:.2f} s, Q {digest}", flush=True)


if __name__ == "__main__":
    main()
