"""Naive reference implementations that the fast code must match.

Dense and slow on purpose: only for tiny inputs in tests.
"""

from __future__ import annotations

import itertools

import numpy as np


def dense_third_moment(X):
    """``(1/n) sum_j x_j (x) x_j (x) x_j`` for X of shape (m, n): an (m, m, m) array."""
    return np.einsum("aj,bj,cj->abc", X, X, X) / X.shape[1]


def distinct_mask(m):
    """Boolean (m, m, m) mask of pairwise-distinct index triples."""
    mask = np.ones((m, m, m), dtype=bool)
    for a, b in itertools.product(range(m), repeat=2):
        mask[a, a, b] = mask[a, b, a] = mask[b, a, a] = False
    return mask


def masked_least_squares_tensor(M3, Kplus):
    """argmin_W || P_Omega(W(K+, K+, K+)) - P_Omega(M3) || over all K^3 entries.

    Kplus has shape (K, m); the design matrix has one row per distinct triple.
    """
    K, m = Kplus.shape
    mask = distinct_mask(m)
    B = Kplus.T
    design = np.einsum("ai,bj,ck->abcijk", B, B, B).reshape(m**3, K**3)
    rows = mask.reshape(-1)
    solution, *_ = np.linalg.lstsq(design[rows], M3.reshape(-1)[rows], rcond=None)
    return solution.reshape(K, K, K)


def simulate_structured(kind, *, m=40, n=20_000, K=3, alpha=1.0, missing=0.0, seed=0):
    """Admixed genotypes whose ancestral frequencies make the spectral method exact.

    ``kind="binary"``: frequencies 0 or 1; ``kind="private"``: each SNP's counted
    allele lives in one population only, at a Beta(0.5, 2) frequency.
    Returns ``(dosage, Q, P)``.
    """
    rng = np.random.default_rng(seed)
    Q = rng.dirichlet(np.full(K, alpha), size=m)
    if kind == "binary":
        P = (rng.random((n, K)) < 0.3).astype(float)
    else:
        P = np.zeros((n, K))
        P[np.arange(n), rng.integers(K, size=n)] = rng.beta(0.5, 2.0, n)
    # clip: Q @ P.T can exceed 1 by rounding when P is binary
    dosage = rng.binomial(2, np.clip(Q @ P.T, 0.0, 1.0)).astype(np.int8)
    if missing:
        dosage[rng.random(dosage.shape) < missing] = -1
    return dosage, Q, P
