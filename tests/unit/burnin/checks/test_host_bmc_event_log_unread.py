"""A BMC event log that discovery could not fully read (``event_log_unread``) is not
judged clean by the preflight's bmc_event_log check: UNKNOWN, unless what was read fails."""

from __future__ import annotations

from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Verdict
from tests.unit.burnin.checks.test_samples import PROFILE

UNREAD = {"count": 6, "why": "/redfish/v1/.../Entries lists 70 entries without their severity; ..."}


def verdict(hardware: dict):
    check = ALL_CHECKS["bmc_event_log"]
    record = {"hardware": {"event_log_read_at": "2026-11-21T00:00:00+00:00", **hardware}}
    return judge(check, CommandOutput(check.from_record({**record, "previous_check_at": None})), PROFILE)


def test_an_empty_but_not_fully_read_log_is_unknown_not_a_pass():
    result = verdict({"event_log": [], "event_log_unread": UNREAD})
    assert result.verdict is Verdict.UNKNOWN
    assert "not fully read: 6 entries of unknown severity" in result.reason


def test_a_fully_read_empty_log_passes():
    assert verdict({"event_log": []}).verdict is Verdict.PASS


def test_a_critical_entry_still_fails_when_the_rest_was_not_read():
    log = [{"id": "3", "created": "2022-06-13T12:19:21", "severity": "Critical", "message": "PSU2 lost"}]
    assert verdict({"event_log": log, "event_log_unread": UNREAD}).verdict is Verdict.FAIL
