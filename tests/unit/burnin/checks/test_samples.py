"""Every check judges real tool outputs (tests/fixtures/samples, the lab's recordings) as the sample
index (tests/fixtures/samples/index.tsv) says it should: the verdict, and the action of each
critical finding. The rows naming a check are judged here; the rows without one (what `burnin
evaluate FILE` answers) in tests/unit/burnin/evaluate/test_recognise.py."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bringup.profiles.load import apply_overrides, load_profile
from burnin.checks.base import CommandOutput, judge
from burnin.cli import main
from burnin.evaluate.handed_in import judging_checks
from tests import sample_index
from tests.paths import REPO
from tests.profiles import shipped

PROFILES = REPO / "inventories" / "profiles"
PROFILE = shipped()  # the shipped profile, as other check tests import it from here
ROWS = sample_index.check_rows()
IDS = [row.id() for row in ROWS]


def _expecting_miss(rows: list[sample_index.Row], prefix: str = "") -> list:
    """The rows, one the index marks as a known miss expected to fail (strict: the test fails
    once the check answers as labelled, and the marker is removed)."""
    return [
        pytest.param(
            row,
            id=f"{prefix}{row.id()}",
            marks=[pytest.mark.xfail(strict=True, reason=f"known miss: {row.why[:120]}")]
            if "verdict" in row.known_miss
            else [],
        )
        for row in rows
    ]


def _profile(row: sample_index.Row):
    profile, problems = load_profile(row.profile, PROFILES)
    assert profile is not None, problems
    return apply_overrides(profile, row.overrides)


def _judged(row: sample_index.Row):
    output = CommandOutput(stdout=row.output(), **row.run_fields())
    return judge(judging_checks()[row.check], output, _profile(row))


@pytest.mark.parametrize("row", _expecting_miss(ROWS))
def test_sample_verdicts(row: sample_index.Row) -> None:
    result = _judged(row)
    assert result.verdict.value == row.verdict, (row.line, result.to_dict())
    critical = {f.action.value for f in result.findings if f.severity.value == "critical"}
    assert critical == row.actions, (row.line, result.to_dict())


# A finding the product gives with neither evidence nor subject: bmc_event_log's closing info line
# 'event log read at ...' (burnin/checks/host.py). Strict: the test says so once it names either.
_NAMES_NEITHER = {"bmc_event_log"}
FAILING = [
    pytest.param(
        row,
        id=row.id(),
        marks=[pytest.mark.xfail(strict=True, reason="an info finding names neither")]
        if row.check in _NAMES_NEITHER
        else [],
    )
    for row in ROWS
    if row.verdict == "FAIL"
]


@pytest.mark.parametrize("row", FAILING)
def test_every_finding_names_evidence_or_subject(row: sample_index.Row) -> None:
    for f in _judged(row).findings:
        assert f.message and (f.evidence or f.subject), (row.check, row.file, f)


# `burnin evaluate` has no controller clock to give a check: rows told of the run's times are
# judged above only.
CLI_ROWS = [row for row in ROWS if not {"started_at", "finished_at"} & dict(row.run).keys()]


@pytest.mark.parametrize("row", _expecting_miss(CLI_ROWS, "cli-"))
def test_burnin_evaluate_prints_the_verdict(tmp_path, row: sample_index.Row) -> None:
    """The same judgement through the command an operator runs on a saved output."""
    saved = tmp_path / "output.txt"
    saved.write_text(row.output(), encoding="utf-8")
    sets = [arg for item in row.overrides for arg in ("--set", item)]
    args = [
        "--inventory-dir",
        str(REPO / "inventories"),
        "evaluate",
        "--check",
        row.check,
        "--profile",
        row.profile,
        *sets,
        "--json",
        str(saved),
    ]
    res = CliRunner().invoke(main, args)
    assert json.loads(res.stdout)["verdict"] == row.verdict, res.output
    assert res.exit_code == (0 if row.verdict in ("PASS", "WARN") else 1)
    text = CliRunner().invoke(main, args[:-2] + [str(saved)])
    assert f"{row.check}: {row.verdict}" in text.stdout
