"""The imex_domain check (burnin/checks/imex.py): the IMEX daemon and its NVLink domain on NVL72."""

from __future__ import annotations

from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Action, Verdict
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

CHECK = ALL_CHECKS["imex_domain"]
NVL72 = shipped("gpu.multi_node_nvlink=true")
UP = load("nvidia_imex_ctl_N_18_trays_up_DERIVED.txt")
NODE7_DOWN = load("nvidia_imex_ctl_N_18_trays_node7_down_DERIVED.txt")


def judged(text: str, rc: int = 0):
    return judge(CHECK, CommandOutput(stdout=text, rc=rc), NVL72)


def test_it_applies_only_where_the_profile_says_the_rack_is_the_nvlink_domain():
    assert CHECK.applies(NVL72) and not CHECK.applies(shipped())
    assert CHECK.stages == ("preflight",) and "gpu.multi_node_nvlink" in CHECK.judges


def test_a_whole_domain_passes_with_its_counts():
    result = judged(UP)
    assert result.verdict is Verdict.PASS
    assert (
        result.metrics["nodes"] == 18 and result.metrics["ready"] == 18 and result.metrics["not_ready"] == {}
    )


def test_a_node_missing_from_the_domain_fails_naming_that_node():
    result = judged(NODE7_DOWN)
    assert result.verdict is Verdict.FAIL
    (finding,) = result.findings
    assert "#7 (10.20.3.18)" in finding.message and "UNAVAILABLE" in finding.message
    assert finding.subject == "10.20.3.18" and finding.action is Action.REBOOT
    assert result.metrics["not_ready"] == {"10.20.3.18": "UNAVAILABLE"}


def test_a_one_way_fault_between_ready_nodes_fails_naming_the_pair():
    text = UP.replace("       2        C   C   C   C   C", "       2        C   C   C   C   D", 1)
    result = judged(text.replace("Domain State: UP", "Domain State: DEGRADED"))
    assert result.verdict is Verdict.FAIL
    assert "#2 (10.20.3.13) -> #4 (10.20.3.15): D" in result.findings[0].message


def test_a_domain_not_up_with_every_node_ready_still_fails():
    result = judged(UP.replace("Domain State: UP", "Domain State: DEGRADED"))
    assert result.verdict is Verdict.FAIL and "DEGRADED" in result.findings[0].message


def test_a_stopped_daemon_fails_to_be_started_not_unknown():
    result = judged("IMEX daemon: inactive\n", rc=1)
    assert result.verdict is Verdict.FAIL and result.findings[0].action is Action.RECONFIGURE


def test_a_running_daemon_that_prints_no_domain_is_unknown_never_a_pass():
    result = judged("IMEX daemon: active\n", rc=1)
    assert result.verdict is Verdict.UNKNOWN
