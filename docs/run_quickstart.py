"""Run the quick start's command block verbatim (used by CI).

Extracts the single ```bash block between ``<!-- quickstart:begin -->`` and
``<!-- quickstart:end -->`` in docs/quickstart.md and runs it with
``bash -euo pipefail`` in the given directory (default: the repository root),
echoing each command. Exit status: that of bash.

Usage::

    python docs/run_quickstart.py [DIRECTORY]
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

QUICKSTART = Path(__file__).resolve().parent / "quickstart.md"


def commands() -> str:
    """The quick start's runnable block, as a bash script."""
    text = QUICKSTART.read_text()
    blocks = re.findall(
        r"<!-- quickstart:begin -->\s*```bash\n(.*?)```\s*<!-- quickstart:end -->",
        text,
        re.S,
    )
    if len(blocks) != 1:
        raise SystemExit(
            f"{QUICKSTART}: expected one marked bash block, found {len(blocks)}"
        )
    return blocks[0]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    where = Path(argv[0]) if argv else QUICKSTART.parent.parent
    script = commands()
    command = ["bash", "-euxo", "pipefail", "-c", script]
    return subprocess.run(command, cwd=where).returncode


if __name__ == "__main__":
    sys.exit(main())
