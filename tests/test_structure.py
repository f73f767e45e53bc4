"""The house's structure: functions short enough to read, split into named phases."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "admixspec"
#: Most lines of code (docstring excluded: numpydoc docstrings are long by rule).
MAX_CODE_LINES = 80
#: A longer function says why in its docstring, in a sentence starting so.
REASON = "Long because"


def _long_functions():
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            docstring = ast.get_docstring(node) or ""
            lines = node.end_lineno - node.lineno + 1
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                lines -= first.end_lineno - first.lineno + 1
            if lines > MAX_CODE_LINES and REASON not in docstring:
                where = path.relative_to(PACKAGE.parent)
                yield f"{where}:{node.lineno} {node.name} ({lines})"


def test_functions__at_most_80_lines_of_code_or_say_why():
    long = list(_long_functions())
    assert not long, (
        f"split into named phases, or give the reason ('{REASON} ...') in the "
        f"docstring: {long}"
    )
