"""The command lines' error contract (bringup/cli/common.py): a UserError is one red line and
exit 1; anything else is a bug: one "internal error" line pointing at a log file holding the
traceback (exit 70), or the traceback itself with --debug; click's own exceptions pass."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from bringup.cli.common import EXIT_INTERNAL_ERROR, FriendlyGroup, global_options, set_global_options
from bringup.cli.main import main
from bringup.core.errors import BadInput, UserError
from tests.paths import REPO


@click.group(cls=FriendlyGroup)
@global_options
@click.pass_context
def cli(ctx, db, inventory_dir):
    set_global_options(ctx, db, inventory_dir)


@cli.command()
@click.argument("what")
def fail(what):
    if what == "user":
        raise BadInput("rack r01 has no host(s) gpu99")
    if what == "bug":
        raise KeyError("serial")
    if what == "usage":
        raise click.UsageError("--iso goes with boot cd")
    if what == "exit":
        raise click.exceptions.Exit(3)
    if what == "abort":
        raise click.Abort()


@cli.group(cls=FriendlyGroup)
def sub():
    pass


@sub.command()
def deep():
    raise ZeroDivisionError("division by zero")


@pytest.fixture
def runner(tmp_path, monkeypatch):
    monkeypatch.setenv("BRINGUP_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.delenv("BRINGUP_DEBUG", raising=False)
    return CliRunner()


def test_a_user_error_is_one_red_line_and_exit_1(runner, tmp_path):
    result = runner.invoke(cli, ["fail", "user"])
    assert result.exit_code == 1
    assert result.stderr == "error: rack r01 has no host(s) gpu99\n"
    assert not (tmp_path / "logs").exists()


def test_an_internal_error_is_one_line_pointing_at_the_log(runner, tmp_path):
    result = runner.invoke(cli, ["fail", "bug"])
    assert result.exit_code == EXIT_INTERNAL_ERROR == 70
    [log] = (tmp_path / "logs").iterdir()
    assert log.name.startswith("internal-error-") and log.name.endswith(".log")
    line = " ".join(result.stderr.split())  # rich may wrap a long line
    assert line == (
        f"internal error: KeyError: 'serial' (a bug in bringup; the traceback is in {log}; --debug shows it)"
    )
    assert "Traceback" not in result.output
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "KeyError: 'serial'" in text
    assert 'raise KeyError("serial")' in text


def test_an_internal_error_in_a_nested_group_is_reported_once(runner, tmp_path):
    result = runner.invoke(cli, ["sub", "deep"])
    assert result.exit_code == 70
    assert result.stderr.count("internal error") == 1 and "ZeroDivisionError" in result.stderr
    assert len(list((tmp_path / "logs").iterdir())) == 1


@pytest.mark.parametrize("how", [["--debug"], []])
def test_debug_shows_the_traceback(runner, tmp_path, monkeypatch, how):
    if not how:
        monkeypatch.setenv("BRINGUP_DEBUG", "1")
    result = runner.invoke(cli, [*how, "fail", "bug"])
    assert isinstance(result.exception, KeyError) and result.exit_code == 1  # raised, not handled
    assert "internal error" not in result.output
    assert not (tmp_path / "logs").exists()


def test_debug_leaves_user_errors_one_line(runner):
    result = runner.invoke(cli, ["--debug", "fail", "user"])
    assert result.exit_code == 1 and result.stderr == "error: rack r01 has no host(s) gpu99\n"


def test_clicks_own_exceptions_pass_through(runner, tmp_path):
    usage = runner.invoke(cli, ["fail", "usage"])
    assert usage.exit_code == 2 and "Error: --iso goes with boot cd" in usage.stderr
    assert runner.invoke(cli, ["fail", "exit"]).exit_code == 3
    aborted = runner.invoke(cli, ["fail", "abort"])
    assert aborted.exit_code == 1 and "Aborted!" in aborted.stderr
    assert not (tmp_path / "logs").exists()


def test_an_unwritable_log_dir_still_shows_the_bug(runner, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("BRINGUP_LOG_DIR", str(blocker / "logs"))
    result = runner.invoke(cli, ["fail", "bug"])
    assert result.exit_code == 70
    assert "Traceback" in result.stderr and "could not write a log file" in result.stderr


def test_a_bad_value_is_a_one_line_error_not_an_internal_error(runner, tmp_path):
    """Values that used to be plain ValueErrors (caught by the old CLI) are BadInput now."""
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    inv = tmp_path / "inventories"
    inv.mkdir()
    result = runner.invoke(
        main,
        ["--db", str(tmp_path / "f.db"), "--inventory-dir", str(inv)]
        + ["power", "status", "--rack", "r01", "--insecure", "--ca-bundle", str(ca)],
    )
    assert result.exit_code == 1, result.output
    assert result.stderr == "error: --insecure and --ca-bundle contradict each other; pick one\n"
    state = runner.invoke(main, ["--db", str(tmp_path / "f.db"), "nodes", "list", "--rack", "r01"])
    assert state.exit_code == 0
    missing = runner.invoke(
        main, ["--db", str(tmp_path / "f.db"), "--inventory-dir", str(inv), "discover", "--rack", "r01"]
    )
    assert missing.exit_code == 1 and missing.stderr.startswith("error: rack r01 is not valid:")
    assert "internal error" not in missing.stderr


def test_user_error_base_is_what_is_caught():
    assert issubclass(BadInput, UserError) and issubclass(BadInput, ValueError)


def test_bringup_help_imports_neither_the_lab_nor_bcrypt():
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from bringup.cli.main import main\n"
        "r = CliRunner().invoke(main, ['--help'])\n"
        "assert r.exit_code == 0 and 'lab ' in r.output, r.output\n"
        "print(sorted(m for m in sys.modules if m.startswith('bringup.lab') or m.startswith('bcrypt')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_lab_group_loads_when_asked_and_its_listed_help_is_its_own():
    from bringup.lab.cli import lab

    listed = CliRunner().invoke(main, ["--help"]).output
    assert lab.get_short_help_str(45).split()[0:4] == ["The", "virtual", "rack:", "fake"]
    assert main.lazy["lab"][1] == lab.help.strip()
    assert "lab" in listed
    result = CliRunner().invoke(main, ["lab", "--help"])
    assert result.exit_code == 0 and "Usage: main lab" in result.output and "up" in result.output
