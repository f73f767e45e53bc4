"""The documentation is current: generated CLI reference, links, quick start."""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _generator(name="generate_cli_reference"):
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _all_parsers():
    from admixspec.cli import get_parser

    parser = get_parser()
    parsers = {"admixspec": parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                parsers[f"admixspec {name}"] = sub
    return parsers


class TestCliReference:
    def test_cli_reference__committed_file_is_current(self):
        committed = (DOCS / "cli.md").read_text()
        assert committed == _generator().render(), (
            "docs/cli.md is stale: run python docs/generate_cli_reference.py"
        )

    def test_cli_reference__every_flag_of_every_subcommand_appears(self):
        text = (DOCS / "cli.md").read_text()
        parsers = _all_parsers()
        assert len(parsers) > 1, "the CLI has no subcommands"
        for name, parser in parsers.items():
            if name != "admixspec":
                assert f"## {name}\n" in text, name
            section = text.split(f"## {name}\n", 1)[-1].split("\n## ", 1)[0]
            for action in parser._actions:
                if action.help == argparse.SUPPRESS or isinstance(
                    action, argparse._HelpAction
                ):
                    continue
                for flag in action.option_strings:
                    assert f"`{flag}`" in section, f"{name} {flag} not in docs/cli.md"


class TestApiReference:
    def test_api_reference__committed_file_is_current(self):
        committed = (DOCS / "api.md").read_text()
        assert committed == _generator("generate_api_reference").render(), (
            "docs/api.md is stale: run python docs/generate_api_reference.py"
        )

    def test_api_reference__lists_every_top_level_name(self):
        import admixspec

        text = (DOCS / "api.md").read_text()
        top = text.split("### `admixspec`\n", 1)[1].split("\n### ", 1)[0]
        for name in admixspec.__all__:
            if name != "__version__":
                assert f"- `{name}` (" in top, f"{name} not in docs/api.md"


class TestDocsPages:
    @pytest.mark.parametrize(
        "page",
        ["index.md", "quickstart.md", "method.md", "formats.md", "faq.md",
         "benchmarks.md", "workflow.md", "cli.md", "api.md", "../CHANGELOG.md"],
    )
    def test_docs_page__exists_and_relative_links_resolve(self, page):
        path = DOCS / page
        text = path.read_text()
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target or target.startswith("mailto:"):
                continue
            assert (path.parent / target).exists(), f"{page} links to missing {target}"

    def test_readme__links_the_docs(self):
        readme = (ROOT / "README.md").read_text()
        for page in ("docs/quickstart.md", "docs/cli.md", "docs/faq.md", "docs/api.md",
                     "CHANGELOG.md"):
            assert page in readme, f"README.md does not link {page}"

    def test_quickstart__has_one_marked_runnable_block(self):
        text = (DOCS / "quickstart.md").read_text()
        blocks = re.findall(
            r"<!-- quickstart:begin -->\s*```bash\n(.*?)```\s*<!-- quickstart:end -->",
            text,
            re.S,
        )
        assert len(blocks) == 1
        assert "admixspec run" in blocks[0] and "admixspec plot" in blocks[0]

    def test_ci__runs_the_readmes_two_commands_verbatim(self):
        readme = (ROOT / "README.md").read_text()
        first_block = re.search(r"```bash\n(.*?)```", readme, re.S).group(1)
        commands = first_block.strip().splitlines()
        assert commands[0].startswith("pip install -e '.[test]' && admixspec run")
        assert commands[1] == "python -m pytest"
        ci = (ROOT / ".ci" / "run").read_text().splitlines()
        run = [line.split(" || ")[0] for line in ci]  # `cmd || status=$?` runs cmd
        for command in commands:
            assert command in run, f".ci/run does not run {command!r} verbatim"
        assert not [line for line in ci if "pip install" in line and "[" in line
                    and line != commands[0]], "CI installs more than the README says"


def _measured_paragraph() -> str:
    """README's "Measured (...)" paragraph, the one that quotes benchmark figures."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("\nMeasured (") + 1
    return readme[start:readme.index("\n\n", start)]


def _figures(text: str) -> list[str]:
    """Numbers in ``text`` outside backticks (commands and commits are in backticks);
    a ratio keeps its ``×`` ("1.03×" must be quoted as a ratio)."""
    prose = re.sub(r"`[^`]*`", " ", text.replace("\n", " "))
    number = r"[−-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e-\d+)?"
    return re.findall(rf"(?<![\w.,]){number}(?:×|(?![\w]))", prose)


def _missing_figures(paragraph: str, page: str) -> list[str]:
    return [figure for figure in _figures(paragraph)
            if not re.search(rf"(?<![\d.]){re.escape(figure)}(?![\d])", page)]


class TestNumbersHaveSources:
    def test_readme__every_measured_figure_is_on_the_benchmarks_page(self):
        benchmarks = (DOCS / "benchmarks.md").read_text()
        paragraph = _measured_paragraph()
        assert len(_figures(paragraph)) >= 10, paragraph  # it quotes measurements
        missing = _missing_figures(paragraph, benchmarks)
        assert not missing, f"README quotes figures docs/benchmarks.md lacks: {missing}"

    def test_readme__cites_the_commits_the_benchmarks_page_names(self):
        benchmarks = (DOCS / "benchmarks.md").read_text()
        commits = re.findall(r"`([0-9a-f]{7,40})`", _measured_paragraph())
        assert commits, "README's measured paragraph names no commit"
        assert all(f"`{commit}`" in benchmarks for commit in commits), commits

    def test_missing_figures__flags_a_figure_the_page_lacks(self):
        # the README once said "within 1.03× of the better"; the suite showed 1.00
        # (a page of its own: the benchmarks page now quotes 1.03× elsewhere)
        page = "| suite | ratio 1.00 | 1.031 | 11.03× |"
        assert _missing_figures("within 1.03× of the better (ratio 1.00)",
                                page) == ["1.03×"]

    @pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
    def test_docs__measured_at_commits_exist(self, page):
        import shutil
        import subprocess

        text = (DOCS / page).read_text()
        commits = set(re.findall(r"[Mm]easured at (?:the tree of )?`([0-9a-f]{7,40})`",
                                 text))
        git = shutil.which("git")
        if not commits or git is None or not (ROOT / ".git").exists():
            return  # nothing cited, or no history to check against (an sdist)
        shallow = subprocess.run([git, "rev-parse", "--is-shallow-repository"],
                                 cwd=ROOT, capture_output=True, text=True).stdout
        if shallow.strip() == "true":
            return
        for commit in commits:
            found = subprocess.run([git, "cat-file", "-e", f"{commit}^{{commit}}"],
                                   cwd=ROOT, capture_output=True)
            assert found.returncode == 0, f"{page} cites unknown commit {commit}"
