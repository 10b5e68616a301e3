"""The host error catalog: every error the parser names has a rule with a public source, and a
report's part lines find their record."""

from __future__ import annotations

import re
from pathlib import Path

from burnin.checks.host_error_catalog import CE_LIMIT, HOST_ERRORS, PARTS, host_error_findings
from burnin.parsers.kernel_log import HostErrorEvent
from burnin.result import Action, Severity

HOST_ERRORS_PY = Path(__file__).resolve().parents[4] / "burnin" / "parsers" / "host_errors.py"


def test_every_error_the_parser_names_has_a_rule_or_is_a_part() -> None:
    named = set(re.findall(r'"((?:edac|mce|ghes|nvme|mlx5)_\w+)"', HOST_ERRORS_PY.read_text()))
    assert named, "the parser names no error: the pattern above no longer reads it"
    assert named - set(HOST_ERRORS) - set(PARTS) == set()


def test_every_rule_cites_a_public_page_and_a_critical_one_says_what_to_do() -> None:
    for key, rule in HOST_ERRORS.items():
        assert rule.source.startswith("https://"), key
        if rule.severity is Severity.CRITICAL:
            assert rule.action is not Action.MONITOR, key


def event(
    error: str, location: str | None = None, record: str | None = None, count: int = 1
) -> HostErrorEvent:
    return HostErrorEvent(
        raw=error, message=error, error=error, location=location, record=record, count=count
    )


def test_a_dimm_reaches_the_limit_across_lines_and_another_does_not() -> None:
    findings = host_error_findings(
        [
            event("edac_ce", "DIMM_A1", count=CE_LIMIT - 1),
            event("edac_ce", "DIMM_B1"),
            event("edac_ce", "DIMM_A1"),
        ]
    )
    assert [(f.subject, f.action) for f in findings] == [("DIMM_A1", Action.RMA), ("DIMM_B1", Action.MONITOR)]


def test_a_part_line_joins_its_own_record_only() -> None:
    findings = host_error_findings(
        [
            event("ghes_fatal", record="{1}"),
            event("ghes_corrected", record="{2}"),
            event("ghes_part", "CPU 2 DIMM 30", record="{2}"),
            event("ghes_part", "CPU 0 DIMM 1", record="{1}"),
        ]
    )
    assert [(f.severity, f.subject) for f in findings] == [
        (Severity.CRITICAL, "CPU 0 DIMM 1"),
        (Severity.WARNING, "CPU 2 DIMM 30"),
    ]
