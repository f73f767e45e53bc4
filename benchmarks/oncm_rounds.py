"""The eigenpair solver's doubling rounds against running every start (issue 20).

:func:`admixspec.spectral.tensor.eigenpairs` draws its budget of ``4000 d``
random starts and runs them in doubling rounds from an eighth of it, stopping at
the first round whose second half finds no pair the first half missed. This
script runs the default's spectral stage (:func:`admixspec.fit.default.spectral_stage`)
twice on each data set, once with every start in one round (the solver before the
rounds) and once with the rounds, and prints the stage's CPU seconds and how far
the two spectral Q are apart (and their Q error against the truth, for
simulations):

* coalescent admixture (:func:`admixspec.simulate_admixture`, Dirichlet(0.5)) and
  Balding-Nichols data (:func:`admixspec.simulate_balding_nichols`, F_ST 0.1) at
  each ``--K``, ``--individuals`` x ``--snps``;
* with ``--bed``, a PLINK file (e.g. ADAMIXTURE's demo data at K = 7) at
  ``--bed-K``.

Usage::

    NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/oncm_rounds.py \\
        [--K 4 5 6 8] [--bed demo_data.bed --bed-K 7]
"""

from __future__ import annotations

import argparse
import time
from unittest import mock

import numpy as np

import admixspec
from admixspec.fit.default import spectral_stage
from admixspec.fit.monomorphic import monomorphic_snps
from admixspec.spectral import estimate
from admixspec.spectral.estimate import DEFAULT_WINDOWS
from admixspec.spectral.tensor import eigenpairs


def every_start(T, *, n_starts=None, seed=None):
    """:func:`eigenpairs` with its whole budget in one round."""
    budget = max(1000, 4000 * T.shape[0]) if n_starts is None else n_starts
    return eigenpairs(T, n_starts=budget, first_round=budget, seed=seed)


def polymorphic(genotypes):
    """Dosage and allele counts of the polymorphic SNPs (as the default fits them)."""
    G = np.asarray(genotypes.dosage)
    monomorphic, (counted, observed) = monomorphic_snps(G)
    keep = ~monomorphic
    return np.ascontiguousarray(G[:, keep]), (counted[keep], observed[keep])


def compare(label, genotypes, K, truth=None, seed=1):
    """Print the spectral stage's CPU seconds and Q, every start against rounds."""
    G, counts = polymorphic(genotypes)
    out = {}
    for name, solver in (("every start", every_start), ("rounds", eigenpairs)):
        with mock.patch.object(estimate, "eigenpairs", solver):
            clock = time.process_time()
            stage = spectral_stage(G, K, counts=counts, windows=DEFAULT_WINDOWS,
                                   n_starts=None, seed=seed)
            out[name] = (time.process_time() - clock, stage.Q)
    (every_seconds, every_Q), (rounds_seconds, rounds_Q) = out.values()
    if every_Q is None or rounds_Q is None:
        apart = "no Q" if every_Q is None and rounds_Q is None else "only one has a Q"
    else:
        apart = f"Q {np.abs(every_Q - rounds_Q).max():.1e} apart"
        if truth is not None:
            apart += (f", Q error {admixspec.q_error(every_Q, truth):.4f} / "
                      f"{admixspec.q_error(rounds_Q, truth):.4f}")
    print(f"{label}, {G.shape[0]} x {G.shape[1]}, K = {K}: spectral stage "
          f"{every_seconds:.2f} -> {rounds_seconds:.2f} CPU s; {apart}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--K", type=int, nargs="*", default=[4, 5, 6, 8])
    parser.add_argument("--individuals", type=int, default=100)
    parser.add_argument("--snps", type=int, default=20_000)
    parser.add_argument("--bed", help="a PLINK .bed to compare as well")
    parser.add_argument("--bed-K", type=int, default=7)
    args = parser.parse_args(argv)
    # the first stage loads numba's cached kernels; keep that out of the timings
    compare("warm-up", admixspec.simulate_balding_nichols(40, 2000, 3, seed=0)
            .genotypes, 3)
    for K in args.K:
        coalescent = admixspec.simulate_admixture(args.individuals, K, alpha=0.5,
                                                  n_snps=args.snps, seed=K)
        compare("coalescent", coalescent.genotypes, K, coalescent.Q)
        drift = admixspec.simulate_balding_nichols(args.individuals, args.snps, K,
                                                   seed=K)
        compare("Balding-Nichols", drift.genotypes, K, drift.Q)
    if args.bed:
        compare(args.bed, admixspec.read_genotypes(args.bed), args.bed_K)


if __name__ == "__main__":
    main()
