"""The sample index (tests/fixtures/samples/index.tsv): every judgement of a recorded tool output.

One row per judgement. A row with no check is what `burnin evaluate FILE` answers: the tool it
recognises (none: empty) and the verdict of that tool's checks. A row naming a check is what that
check alone answers (`burnin evaluate --check`). Both are judged against the row's shipped
profile with its ``--set`` overrides, and both give the actions of the critical findings.

Columns (tab-separated; a header line, then rows; '#' lines are comments):
  file       the sample, relative to the repository
  tool       the tool's name as burnin/evaluate/markers.py spells it, empty for no tool
  check      the check that judges it, empty for `burnin evaluate` without --check
  profile    a shipped profile (inventories/profiles/<name>.yml)
  overrides  `--set` items, ';'-separated: the hardware the capture came from
  run        what else the check is told of the run, ';'-separated (started_at=, finished_at=, rc=)
  verdict    PASS, WARN, FAIL or UNKNOWN
  actions    the actions of the critical findings, ';'-separated, sorted
  kind       REAL, PARTIAL, DOC, REF, FIXTURE, DERIVED or SYNTHETIC (tests/fixtures/samples/INDEX.md)
  why        the reason, read from the output and the tool's documentation
  source     where the output comes from (its '# SOURCE:' line)
  licence    the licence of the source

A known miss: a row whose `why` begins `KNOWN MISS (verdict): ...` or `KNOWN MISS (tool, verdict): ...`
is labelled from the output and the tool's documentation, and the product answers otherwise today
(the note says what it answers). The tests judging such a row expect the miss (strict xfail), so
they fail once the product answers as labelled: then the marker is removed. `tool` marks a miss of
the recognition (`burnin evaluate` names another tool or none), `verdict` a miss of the judgement
(the verdict, or the actions of its critical findings).

Everything here reads the index only, except ``tools_judged_by``: the one place that asks the
product which tools a check reads.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.paths import REPO, SAMPLES

INDEX = SAMPLES / "index.tsv"
# The directories whose every file is a sample (the lab's recordings are samples too).
SAMPLE_DIRS = (SAMPLES, REPO / "bringup" / "lab" / "standins" / "samples")
NOT_SAMPLES = {"INDEX.md", "index.tsv", "FETCH.md"}  # the index, its prose and the fetch recipes

COLUMNS = (
    "file",
    "tool",
    "check",
    "profile",
    "overrides",
    "run",
    "verdict",
    "actions",
    "kind",
    "why",
    "source",
    "licence",
)
VERDICTS = ("PASS", "WARN", "FAIL", "UNKNOWN")
KINDS = ("REAL", "PARTIAL", "DOC", "REF", "FIXTURE", "DERIVED", "SYNTHETIC")
ACTIONS = ("MONITOR", "RECONFIGURE", "RESET_GPU", "REBOOT", "RESEAT", "REPLACE_CABLE", "RMA")
RUN_KEYS = {"started_at": float, "finished_at": float, "rc": int}
REQUIRED = ("file", "profile", "verdict", "kind", "why", "source", "licence")
KNOWN_MISS = re.compile(r"^KNOWN MISS \(([a-z, ]+)\): ")
MISSES = ("tool", "verdict")


class IndexError_(ValueError):  # noqa: N801 - not the builtin IndexError
    """A malformed index: the message names the file, the line and the column."""


@dataclass(frozen=True)
class Row:
    line: int  # in index.tsv, for messages
    file: str
    tool: str | None
    check: str | None
    profile: str
    overrides: tuple[str, ...]
    run: tuple[tuple[str, float | int], ...]
    verdict: str
    actions: frozenset[str]
    kind: str
    why: str
    source: str
    licence: str

    @property
    def path(self) -> Path:
        return REPO / self.file

    @property
    def name(self) -> str:
        return Path(self.file).name

    def output(self) -> str:
        """The tool's output: the file without its '# SOURCE:' line."""
        return tool_output(self.path)

    def run_fields(self) -> dict[str, float | int]:
        """CommandOutput fields (rc 0 unless the row says otherwise)."""
        return {"rc": 0, **dict(self.run)}

    @property
    def known_miss(self) -> frozenset[str]:
        """What the product answers otherwise today: {'tool', 'verdict'}, or empty."""
        m = KNOWN_MISS.match(self.why)
        return frozenset(p.strip() for p in m.group(1).split(",")) if m else frozenset()

    def id(self) -> str:
        what = self.check or "evaluate"
        sets = f"[{';'.join(self.overrides)}]" if self.overrides else ""
        return f"{what}-{Path(self.file).stem}{sets}"


