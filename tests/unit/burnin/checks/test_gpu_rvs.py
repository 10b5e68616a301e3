"""amd_rvs: the node's command and the edges the samples (index.tsv rows of amd_rvs) do not show."""

from __future__ import annotations

from bringup.profiles.load import apply_overrides, load_profile
from burnin.checks.base import CommandOutput, judge
from burnin.checks.gpu_rvs import AmdRvs
from burnin.result import Action, Verdict
from burnin.stages import stage_checks
from tests.profiles import SHIPPED_DIR, shipped
from tests.unit.burnin.parsers._samples import load

MODULES = ("gst", "iet", "pebb", "pbqt", "babel")


def _mi300x(*overrides: str):
    profile, problems = load_profile("mi300x-8x400g", SHIPPED_DIR)
    assert profile is not None, problems
    return apply_overrides(profile, overrides)


def _node_output(outputs: list[str], rcs: list[int], ended: bool = True) -> str:
    """What the command prints: each rvs output in rvs-N, its exit status in rc-N, then the end."""
    parts = [
        f"@@burnin-section rvs-{i}\n{text}@@burnin-section rc-{i}\n{rc}\n"
        for i, (text, rc) in enumerate(zip(outputs, rcs, strict=True))
    ]
    return "".join(parts) + ("@@burnin-section end\n" if ended else "")


def _passing() -> list[str]:
    # The guide abridged gst's output (GPUs without a final line); iet shows all 8 and passes.
    return [load("rvs_iet_8xmi355x_doc.txt")] * 5


def test_the_gpu_stage_runs_rvs_on_amd_and_dcgm_on_nvidia() -> None:
    assert [c.name for c in stage_checks("gpu", _mi300x())] == ["amd_rvs", "nccl_local"]
    assert "amd_rvs" not in [c.name for c in stage_checks("gpu", shipped())]
    assert {"dcgm_diag", "gpu_stress"} <= {c.name for c in stage_checks("gpu", shipped())}
    assert [c.name for c in stage_checks("gpu", _mi300x("diag.rvs_confs=[]"))] == ["nccl_local"]


def test_the_command_runs_each_conf_of_the_profile_under_rvs_conf_dir() -> None:
    command = AmdRvs().command(_mi300x())
    runs = [line for line in command.splitlines() if line.startswith("rvs ")]
    assert runs == [
        f"rvs -c /opt/rocm/share/rocm-validation-suite/conf/MI300X/{m}_single.conf" for m in MODULES[:4]
    ] + ["rvs -c /opt/rocm/share/rocm-validation-suite/conf/MI300X/babel.conf"]
    assert command.splitlines()[-2:] == ["echo '@@burnin-section end'", "exit $rc"]
    assert AmdRvs().timeout(_mi300x()) == 90 * 60


def test_every_conf_run_to_its_summary_passes() -> None:
    result = judge(AmdRvs(), CommandOutput(_node_output(_passing(), [0] * 5), rc=0), _mi300x())
    assert result.verdict is Verdict.PASS, result.reason


def test_a_conf_that_never_ran_or_an_output_without_its_end_is_unknown() -> None:
    four = _node_output(_passing()[:4], [0] * 4, ended=False)
    result = judge(AmdRvs(), CommandOutput(four, rc=None), _mi300x())
    assert result.verdict is Verdict.UNKNOWN and "babel.conf did not run" in result.reason


def test_rvs_missing_on_the_node_is_unknown() -> None:
    text = _node_output(["bash: rvs: command not found\n"] * 5, [127] * 5)
    result = judge(AmdRvs(), CommandOutput(text, rc=127), _mi300x())
    assert result.verdict is Verdict.UNKNOWN and "not installed" in result.reason


def test_a_non_zero_exit_with_every_test_passed_is_not_a_pass() -> None:
    result = judge(AmdRvs(), CommandOutput(_node_output(_passing(), [0, 0, 1, 0, 0]), rc=1), _mi300x())
    assert result.verdict is Verdict.UNKNOWN and "exited 1" in result.reason


def test_a_timed_out_run_is_unknown() -> None:
    output = CommandOutput(_node_output(_passing(), [0] * 5), timed_out=True)
    assert judge(AmdRvs(), output, _mi300x()).verdict is Verdict.UNKNOWN


def test_a_failed_gpu_is_named_with_its_action_whatever_the_other_confs_show() -> None:
    outputs = _passing()
    outputs[1] = load("rvs_iet_8xmi355x_gpu3_power_fail_DERIVED.txt")
    result = judge(AmdRvs(), CommandOutput(_node_output(outputs, [0, 1, 0, 0, 0]), rc=1), _mi300x())
    assert result.verdict is Verdict.FAIL
    (finding,) = result.findings
    assert (
        finding.subject == "GPU 3"
        and finding.action is Action.RESEAT
        and "iet_single.conf" in finding.message
    )


def test_an_action_failed_in_the_summary_alone_fails_the_node() -> None:
    text = load("rvs_babel_8xmi355x_doc.txt").replace("| BABEL          | PASS", "| BABEL          | FAIL")
    result = judge(AmdRvs(), CommandOutput(text), _mi300x())
    assert result.verdict is Verdict.FAIL and [f.action for f in result.findings] == [Action.RMA]


def test_an_rvs_error_line_puts_a_pass_in_doubt() -> None:
    text = load("rvs_pebb_8xmi355x_doc.txt").replace(
        "[RESULT] [302349.671479] Module name :pebb\n",
        "[RESULT] [302349.671479] Module name :pebb\n[ERROR ] [302349.7] pebb: hsa_amd_memory_pool_allocate failed\n",
    )
    assert judge(AmdRvs(), CommandOutput(text), _mi300x()).verdict is Verdict.UNKNOWN
