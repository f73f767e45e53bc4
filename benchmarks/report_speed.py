"""Load time and size of ``admixspec report`` at 10,000 individuals x K = 2..8.

Issue 21 asks the report to stay responsive at 10,000 individuals and K = 2-8
(target: loads in < 3 s in a headless browser). This script writes what a run
over that range leaves behind, without fitting (the fits are not what is
measured): Q at K = 8 from :func:`admixspec.simulate_balding_nichols`, each
smaller K by merging its last component into its largest, so the panels nest
as real fits do; a bootstrap ``PREFIX.K.Q_se`` for every K; a ``PREFIX.K.log``
with a log-likelihood and CV error; and at K = 4 and 5 a second mode
(``PREFIX.K.modes.tsv`` and ``PREFIX.K.mode2.Q``, written by
:func:`admixspec.io.modes.write_modes` from 10 runs grouped by
:func:`admixspec.fit.modes.find_modes`). It then makes the report (timing it, CPU
and wall) and opens it ``--repeats`` times in Debian's headless Chromium via
``tests/browser.py``, printing the time from navigation start until Bokeh's
document is idle (every panel drawn), the CPU time the browser's processes
spent on it and the part on the page's main thread (which works one task at a
time: a lower bound of the load's wall time on an idle machine), the time a
sort by component takes, and the HTML size; it checks that every panel holds
one bar per individual, no console error and no request other than
file:/data:.

Wall times on a shared machine are upper bounds.

Usage::

    python benchmarks/report_speed.py [--n-individuals 10000] [--k-max 8]
        [--repeats 3] [--keep DIR] [--screenshot PNG]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _browser():
    path = ROOT / "tests" / "browser.py"
    spec = importlib.util.spec_from_file_location("browser", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["browser"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _cpu_seconds() -> float:
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                 resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage)


#: Sort by component 1 as a user would; milliseconds until the data are reordered
#: and two frames have been drawn after that (the panels repainted).
SORT = """
const doc = Bokeh.documents[0];
const before = doc.get_model_by_name("ancestry").data;
const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
const start = performance.now();
doc.get_model_by_name("sort").value = "c0";
while (doc.get_model_by_name("ancestry").data === before) await frame();
await frame();
await frame();
return performance.now() - start;
"""


def nested_q(n: int, k_max: int, seed: int):
    """Q at K = 2..k_max: each smaller K merges the last component into the largest."""
    from admixspec import simulate_balding_nichols

    sim = simulate_balding_nichols(n, 20, k_max, alpha=0.15, unadmixed_fraction=0.3,
                                   seed=seed)
    Qs = {k_max: sim.Q}
    for K in range(k_max - 1, 1, -1):
        Q = Qs[K + 1][:, :K].copy()
        Q[:, int(np.argmax(Q.mean(0)))] += Qs[K + 1][:, K]
        Qs[K] = Q
    return Qs, sim.populations


def write_fake_run(prefix: Path, n: int, k_max: int, seed: int = 1) -> Path:
    """A run's outputs over K = 2..k_max (see the module docstring); the labels file."""
    from admixspec import write_q
    from admixspec.fit.modes import find_modes
    from admixspec.io.admixture import format_matrix
    from admixspec.io.common import write_text
    from admixspec.io.modes import write_modes

    rng = np.random.default_rng(seed)
    Qs, populations = nested_q(n, k_max, seed)
    for K, Q in Qs.items():
        loglik = -1.0e7 + 2.0e5 * K
        write_q(f"{prefix}.{K}.Q", Q)
        write_text(f"{prefix}.{K}.Q_se",
                   format_matrix(rng.uniform(0, 0.02, Q.shape), "Q_se", clamp=False))
        write_text(f"{prefix}.{K}.log",
                   f"Loglikelihood: {loglik:.6f}\nCV error (K={K}): "
                   f"{0.5 + 0.01 * (K - 5) ** 2:.5f}\n")
        if K in (4, 5):
            # 10 runs: 7 of this solution, 3 where a component moved to the
            # 200 individuals with the most of component 0
            moved = Q.copy()
            rows = np.argsort(-Q[:, 0])[:200]
            moved[rows] = np.roll(moved[rows], 1, axis=1)
            runs, logliks = [], []
            for r in range(10):
                base = moved if r in (2, 5, 8) else Q
                noisy = np.clip(base + rng.normal(0, 1e-4, base.shape), 0, None)
                runs.append(noisy[:, rng.permutation(K)])
                logliks.append(loglik - (30.0 if r in (2, 5, 8) else 0.0) - r)
            modes = find_modes(runs, logliks=logliks)
            write_q(f"{prefix}.{K}.Q", runs[modes.reference])
            write_modes(prefix, K, modes)
            record = {"loglik": float(max(logliks)), "modes": modes.record(), "K": K,
                      "path": "spectral+ml", "command": "(benchmark: simulated outputs)"}
            write_text(f"{prefix}.{K}.json", json.dumps(record))
    labels = prefix.parent / "labels.txt"
    write_text(labels, "".join(f"{p}\n" for p in populations))
    return labels


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-individuals", type=int, default=10_000)
    parser.add_argument("--k-max", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the files here and keep them")
    parser.add_argument("--screenshot", type=Path, help="PNG of the loaded page")
    args = parser.parse_args(argv)
    browser = _browser()
    reason = browser.missing()
    if reason:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 1
    sys.path.insert(0, str(ROOT))
    from admixspec.report import write_report

    folder = args.keep or Path(tempfile.mkdtemp(prefix="report_speed_"))
    folder.mkdir(parents=True, exist_ok=True)
    prefix = folder / "bench"
    n, k_max = args.n_individuals, args.k_max
    labels = write_fake_run(prefix, n, k_max)
    html = folder / "bench.html"
    wall, cpu = time.perf_counter(), _cpu_seconds()
    write_report(prefix, html, labels=labels)
    wall, cpu = time.perf_counter() - wall, _cpu_seconds() - cpu
    size = html.stat().st_size
    print(f"report of {n} individuals x K = 2..{k_max}: written in {wall:.2f} s wall, "
          f"{cpu:.2f} s CPU; {size / 2**20:.2f} MiB ({size} bytes)")
    times, cpus, mains = [], [], []
    for repeat in range(args.repeats):
        shot = args.screenshot if repeat == args.repeats - 1 else None
        page = browser.open_page(html, screenshot=shot, scripts=[("sort", SORT)])
        times.append(page.ready_ms)
        cpus.append(page.cpu_seconds)
        mains.append(page.main_thread_seconds)
        panels = page.bars
        every_bar = all(
            p["drawn"] is not None and p["drawn"][1] == n and p["shape"][1] == n
            and p["tooltip_rows"] == n for p in panels.values())
        outside = [u for u in page.requests if not u.startswith(("file:", "data:"))]
        print(f"load {repeat + 1}: {page.ready_ms / 1000:.2f} s to idle "
              f"({page.cpu_seconds:.2f} s CPU in the browser's processes, "
              f"{page.main_thread_seconds:.2f} s of it on the page's main thread); "
              f"panels "
              f"{len(panels)}, one bar per individual in each: {every_bar}; "
              f"console errors {len(page.errors)}; non-file requests {len(outside)}; "
              f"sorting by a component took {page.results['sort'] / 1000:.2f} s")
    print(f"median load time {statistics.median(times) / 1000:.2f} s wall, "
          f"{statistics.median(cpus):.2f} s browser CPU, "
          f"{statistics.median(mains):.2f} s main-thread CPU (target < 3 s) over "
          f"{len(times)} loads")
    if not args.keep:
        print(f"(files in {folder})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
