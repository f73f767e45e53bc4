"""The first run's notice that numba is compiling admixspec's kernels."""

from __future__ import annotations

import logging

import numba
import numpy as np

from admixspec.core.compilation import COMPILE_NOTICE, compile_notice


def _kernel(module):
    """A fresh, uncompiled numba function that appears to live in ``module``."""
    def add_one(x):
        return x + 1.0
    add_one.__module__ = module
    return numba.njit(add_one)


def test_compile_notice__logged_once_when_admixspec_kernels_compile(caplog):
    first, second = _kernel("admixspec.core.a"), _kernel("admixspec.ml.b")
    with caplog.at_level(logging.INFO, logger="admixspec"), compile_notice():
        first(np.ones(2))
        second(np.ones(2))
    assert caplog.text.count(COMPILE_NOTICE) == 1


def test_compile_notice__silent_for_compiled_kernels_and_other_packages(caplog):
    ours, theirs = _kernel("admixspec.core.a"), _kernel("somebody.else")
    ours(np.ones(2))  # compiled before: the run below only calls it
    with caplog.at_level(logging.INFO, logger="admixspec"), compile_notice():
        ours(np.ones(2))
        theirs(np.ones(2))
    assert COMPILE_NOTICE not in caplog.text
