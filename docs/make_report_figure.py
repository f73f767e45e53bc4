"""The docs' report screenshot: HapMap3 tutorial data, several runs per K, their modes.

Until ``admixspec run --runs`` exists, this script does what it will do, with
the public pieces: for each K it fits the ADMIXTURE tutorial's HapMap3 data
(324 individuals of YRI, ASW, CEU and MEX; ``../shared/realdata/``) once along the
default path (``fit_admixture(G, K, seed=43)``, as ``admixspec run``) and
``--runs - 1`` more times by maximum likelihood from random starts (seeds
44, 45, ...), groups the runs into modes (:func:`admixspec.fit.modes.find_modes`),
writes the best run as ``PREFIX.K.Q``/``.P``/``.log``/``.json`` (the JSON
carrying the modes' record) and the modes as ``PREFIX.K.modes.tsv`` and
``PREFIX.K.mode<M>.Q`` (:func:`admixspec.io.modes.write_modes`), then runs
``admixspec report`` on it and photographs the page in Debian's headless
Chromium (``tests/browser.py``) as ``docs/figures/report_hapmap3.png``. It
prints each K's modes as the log would.

Usage::

    python docs/make_report_figure.py [--K 3-5] [--runs 5] [--workdir DIR]
                                      [--skip-fit]

The committed figure was made with::

    NUMBA_NUM_THREADS=1 python docs/make_report_figure.py --K 3-5 --runs 5
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "realdata" / "hapmap3_admixture_tutorial"
FIGURE = ROOT / "docs" / "figures" / "report_hapmap3.png"
#: Left to right: the tutorial's four populations, Africa to the Americas.
ORDER = ["YRI", "ASW", "CEU", "MEX"]


def _k_range(text: str) -> list[int]:
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def _browser():
    path = ROOT / "tests" / "browser.py"
    spec = importlib.util.spec_from_file_location("browser", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["browser"] = module
    spec.loader.exec_module(module)
    return module


def fit_runs(genotypes, K: int, runs: int, seed: int = 43):
    """The default fit, then ``runs - 1`` ML fits from random starts."""
    from admixspec import fit_admixture

    fits = [fit_admixture(genotypes, K, seed=seed)]
    for r in range(1, runs):
        fits.append(fit_admixture(genotypes, K, method="ml", init="random",
                                  seed=seed + r))
    return fits


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--K", type=_k_range, default=_k_range("3-5"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=ROOT / "out" / "report_figure")
    parser.add_argument("--skip-fit", action="store_true",
                        help="only remake the report and screenshot from --workdir")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from admixspec import read_genotypes
    from admixspec.fit.modes import find_modes
    from admixspec.io.admixture import format_matrix
    from admixspec.io.common import format_json, write_all_or_none
    from admixspec.io.modes import modes_outputs
    from admixspec.io.provenance import run_header, run_record
    from admixspec.report import write_report
    from admixspec.spectral.estimate import k_hint

    browser = _browser()
    if reason := browser.missing():
        print(f"cannot photograph the page: {reason}", file=sys.stderr)
        return 1
    args.workdir.mkdir(parents=True, exist_ok=True)
    prefix = args.workdir / "hapmap3"
    bed = DATA / "hapmap3.bed"
    command = "python docs/make_report_figure.py " + " ".join(argv or sys.argv[1:])
    if not args.skip_fit:
        genotypes = read_genotypes(bed)
        hint = k_hint(genotypes.dosage, seed=43)
    for K in [] if args.skip_fit else args.K:
        start = time.perf_counter()
        fits = fit_runs(genotypes, K, args.runs)
        seeds = [43 + r for r in range(args.runs)]
        modes = find_modes([f.Q for f in fits], logliks=[f.loglik for f in fits],
                           run_names=seeds)
        best = fits[modes.reference]
        seconds = time.perf_counter() - start
        provenance = {"command": command, "seed": seeds[modes.reference],
                      "source": str(bed), "k_hint": hint}
        lines = (run_header(genotypes, **provenance) + best.log_lines
                 + modes.log_lines() + [f"Elapsed: {seconds:.3f} sec"])
        record = run_record(best, genotypes, seconds=seconds, **provenance)
        record["modes"] = modes.record()
        files = {f"{prefix}.{K}.Q": format_matrix(best.Q, "Q"),
                 f"{prefix}.{K}.P": format_matrix(best.P, "P"),
                 f"{prefix}.{K}.log": "".join(f"{line}\n" for line in lines),
                 f"{prefix}.{K}.json": format_json(record),
                 **modes_outputs(prefix, K, modes)}
        write_all_or_none(files)
        print("\n".join(modes.log_lines()), f"({seconds:.0f} s)", flush=True)
    html = write_report(prefix, args.workdir / "report.html", Ks=args.K,
                        labels=DATA / "labels.tsv", sample_ids=DATA / "hapmap3.fam",
                        population_order=ORDER, command=command)
    page = browser.open_page(html, screenshot=FIGURE, width=1280, height=1900)
    print(f"wrote {FIGURE} (page idle after {page.ready_ms / 1000:.1f} s; "
          f"{len(page.errors)} console errors)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
