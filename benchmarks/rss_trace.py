"""A command's resident memory over time, beside its log lines, and its peak.

Runs the command, samples its resident set size (``VmRSS`` of
``/proc/PID/status``, Linux) every 0.1 s and prints a line whenever it moved by
more than 20 MiB, interleaved with the command's stderr (admixspec's log), each
line prefixed by the seconds since the start; the last line gives the peak and
when it was sampled. So the stage that sets a run's peak can be read off.

The streamed CPU pipeline of docs/benchmarks.md ("The same pipeline on the
CPU"): a 10,000 x 120,000 Balding-Nichols fileset written as the biobank
setting's (benchmarks/gpu_speed.py), then the default under ``--memory 1024``:
  python -c "import sys; sys.path.insert(0, 'benchmarks'); import gpu_speed; \\
      gpu_speed.write_biobank('bb', 10000, 120000, 5, threads=2)"
  python benchmarks/rss_trace.py python -m admixspec run bb.bed -K 5 \\
      --memory 1024 --device cpu -j 2 -s 12 --out bb1024
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

#: Seconds between samples, and the change in MiB that prints a sample.
INTERVAL, STEP = 0.1, 20


def resident_mib(pid: int) -> float | None:
    """``VmRSS`` of a process in MiB (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def main(command) -> int:
    start = time.perf_counter()
    child = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             text=True)
    peak = [0.0, 0.0]

    def sample():
        printed = -STEP
        while child.poll() is None:
            rss = resident_mib(child.pid)
            if rss is None:
                return
            seconds = time.perf_counter() - start
            if rss > peak[0]:
                peak[:] = [rss, seconds]
            if abs(rss - printed) > STEP:
                print(f"{seconds:8.1f}  RSS {rss:8.0f} MiB", flush=True)
                printed = rss
            time.sleep(INTERVAL)

    threading.Thread(target=sample, daemon=True).start()
    for line in child.stderr:
        print(f"{time.perf_counter() - start:8.1f}  {line.rstrip()}", flush=True)
    code = child.wait()
    print(f"peak RSS {peak[0]:.0f} MiB at {peak[1]:.1f} s; exit {code}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
