"""`burnin health`'s judging half (pure): which checks, new kernel-log lines, the decision."""

from __future__ import annotations

from bringup.lab.standins import SAMPLES_DIR
from burnin.checks import ALL_CHECKS, REGISTRY
from burnin.checks.base import CommandOutput, Service
from burnin.result import Action, Result, Verdict, critical, warning
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
    assert names == [c.name for c in REGISTRY if c.service is Service.ALWAYS and c.applies(PROFILE)]
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


def test_new_kernel_lines_since_the_cursor():
    text, cursor = new_kernel_lines(BOOT, None)
    assert text == BOOT and cursor == BOOT.splitlines()[-1].split()[0]
    assert new_kernel_lines(BOOT, cursor) == ("", cursor)  # nothing new
    both = BOOT + XID79
    text, moved = new_kernel_lines(both, cursor)
    assert text == XID79  # continuation lines (no stamp) go with their record
    assert moved == [line.split()[0] for line in XID79.splitlines() if line[:4].isdigit()][-1]


def test_a_cleared_log_or_one_from_before_the_cursor_has_nothing_new():
    _, cursor = new_kernel_lines(XID79, None)
    assert new_kernel_lines(BOOT, cursor) == ("", cursor)


def output(stdout: str, rc: int = 0, stderr: str = "") -> CommandOutput:
    return CommandOutput(stdout, stderr, rc)


def test_kernel_log_judges_only_new_lines():
    first, cursor = judge_kernel_log(KERNEL, output(BOOT), PROFILE, None)
    assert first.verdict is Verdict.PASS and cursor is not None
    again, same = judge_kernel_log(KERNEL, output(BOOT), PROFILE, cursor)
    assert (again.verdict, again.reason, same) == (Verdict.PASS, "no new kernel-log lines", cursor)
    new, moved = judge_kernel_log(KERNEL, output(BOOT + XID79), PROFILE, cursor)
    assert new.verdict is Verdict.FAIL and moved != cursor
    assert any("Xid 79" in f.message for f in new.findings)
    assert new.metrics["new_lines"] == len(XID79.splitlines())
    # judged once: the next run does not fail on the same lines again
    later, _ = judge_kernel_log(KERNEL, output(BOOT + XID79), PROFILE, moved)
    assert later.verdict is Verdict.PASS


def test_kernel_log_that_could_not_be_read_is_unknown_and_keeps_the_cursor():
    result, cursor = judge_kernel_log(
        KERNEL, output("", 1, "dmesg: read kernel buffer failed: Operation not permitted\n"), PROFILE, "c"
    )
    assert result.verdict is Verdict.UNKNOWN and cursor == "c"
    result, cursor = judge_kernel_log(KERNEL, output("hello\nworld\n"), PROFILE, "c")
    assert result.verdict is Verdict.UNKNOWN and cursor == "c"  # not a kernel log


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
