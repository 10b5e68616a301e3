"""What the `bringup` and `burnin` command lines share: the group class that turns errors into one
line, the global options, and the store and inventory directory they name.

Errors (docs/architecture.md): a ``UserError`` is something the user can fix, printed as one red
line (exit 1). Click's own exceptions (usage errors, ``Exit``, ``Abort``) pass through to click.
Anything else is a bug in this project: with ``--debug`` (or ``BRINGUP_DEBUG=1``) it is raised
with its traceback; without, the traceback goes to a log file and one line points at it (exit 70,
EX_SOFTWARE).
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from bringup.cli.ui import err_console
from bringup.core.errors import GateRefusal, UserError
from bringup.fleet.store import FleetStore
from bringup.inventory.rack import default_inventory_dir

# The exit codes of every command (README.md, "Exit codes", holds the same table).
EXIT_OK = 0
EXIT_FAILED = 1  # a verdict FAIL, a step failed on some nodes
EXIT_USER_ERROR = 1  # a UserError: one line naming what to fix
EXIT_USAGE = 2  # click's usage error
EXIT_CANNOT_START = 3  # the in-service commands: nothing judged (their 1 means drain)
EXIT_REFUSED = GateRefusal.exit_code  # the state gate admitted no node: nothing done
EXIT_INTERNAL_ERROR = 70  # sysexits.h EX_SOFTWARE
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as the shell reports it
EXIT_CODES = {
    EXIT_OK: "done",
    EXIT_FAILED: "a verdict FAIL, a failed step, or an error to fix (one error: line)",
    EXIT_USAGE: "usage error",
    EXIT_CANNOT_START: "could not start",
    EXIT_REFUSED: "refused by the state gate",
    EXIT_INTERNAL_ERROR: "internal error",
    EXIT_INTERRUPTED: "interrupted",
}
_DEBUG_KEY = "bringup.debug"
_CLICK_OWN = (click.ClickException, click.exceptions.Exit, click.Abort)


def debug_enabled(ctx: click.Context | None = None) -> bool:
    if ctx is not None and _DEBUG_KEY in ctx.meta:
        return bool(ctx.meta[_DEBUG_KEY])
    return os.environ.get("BRINGUP_DEBUG", "").lower() in ("1", "true", "yes", "on")


def log_dir() -> Path:
    """Where tracebacks of internal errors go: $BRINGUP_LOG_DIR, else ~/.local/state/bringup."""
    configured = os.environ.get("BRINGUP_LOG_DIR")
    return Path(configured) if configured else Path.home() / ".local" / "state" / "bringup"


def write_traceback(exc: BaseException, argv: list[str] | None = None) -> Path:
    """Write ``exc``'s traceback (and the command line) to a new file in log_dir()."""
    directory = log_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"internal-error-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    command = " ".join(argv if argv is not None else sys.argv)
    path.write_text(f"command: {command}\n\n{text}", encoding="utf-8")
    return path


def _say(line: str) -> None:
    err_console.print(line, highlight=False, soft_wrap=True)


class FriendlyGroup(click.Group):
    """A click group that prints a UserError as one line and reports anything else as a bug."""

    program = "bringup"  # named in the internal-error line ("a bug in bringup")

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except _CLICK_OWN:
            raise
        except UserError as exc:
            _say(f"[red]error:[/red] {escape(str(exc))}")
            sys.exit(exc.exit_code)
        except Exception as exc:
            if debug_enabled(ctx):
                raise
            self._internal_error(exc)

    def _internal_error(self, exc: Exception) -> None:
        what = f"{type(exc).__name__}: {exc}"
        try:
            where = f"the traceback is in {write_traceback(exc)}"
        except OSError as log_exc:  # an unwritable log dir must not hide the bug itself
            traceback.print_exception(type(exc), exc, exc.__traceback__)
            where = f"the traceback is above (could not write a log file: {log_exc})"
        _say(
            f"[red]internal error:[/red] {escape(what)} (a bug in {self.program}; {where}; --debug shows it)"
        )
        sys.exit(EXIT_INTERNAL_ERROR)


def _remember_debug(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    ctx.meta[_DEBUG_KEY] = bool(value) or debug_enabled()
    return value


def global_options(func: Any) -> Any:
    """--db, --inventory-dir and --debug, the options every command line of the project takes."""
    func = click.option(
        "--debug",
        is_flag=True,
        default=False,
        is_eager=True,
        expose_value=False,
        callback=_remember_debug,
        help="Show the traceback of an internal error (env BRINGUP_DEBUG=1).",
    )(func)
    func = click.option(
        "--inventory-dir",
        envvar="BRINGUP_INVENTORY_DIR",
        type=click.Path(path_type=Path),
        default=None,
        help="Where rack inventories live (default: ./inventories).",
    )(func)
    return click.option(
        "--db",
        envvar="BRINGUP_DB",
        default=None,
        metavar="PATH|URL",
        help="Fleet store: a SQLite file path or an SQLAlchemy URL (postgresql://...). "
        "Default: $BRINGUP_DB, else ~/.local/share/bringup/fleet.db.",
    )(func)


def set_global_options(ctx: click.Context, db: str | None, inventory_dir: Path | None) -> None:
    ctx.ensure_object(dict)
    ctx.obj.update(db=db, inventory_dir=inventory_dir or default_inventory_dir())


def store_from(ctx: click.Context) -> FleetStore:
    """The fleet store named by the root command's --db, opened once per invocation."""
    obj = ctx.find_root().obj
    if "store" not in obj:
        obj["store"] = FleetStore.open(obj["db"])
    return obj["store"]


def inventory_dir_from(ctx: click.Context) -> Path:
    return ctx.find_root().obj["inventory_dir"]
