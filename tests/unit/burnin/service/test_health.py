"""`burnin health`'s judging half (pure): which checks, new kernel-log lines, the decision."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from bringup.lab.standins import SAMPLES_DIR
from burnin.checks import ALL_CHECKS, REGISTRY
from burnin.checks.base import CommandOutput, Service
from burnin.checks.vendor import fits_vendor
from burnin.result import Action, Result, Severity, Verdict, critical, warning
from burnin.service.health import (
    EXIT_DRAIN,
    EXIT_IN_SERVICE,
    command_limit,
    commands_of,
    decide,
    health_checks,
    judge_kernel_log,
    new_kernel_lines,
    over_budget,
)
from tests.profiles import shipped
from tests.unit.burnin.checks.test_registry import service_problems

PROFILE = shipped()
KERNEL = ALL_CHECKS["kernel_log"]


def recording(name: str) -> str:
    """A lab recording without its '# SOURCE:' line."""
    return (SAMPLES_DIR / name).read_text().split("\n", 1)[1]


BOOT = recording("dmesg_iso_8xh100_boot_DERIVED.txt")
XID79 = recording("dmesg_iso_xid79_gpu0_DERIVED.txt")  # stamped a day after the boot log


def test_the_cheap_checks_run_and_the_container_only_when_asked():
    """The checks declared for service (Check.service) that apply, in registry order; those
    declared on request only with --container (each property fails on a bogus check:
    tests/unit/burnin/checks/test_registry.py)."""
    assert service_problems(REGISTRY) == []
    names = [c.name for c in health_checks(PROFILE)]
    assert names == [
        c.name
        for c in REGISTRY
        if c.service is Service.ALWAYS and c.applies(PROFILE) and fits_vendor(c, PROFILE)
    ]
    assert "container_gpu" not in names
    assert "container_gpu" in [c.name for c in health_checks(PROFILE, container=True)]
    no_switch = shipped("gpu.nvswitch=false")
    assert "fabric_manager" not in [c.name for c in health_checks(no_switch)]


def test_one_nvidia_smi_for_three_checks_and_limits_within_the_budget():
    checks = health_checks(PROFILE)
    plan = commands_of(checks, PROFILE)
    # Each check once, under its own command; one command per distinct command line.
    assert sorted(c.name for cs in plan.values() for c in cs) == sorted(c.name for c in checks)
    assert all(c.command(PROFILE) == cmd for cmd, cs in plan.items() for c in cs)
    assert len(plan) == len({c.command(PROFILE) for c in checks})
    # The service checks reading `nvidia-smi -q` share one run of it.
    smi_q = [c.name for c in checks if "nvidia-smi -q" in c.reads]
    assert len(smi_q) > 1 and [c.name for c in plan["nvidia-smi -q"]] == smi_q
    assert command_limit(plan["nvidia-smi -q"], PROFILE, 10) == 10  # its own 90 s, cut to the budget
    assert command_limit(plan["systemctl is-active nvidia-fabricmanager"], PROFILE, 60) == 20


BOOT_ID = "1d8c0a4e-5f0b-4a43-9bde-1f2b7a6a2f10"


def shifted(text: str, delta: timedelta) -> str:
    """``text`` as dmesg prints it after the node's clock was stepped by ``delta``: dmesg makes
    each ISO stamp from the record's time since boot plus the boot time it works out from the
    clock now (util-linux dmesg), so every stamp moves by the step, old records and new."""

    def move(m: re.Match) -> str:
        stamp = datetime.fromisoformat(m.group(0).replace(",", "."))
        return (stamp + delta).isoformat(timespec="microseconds").replace(".", ",")

    return re.sub(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{6}\+00:00", move, text, flags=re.M)


def new(text: str, saved: object, boot_id: str | None = BOOT_ID):
    return new_kernel_lines(text, saved, boot_id)


def test_new_kernel_lines_since_the_cursor():
    first = new(BOOT, None)
    assert first.text == BOOT and first.reset == "no cursor: the first run"
    again = new(BOOT, first.cursor)
    assert (again.text, again.reset, again.cursor) == ("", "", first.cursor)  # nothing new
    both = new(BOOT + XID79, first.cursor)
    assert both.text == XID79 and both.reset == ""  # continuation lines (no stamp) go with their record
    assert both.cursor != first.cursor and new(BOOT + XID79, both.cursor).text == ""


def test_the_clock_stepped_back_after_the_cursor_still_shows_the_new_lines():
    """The probe: the node booted with its clock five years ahead, the last run's cursor is
    from then; chrony steps the clock back, and the Xid 79 logged after the step is stamped
    years before the last line the cursor saw. It is new, and judged."""
    ahead = shifted(BOOT, timedelta(days=5 * 365))
    saved = new(ahead, None).cursor
    after_step = shifted(BOOT + XID79, timedelta(0))  # the same records, the clock now right
    lines = new(after_step, saved)
    assert lines.text == XID79 and lines.reset == ""


def test_the_clock_stepped_forward_judges_nothing_twice():
    saved = new(BOOT, None).cursor
    lines = new(shifted(BOOT + XID79, timedelta(hours=7, microseconds=13)), saved)
    assert lines.text == shifted(XID79, timedelta(hours=7, microseconds=13)) and lines.reset == ""


def test_a_new_boot_judges_the_whole_log_and_says_so():
    saved = new(BOOT, None).cursor
    lines = new(BOOT + XID79, saved, boot_id="5e0d2b7c-0000-4000-8000-000000000001")
    assert lines.text == BOOT + XID79 and lines.reset.startswith("new boot")


def test_a_rewound_or_cleared_log_judges_what_is_there_and_says_so():
    """The last record the cursor saw is not in the log: the log was cleared (dmesg -C) or is
    not the one the cursor was made on. What is there is judged; nothing is taken as seen."""
    saved = new(BOOT + XID79, None).cursor
    lines = new(BOOT, saved)
    assert lines.text == BOOT and lines.reset.startswith("the last line judged is no longer in the log")
    cleared = new(XID79, new(BOOT, None).cursor)
    assert cleared.text == XID79 and cleared.reset


def test_a_ring_buffer_that_dropped_its_oldest_lines_keeps_the_position():
    """The kernel's ring buffer is full: its oldest records go as new ones come. The cursor's
    records are still there, so only what follows them is new."""
    saved = new(BOOT, None).cursor
    wrapped = "".join(BOOT.splitlines(keepends=True)[30:]) + XID79
    lines = new(wrapped, saved)
    assert lines.text == XID79 and lines.reset == ""


def test_an_older_cursor_a_time_stamp_is_reset_and_says_so():
    lines = new(BOOT, {"kernel_log": "2031-01-17T15:37:20,921054+00:00"})
    assert lines.text == BOOT and lines.reset.startswith("the cursor was a time stamp")
    assert new(BOOT, {"kernel_log": 3}).reset.startswith("the cursor could not be read")


def test_without_a_boot_id_the_position_still_holds():
    saved = new(BOOT, None, boot_id=None).cursor
    assert new(BOOT + XID79, saved, boot_id=None).text == XID79


def output(stdout: str, rc: int = 0, stderr: str = "") -> CommandOutput:
    return CommandOutput(stdout, stderr, rc)


def test_kernel_log_judges_only_new_lines():
    first, cursor = judge_kernel_log(KERNEL, output(BOOT), PROFILE, None, BOOT_ID)
    assert first.verdict is Verdict.PASS and cursor is not None
    assert first.metrics["cursor"] == "reset: no cursor: the first run"
    again, same = judge_kernel_log(KERNEL, output(BOOT), PROFILE, cursor, BOOT_ID)
    assert (again.verdict, again.reason, same) == (Verdict.PASS, "no new kernel-log lines", cursor)
    assert again.metrics["cursor"] == "continued"
    new, moved = judge_kernel_log(KERNEL, output(BOOT + XID79), PROFILE, cursor, BOOT_ID)
    assert new.verdict is Verdict.FAIL and moved != cursor
    assert any("Xid 79" in f.message for f in new.findings)
    assert new.metrics["new_lines"] == len(XID79.splitlines())
    # judged once: the next run does not fail on the same lines again
    later, _ = judge_kernel_log(KERNEL, output(BOOT + XID79), PROFILE, moved, BOOT_ID)
    assert later.verdict is Verdict.PASS


def test_the_clock_step_probe_fails_on_the_xid():
    """The probe as `burnin health` meets it: judged without the cursor the log FAILs, and with
    the cursor made before the clock was stepped back it FAILs too (it passed with 0 new lines)."""
    _, saved = judge_kernel_log(KERNEL, output(shifted(BOOT, timedelta(days=1826))), PROFILE, None, BOOT_ID)
    result, _ = judge_kernel_log(KERNEL, output(BOOT + XID79), PROFILE, saved, BOOT_ID)
    assert result.verdict is Verdict.FAIL and result.metrics["new_lines"] == len(XID79.splitlines())


def test_a_reset_cursor_is_a_note_in_the_result():
    _, saved = judge_kernel_log(KERNEL, output(BOOT), PROFILE, None, BOOT_ID)
    result, _ = judge_kernel_log(KERNEL, output(BOOT), PROFILE, saved, "another-boot")
    assert result.verdict is Verdict.PASS and result.metrics["cursor"].startswith("reset: new boot")
    assert any(f.severity is Severity.INFO and "new boot" in f.message for f in result.findings)


def test_kernel_log_that_could_not_be_read_is_unknown_and_keeps_the_cursor():
    saved = {"kernel_log": "c"}
    result, cursor = judge_kernel_log(
        KERNEL, output("", 1, "dmesg: read kernel buffer failed: Operation not permitted\n"), PROFILE, saved
    )
    assert result.verdict is Verdict.UNKNOWN and cursor is saved
    result, cursor = judge_kernel_log(KERNEL, output("hello\nworld\n"), PROFILE, saved)
    assert result.verdict is Verdict.UNKNOWN and cursor is saved  # not a kernel log


def test_over_budget_is_unknown():
    check = ALL_CHECKS["gpu_inventory"]
    assert over_budget(check, 10, 10).verdict is Verdict.UNKNOWN
    assert "health budget (10 s)" in over_budget(check, 10, 10).reason
    assert over_budget(check, 5, 10).reason == "timed out after 5 s"


def fail(check: str, message: str) -> Result:
    return Result.judged(check, [critical(message, Action.RESEAT)])


def test_a_failure_drains_with_its_first_critical_finding():
    results = [
        Result.judged("gpu_ecc", [warning("lifetime SBE count rising")]),
        fail("gpu_inventory", "7 GPU(s) found, the profile has 8"),
        fail("ib_ports", "mlx5_6 port 1 is Down"),
    ]
    d = decide(results, drain_on_unknown=False)
    assert (d.verdict, d.drain, d.check) == (Verdict.FAIL, True, "gpu_inventory")
    assert d.reason == "bringup: gpu_inventory: 7 GPU(s) found, the profile has 8"
    assert d.exit_code == EXIT_DRAIN


def test_unknown_drains_only_when_the_profile_says():
    results = [Result.judged("gpu_ecc"), Result.unknown("ib_ports", "the tool is not installed")]
    keep = decide(results, drain_on_unknown=False)
    assert (keep.verdict, keep.drain, keep.reason, keep.exit_code) == (
        Verdict.UNKNOWN,
        False,
        "",
        EXIT_IN_SERVICE,
    )
    drain = decide(results, drain_on_unknown=True)
    assert drain.drain and drain.reason == "bringup: ib_ports: unknown: the tool is not installed"


def test_pass_and_warn_keep_the_node_in_service():
    d = decide([Result.judged("gpu_ecc"), Result.judged("disk_usage", [warning("/ is 88% full")])], False)
    assert (d.verdict, d.drain, d.exit_code) == (Verdict.WARN, False, EXIT_IN_SERVICE)
