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