def tool_output(path: Path) -> str:
    first, _, rest = path.read_text(encoding="utf-8", errors="replace").partition("\n")
    if not first.startswith("# SOURCE:"):
        raise IndexError_(f"{path}: line 1 is not the '# SOURCE:' comment")
    return rest


def _split(cell: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in cell.split(";") if item.strip())


def parse(text: str, where: str = str(INDEX)) -> list[Row]:
    """The rows of an index's text; IndexError_ naming where, the line and the column of the
    first problem."""
    lines = text.splitlines()
    rows: list[Row] = []
    header_seen = False
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")

        def fail(column: str, message: str, number: int = number) -> IndexError_:
            col = COLUMNS.index(column) + 1 if column in COLUMNS else 1
            return IndexError_(f"{where}:{number}: column {col} ({column}): {message}")

        if not header_seen:
            if tuple(cells) != COLUMNS:
                raise IndexError_(f"{where}:{number}: column 1: the header must be {'<TAB>'.join(COLUMNS)}")
            header_seen = True
            continue
        if len(cells) != len(COLUMNS):
            column = COLUMNS[min(len(cells), len(COLUMNS)) - 1]
            raise fail(column, f"{len(cells)} columns, expected {len(COLUMNS)}")
        cell = dict(zip(COLUMNS, cells, strict=True))
        for column in COLUMNS:
            if cell[column] != cell[column].strip():
                raise fail(column, "leading or trailing blanks")
        for column in REQUIRED:
            if not cell[column]:
                raise fail(column, "empty")
        if cell["verdict"] not in VERDICTS:
            raise fail("verdict", f"{cell['verdict']!r} is not one of {', '.join(VERDICTS)}")
        if cell["kind"] not in KINDS:
            raise fail("kind", f"{cell['kind']!r} is not one of {', '.join(KINDS)}")
        actions = _split(cell["actions"])
        if odd := [a for a in actions if a not in ACTIONS]:
            raise fail("actions", f"unknown action(s) {', '.join(odd)}")
        if list(actions) != sorted(set(actions)):
            raise fail("actions", "not sorted, or repeated")
        if cell["why"].startswith("KNOWN MISS"):
            m = KNOWN_MISS.match(cell["why"])
            parts = {p.strip() for p in m.group(1).split(",")} if m else set()
            if not parts or parts - set(MISSES) or "verdict" not in parts:
                raise fail(
                    "why", "a known miss begins 'KNOWN MISS (verdict): ' or 'KNOWN MISS (tool, verdict): '"
                )
        if actions and cell["verdict"] != "FAIL":
            raise fail("actions", "critical findings' actions on a row that does not FAIL")
        overrides = _split(cell["overrides"])
        if odd := [o for o in overrides if "=" not in o or not o.split("=", 1)[0]]:
            raise fail("overrides", f"not key=value: {', '.join(odd)}")
        run: list[tuple[str, float | int]] = []
        for item in _split(cell["run"]):
            key, _, value = item.partition("=")
            if key not in RUN_KEYS:
                raise fail("run", f"unknown field {key!r} (known: {', '.join(RUN_KEYS)})")
            try:
                run.append((key, RUN_KEYS[key](value)))
            except ValueError:
                raise fail("run", f"{item!r}: not a number") from None
        if cell["file"].startswith("/") or ".." in Path(cell["file"]).parts:
            raise fail("file", "not a path inside the repository")
        rows.append(
            Row(
                line=number,
                file=cell["file"],
                tool=cell["tool"] or None,
                check=cell["check"] or None,
                profile=cell["profile"],
                overrides=overrides,
                run=tuple(run),
                verdict=cell["verdict"],
                actions=frozenset(actions),
                kind=cell["kind"],
                why=cell["why"],
                source=cell["source"],
                licence=cell["licence"],
            )
        )
    if not header_seen:
        raise IndexError_(f"{where}:1: column 1: no header line")
    _check_consistent(rows, where)
    return rows


