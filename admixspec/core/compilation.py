"""Telling the user when numba compiles the kernels, which only a first run does."""

from __future__ import annotations

import contextlib
import logging

__all__ = ["COMPILE_NOTICE", "compile_notice"]

logger = logging.getLogger("admixspec")

#: Logged when the first of admixspec's kernels starts compiling. numba compiles
#: each kernel for this machine on its first use after an install or upgrade and
#: caches it: the bundled example's first run took 75-83 s, later runs 3.8-4.1 s
#: (docs/faq.md, "Why is the first run slow?").
COMPILE_NOTICE = ("compiling admixspec's numerical kernels for this machine: once after "
                  "installing or upgrading, about a minute; later runs load them from "
                  "numba's cache")


@contextlib.contextmanager
def compile_notice():
    """Log :data:`COMPILE_NOTICE` once if one of admixspec's kernels compiles inside.

    A kernel loaded from numba's cache is not compiled and logs nothing
    (numba's ``numba:compile`` event is raised on a cache miss only).
    """
    from numba.core import event

    class Notice(event.Listener):
        told = False

        def on_start(self, compile_event):
            dispatcher = compile_event.data["dispatcher"]
            if not self.told and dispatcher.py_func.__module__.startswith("admixspec."):
                self.told = True
                logger.info(COMPILE_NOTICE)

        def on_end(self, compile_event):
            pass

    with event.install_listener("numba:compile", Notice()):
        yield
