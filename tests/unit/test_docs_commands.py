"""Every command the docs quote exists: each line and code span of docs/*.md and README.md that
starts with `bringup ` or `burnin ` is walked down the click groups to the command it names, and
that command's `--help` must answer (click's CliRunner, nothing run). docs/acceptance.md once
sent operators to `bringup nodes history`, which no release had."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from bringup.cli.main import main as bringup_main
from burnin.cli import main as burnin_main
from tests.paths import REPO

PROGRAMS: dict[str, click.Command] = {"bringup": bringup_main, "burnin": burnin_main}
_SPAN = re.compile(r"`((?:bringup|burnin) [^`]+)`")
_LINE = re.compile(r"^\s*(?:\$\s+)?((?:bringup|burnin) \S.*)$")
# Where the words of a command line stop naming commands: an option, a placeholder (NODE,
# <rack>, [...], ...), a value with a path, quote or '=' in it.
_NOT_A_NAME = re.compile(r"^(-|<|\[|\{|\.\.\.|[A-Z][A-Z0-9_]*$)|[/=\"'$|&;(),:]")
# Quoted text that starts like a command and is none: prefix -> what it is.
NOT_COMMANDS = {
    "bringup nightly run ": "the Slurm drain reason a nightly sets (docs/in-service.md)",
}


@dataclass(frozen=True)
class Quoted:
    where: str  # docs/acceptance.md:118
    text: str  # the quoted command line


def quoted_commands(paths: list[Path]) -> Iterator[Quoted]:
    for path in paths:
        fenced = False
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            where = f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}:{number}"
            found = [m.group(1) for m in _SPAN.finditer(line)] if not fenced else []
            whole = _LINE.match(line) if fenced else None  # a prose line may begin with the word
            if whole:
                found.append(whole.group(1))
            for text in found:
                if not any(text.startswith(prefix) for prefix in NOT_COMMANDS):
                    yield Quoted(where, text)


def command_path(text: str) -> tuple[list[str], str]:
    """(the words naming the command, '' or why no command has that name)."""
    words = text.split()
    program, rest = words[0], words[1:]
    command = PROGRAMS[program]
    path: list[str] = []
    ctx = click.Context(command, info_name=program)
    for word in rest:
        if not isinstance(command, click.Group) or _NOT_A_NAME.search(word):
            break
        sub = command.get_command(ctx, word)
        if sub is None:
            if any(isinstance(p, click.Argument) for p in command.params):
                break  # a group taking an argument of its own (none today): not a command name
            return path, f"`{program} {' '.join([*path, word])}`: no such command"
        path.append(word)
        command = sub
        ctx = click.Context(command, info_name=word, parent=ctx)
    return path, ""


def broken(quoted: list[Quoted]) -> list[str]:
    """'<file>:<line>: <why>' for each quoted command that does not exist or whose --help fails."""
    runner = CliRunner()
    problems, helped = [], {}
    for q in quoted:
        path, why = command_path(q.text)
        if why:
            problems.append(f"{q.where}: {why} (quoted as `{q.text}`)")
            continue
        program = q.text.split()[0]
        key = (program, *path)
        if key not in helped:
            helped[key] = runner.invoke(PROGRAMS[program], [*path, "--help"])
        res = helped[key]
        if res.exit_code != 0:
            problems.append(
                f"{q.where}: `{' '.join(key)} --help` exited {res.exit_code}: {res.output[-300:]}"
            )
    return problems


def doc_files() -> list[Path]:
    return sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]


def test_every_command_the_docs_quote_exists():
    quoted = list(quoted_commands(doc_files()))
    assert len(quoted) > 100, (
        "the docs quote commands in code spans and lines; none found: the reader is broken"
    )
    problems = broken(quoted)
    assert not problems, "commands quoted in the docs that the CLI does not have:\n" + "\n".join(problems)


def test_a_doc_naming_a_command_that_does_not_exist_fails(tmp_path):
    doc = tmp_path / "bogus.md"
    doc.write_text(
        "Run `bringup nodes show NODE` for its record, then\n\n"
        "```\nbringup nodes frobnicate --rack r12\nburnin accept --rack r12 --delivery po1\n```\n"
        "and `burnin no-such-command --json`.\n"
    )
    problems = broken(list(quoted_commands([doc])))
    assert len(problems) == 2, problems
    assert "bogus.md:4: `bringup nodes frobnicate`: no such command" in problems[0]
    assert "bogus.md:7: `burnin no-such-command`: no such command" in problems[1]


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("bringup nodes mark-repaired NODE --reason x", ["nodes", "mark-repaired"]),
        ("burnin accept --rack r12 --delivery po-4500012345", ["accept"]),
        ("bringup lab up", ["lab", "up"]),
    ],
)
def test_the_words_after_a_command_are_its_arguments(text, path):
    assert command_path(text) == (path, "")
