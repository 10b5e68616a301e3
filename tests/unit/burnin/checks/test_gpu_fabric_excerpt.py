"""gpu_fabric_state on a bare Fabric block of `nvidia-smi -q` (a grep excerpt pasted in a ticket):
what it shows is judged, a failure stands, and it never passes, since the node's other GPUs (and
which GPU this block is) are unseen, as for every cut output (docs/burnin.md, "A cut output")."""

from __future__ import annotations

from bringup.profiles.load import load_profile
from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.evaluate.handed_in import evaluate_text
from burnin.result import Action, Severity, Verdict
from tests.paths import REPO
from tests.unit.burnin.parsers._samples import load

CHECK = ALL_CHECKS["gpu_fabric_state"]
GB200, _ = load_profile("gb200-nvl72-tray", REPO / "inventories" / "profiles")
UNHEALTHY = load("nvidia_smi_q_fabric_grep_gb200_health_unhealthy_PARTIAL.txt")
EXCERPT_TOOL = "nvidia-smi -q (Fabric excerpt)"


def _judged(text: str):
    return judge(CHECK, CommandOutput(stdout=text, rc=0), GB200)


def test_an_unhealthy_fabric_in_an_excerpt_fails() -> None:
    r = _judged(UNHEALTHY)
    assert r.verdict is Verdict.FAIL, r
    assert [(f.severity, f.action) for f in r.findings] == [(Severity.CRITICAL, Action.REBOOT)]
    assert "Unhealthy" in r.findings[0].message


def test_a_healthy_excerpt_never_passes() -> None:
    r = _judged(UNHEALTHY.replace("Unhealthy", "Healthy"))
    assert r.verdict is Verdict.UNKNOWN, r
    assert "other GPUs" in r.reason


def test_a_registration_in_progress_in_an_excerpt_fails() -> None:
    text = UNHEALTHY.replace("Completed", "In Progress")
    r = _judged(text)
    assert r.verdict is Verdict.FAIL
    assert {f.action for f in r.findings if f.severity is Severity.CRITICAL} == {Action.RECONFIGURE}


def test_burnin_evaluate_recognises_the_excerpt_as_the_fabric_check_input() -> None:
    evaluation = evaluate_text(UNHEALTHY, GB200)
    assert evaluation.tool == EXCERPT_TOOL
    assert evaluation.checks == ("gpu_fabric_state",)
    assert evaluation.verdict is Verdict.FAIL


def test_a_whole_nvidia_smi_q_is_not_taken_for_an_excerpt() -> None:
    whole = load("nvidia_smi_q_8xh100_535_183.txt")
    evaluation = evaluate_text(whole, GB200)
    assert evaluation.tool == "nvidia-smi -q"
    assert all(c.tool.name != EXCERPT_TOOL for c in evaluation.recognition.candidates)


def test_text_without_a_fabric_block_is_no_excerpt() -> None:
    assert evaluate_text("        State : Completed\n        Status : Success\n", GB200).tool is None


def test_a_last_line_cut_inside_a_healthy_value_is_no_failure() -> None:
    healthy = UNHEALTHY.replace("Unhealthy", "Healthy").rstrip("\n").removesuffix("\n--")
    for cut in ("Full", "Fu", "F"):
        r = _judged(healthy.removesuffix("Full") + cut)
        assert r.verdict is Verdict.UNKNOWN, (cut, r)
    r = _judged(healthy.replace("Bandwidth                     : Full", "").rstrip() + "\n")
    assert r.verdict is Verdict.UNKNOWN
    summary_cut = healthy[: healthy.index("Healthy") + len("Heal")]
    assert _judged(summary_cut).verdict is Verdict.UNKNOWN


def test_a_last_line_with_a_failing_value_still_fails_without_its_newline() -> None:
    text = UNHEALTHY[: UNHEALTHY.index("Unhealthy") + len("Unhealthy")]
    assert not text.endswith("\n")
    assert _judged(text).verdict is Verdict.FAIL