def _check_consistent(rows: Sequence[Row], where: str) -> None:
    """A file is one tool's output from one source: its rows agree; no judgement is there twice."""
    first: dict[str, Row] = {}
    seen: dict[tuple, int] = {}
    for row in rows:
        key = (row.file, row.check, row.profile, row.overrides, row.run)
        if key in seen:
            raise IndexError_(f"{where}:{row.line}: column 1 (file): the same judgement as line {seen[key]}")
        seen[key] = row.line
        other = first.setdefault(row.file, row)
        for column in ("tool", "kind", "source", "licence"):
            if getattr(row, column) != getattr(other, column):
                col = COLUMNS.index(column) + 1
                raise IndexError_(
                    f"{where}:{row.line}: column {col} ({column}): differs from line {other.line}, "
                    f"a row of the same file"
                )


@functools.cache
def rows() -> tuple[Row, ...]:
    return tuple(parse(INDEX.read_text(encoding="utf-8")))


def evaluate_rows() -> list[Row]:
    """What `burnin evaluate FILE` answers for each sample (no check named)."""
    return [r for r in rows() if r.check is None]


def check_rows() -> list[Row]:
    return [r for r in rows() if r.check is not None]


def rows_of_check(check: str) -> list[Row]:
    return [r for r in rows() if r.check == check]


def rows_of_tool(tool: str) -> list[Row]:
    return [r for r in rows() if r.tool == tool]


def files_of_tool(tool: str) -> list[str]:
    return sorted({r.file for r in rows_of_tool(tool)})


def indexed_files() -> list[str]:
    return sorted({r.file for r in rows()})


def sample_files() -> list[str]:
    """Every file in the sample directories, relative to the repository."""
    return sorted(
        str(p.relative_to(REPO))
        for d in SAMPLE_DIRS
        for p in d.iterdir()
        if p.is_file() and p.name not in NOT_SAMPLES
    )


def tools_judged_by(check: str) -> set[str]:
    """The tools whose output the check reads. The one place this module asks the product: the
    recogniser's registry (burnin/evaluate/markers.py) names each tool's checks."""
    from burnin.evaluate.recognise import TOOLS

    return {t.name for t in TOOLS if check in t.checks}


def checks_of_tool(tool: str) -> tuple[str, ...]:
    from burnin.evaluate.recognise import find_tool

    found = find_tool(tool)
    return found.checks if found is not None else ()


def own_files(check: str) -> set[str]:
    """The samples that are the check's own tool output: the files of the tools it reads, and the
    files of the rows naming it."""
    tools = tools_judged_by(check)
    return {r.file for r in rows() if r.tool in tools or r.check == check}


def verdicts_of_check(check: str, index: Iterable[Row] | None = None) -> dict[str, list[Row]]:
    """verdict -> the rows that show the check giving it: the rows naming the check, and the
    `burnin evaluate` rows of a tool that the check alone judges (that verdict is the check's)."""
    out: dict[str, list[Row]] = {}
    for row in rows() if index is None else index:
        alone = row.check is None and row.tool is not None and checks_of_tool(row.tool) == (check,)
        if row.check == check or alone:
            out.setdefault(row.verdict, []).append(row)
    return out


def checks_lacking_samples(
    checks: Iterable[str],
    index: Iterable[Row] | None = None,
    worst: dict[str, str] | None = None,
) -> dict[str, list[str]]:
    """check -> the verdicts no sample of its own shows it giving: PASS, and FAIL (or the
    ``worst`` verdict the check can give, for one that never fails). Empty when every check
    has both."""
    index = list(rows() if index is None else index)
    lacking = {}
    for check in sorted(checks):
        shown = verdicts_of_check(check, index)
        missing = [v for v in ("PASS", (worst or {}).get(check, "FAIL")) if v not in shown]
        if missing:
            lacking[check] = missing
    return lacking
