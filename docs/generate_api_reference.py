"""Write docs/api.md: every public name of admixspec, one line each, by module.

The page is generated from the package itself (each module's ``__all__`` and
the first paragraph of each docstring, or the ``#:`` comment above a
constant), never edited by hand, so it cannot drift from the code:
``tests/test_docs.py`` regenerates it and fails when the committed file
differs. A new module or public name needs a rerun of this script.

Usage::

    python docs/generate_api_reference.py           # rewrite docs/api.md
    python docs/generate_api_reference.py --check   # exit 1 if out of date
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path

TARGET = Path(__file__).resolve().parent / "api.md"

#: Sub-packages in the order the page shows them, with what each holds.
PACKAGES = {
    "admixspec": "the estimator, its results, genotypes, filters, metrics, plots, "
    "simulations",
    "admixspec.fit": "fit_admixture and the strategies it runs: in memory, reference "
    "and projection, streamed; the estimator choice; the info summary",
    "admixspec.core": "the primitives every layer shares: genotypes, the parameter box, "
    "frequencies, chunks, metrics, exceptions, argument checks",
    "admixspec.io": "readers and writers: VCF/BCF, PLINK, ADMIXTURE files, results",
    "admixspec.spectral": "the spectral tensor-eigenpair estimator, step by step, and "
    "the seed paper's binary latent model",
    "admixspec.ml": "the maximum-likelihood engine: likelihood, starts, block "
    "relaxation, cross-validation, bootstrap, projection",
    "admixspec.backends": "where the likelihood passes run: the device choice",
    "admixspec.backends.gpu": "the likelihood engine on a CUDA GPU",
    "admixspec.backends.distributed": "the likelihood passes on a Dask cluster",
}


def _summary(obj) -> str:
    """The first paragraph of a docstring, on one line."""
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def _constant_comment(module, name: str) -> str:
    """The ``#:`` comment lines directly above ``name = ...`` where it is defined."""
    homes = [module] + [
        m for key, m in sorted(sys.modules.items())
        if key.startswith("admixspec.") and name in getattr(m, "__all__", ())
    ]
    for home in homes:
        comment = _comment_in(home, name)
        if comment:
            return comment
    return ""


def _comment_in(module, name: str) -> str:
    try:
        lines = inspect.getsource(module).splitlines()
    except (OSError, TypeError):
        return ""
    for index, line in enumerate(lines):
        if re.match(rf"{re.escape(name)}\s*(:[^=]*)?=", line):
            comment = []
            for above in reversed(lines[:index]):
                if not above.startswith("#:"):
                    break
                comment.insert(0, above[2:].strip())
            return " ".join(comment)
    return ""


def _kind(obj) -> str:
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "constant"


def _line(module, name: str) -> str:
    obj = getattr(module, name)
    if _kind(obj) == "constant":
        text = _constant_comment(module, name) or f"``{obj!r}``"
    elif _kind(obj) == "module":
        # By name, never repr: a module's repr holds the install path.
        text = f"``{obj.__name__}``"
    else:
        text = _summary(obj)
    home = getattr(obj, "__module__", None)
    where = f", from `{home}`" if module.__name__ == "admixspec" and home else ""
    return f"- `{name}` ({_kind(obj)}{where}) — {text}".rstrip(" —")


def _modules(package: str) -> list:
    """The package's own module (for its __all__) and its public modules."""
    root = importlib.import_module(package)
    found = [root] if package == "admixspec" else []
    for info in pkgutil.iter_modules(root.__path__):
        name = f"{package}.{info.name}"
        if info.ispkg or info.name.startswith("_") or name in PACKAGES:
            continue
        found.append(importlib.import_module(name))
    if package != "admixspec":
        found.insert(0, root)
    return found


def _section(module) -> list[str]:
    names = sorted(getattr(module, "__all__", []), key=str.lower)
    names = [n for n in names if n != "__version__"]
    if not names:
        return []
    title = _summary(module)
    lines = [f"### `{module.__name__}`", ""]
    if title:
        lines += [title, ""]
    return lines + [_line(module, name) for name in names] + [""]


def render() -> str:
    """The text of docs/api.md."""
    lines = [
        "# Python API",
        "",
        "Every public name, one line each, grouped as the package is. Generated from",
        "the docstrings by `docs/generate_api_reference.py` (do not edit by hand; rerun",
        "it after adding a module or a public name). `from admixspec import *` gives",
        "the names under `admixspec`; the rest are imported from their modules. Full",
        "documentation: each name's docstring (`help(admixspec.fit_admixture)`).",
        "",
    ]
    for package, blurb in PACKAGES.items():
        lines += [f"## `{package}`: {blurb}", ""]
        for module in _modules(package):
            lines += _section(module)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv=None) -> int:
    # run as a script, docs/ is on sys.path
    from generate_cli_reference import write_or_check

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if docs/api.md is out of date")
    args = parser.parse_args(argv)
    return write_or_check(TARGET, render(), check=args.check,
                          script="generate_api_reference.py")


if __name__ == "__main__":
    # Document this tree's package, not whichever admixspec is installed.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
