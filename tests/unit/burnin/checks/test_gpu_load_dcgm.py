"""DCGM diagnostics judged per run level (burnin/checks/gpu_load.py, DcgmDiag): every test the
level runs must have run on every GPU, and DCGM's error codes are read even on a test that says
pass. Real outputs are judged in test_samples.py; these are the edges they do not show."""

from __future__ import annotations

import json

import pytest

from burnin.checks.base import CommandOutput, judge
from burnin.checks.gpu_load import DcgmDiag
from burnin.parsers.dcgmi import LEVEL_TESTS, canonical_test
from burnin.result import Action, Severity, Verdict
from tests.profiles import shipped

GPUS = range(8)
CATEGORY = {
    "software": "Deployment",
    "pcie": "Integration",
    "memory": "Hardware",
    "diagnostic": "Hardware",
    "memtest": "Hardware",
    "pulse_test": "Hardware",
    "memory_bandwidth": "Stress",
    "targeted_stress": "Stress",
    "targeted_power": "Stress",
}


def _json4(
    statuses: dict[str, dict[int, str]], warnings: dict[tuple[str, int], list[dict]] | None = None
) -> str:
    """A DCGM 4.x 'dcgmi diag -j' document (shape of dcgm_diag_schema.json): test -> GPU -> status."""
    warnings = warnings or {}
    cats: dict[str, list[dict]] = {}
    for name, per_gpu in statuses.items():
        results = []
        for gpu, status in per_gpu.items():
            res = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": gpu, "status": status}
            if (name, gpu) in warnings:
                res["warnings"] = warnings[(name, gpu)]
            results.append(res)
        summary = "Fail" if "Fail" in per_gpu.values() else next(iter(per_gpu.values()))
        cats.setdefault(CATEGORY.get(name, "Hardware"), []).append(
            {"name": name, "results": results, "test_summary": {"status": summary}}
        )
    doc = {
        "DCGM Diagnostic": {"test_categories": [{"category": c, "tests": t} for c, t in cats.items()]},
        "metadata": {"version": "4.2.3", "Driver Version Detected": "570.124.06"},
    }
    return json.dumps(doc, indent=2) + "\n"


def _level(level: int, status: str = "Pass") -> dict[str, dict[int, str]]:
    return {name: {g: status for g in GPUS} for name in LEVEL_TESTS[level]}


def _judge(text: str, *overrides: str):
    return judge(DcgmDiag(), CommandOutput(stdout=text), shipped(*overrides))


# -- a test skipped or not run is never a pass --------------------------------------------------


def test_all_pass_at_the_profiles_level_passes():
    result = _judge(_json4(_level(3)))
    assert result.verdict is Verdict.PASS, result.to_dict()


def test_a_run_in_which_every_test_was_skipped_is_unknown():
    result = _judge(_json4(_level(3, "Skip")))
    assert result.verdict is Verdict.UNKNOWN, result.to_dict()
    assert "skipped" in result.reason


def test_dcgm3_json_with_every_test_skipped_is_unknown():
    """DCGM 3.x spelling of an all-skipped r3 run ('gpu_id', title-case 'Skip'), as
    https://github.com/NVIDIA/DCGM/issues/139 shows it."""
    names = {
        "Deployment": ["Denylist", "NVML Library", "Persistence Mode"],
        "Integration": ["PCIe"],
        "Hardware": ["GPU Memory", "Diagnostic"],
        "Stress": ["Targeted Stress", "Targeted Power", "Memory Bandwidth"],
    }
    doc = {
        "DCGM GPU Diagnostic": {
            "test_categories": [
                {
                    "category": cat,
                    "tests": [{"name": n, "results": [{"gpu_id": "0", "status": "Skip"}]} for n in tests],
                }
                for cat, tests in names.items()
            ],
            "version": "3.3.1",
        }
    }
    result = _judge(json.dumps(doc))
    assert result.verdict is Verdict.UNKNOWN, result.to_dict()


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_each_required_test_skipped_or_missing_is_never_a_pass(level):
    """The property, for every level and every test the level runs: one test skipped on one GPU,
    or absent from the output, makes the run UNKNOWN; the same output with the test present and
    passing is a PASS (so the property can fail)."""
    override = f"diag.dcgm_level={level}"
    assert _judge(_json4(_level(level)), override).verdict is Verdict.PASS
    for name in LEVEL_TESTS[level]:
        skipped = _level(level)
        skipped[name][5] = "Skip"
        result = _judge(_json4(skipped), override)
        assert result.verdict is Verdict.UNKNOWN, (name, result.to_dict())
        assert name in result.reason and "GPU 5" in result.reason
        missing = {k: v for k, v in _level(level).items() if k != name}
        if missing:
            result = _judge(_json4(missing), override)
            assert result.verdict is Verdict.UNKNOWN, (name, result.to_dict())
            assert name in result.reason


def test_a_test_the_level_does_not_run_may_be_skipped():
    statuses = _level(3)
    statuses["memtest"] = {g: "Skip" for g in GPUS}  # a level-4 test
    assert _judge(_json4(statuses)).verdict is Verdict.PASS


def test_a_test_the_profile_says_does_not_apply_may_be_skipped():
    statuses = _level(4)
    statuses["pulse_test"] = {g: "Skip" for g in GPUS}
    assert _judge(_json4(statuses), "diag.dcgm_level=4").verdict is Verdict.UNKNOWN
    result = _judge(_json4(statuses), "diag.dcgm_level=4", "diag.dcgm_not_applicable=[pulse_test]")
    assert result.verdict is Verdict.PASS, result.to_dict()
    # ... but a failure of it is still read
    statuses["pulse_test"][2] = "Fail"
    result = _judge(_json4(statuses), "diag.dcgm_level=4", "diag.dcgm_not_applicable=[pulse_test]")
    assert result.verdict is Verdict.FAIL


def test_an_unknown_test_name_in_the_profile_is_refused():
    from bringup.core.errors import BadInput

    with pytest.raises(BadInput, match="dcgm_not_applicable"):
        shipped("diag.dcgm_not_applicable=[pulse]")


def test_a_lower_level_output_says_its_level_and_what_did_not_run():
    result = _judge(_json4(_level(2)))  # the profile asks for level 3
    assert result.verdict is Verdict.UNKNOWN
    assert "level 2" in result.reason and "inferred" in result.reason
    assert "diagnostic" in result.reason and "targeted_power" in result.reason
    assert result.metrics["output_level"] == 2


def test_the_level_the_output_states_is_taken_over_the_inferred_one():
    text = "$ dcgmi diag -r 4 -j\n" + _json4(_level(3))
    result = _judge(text, "diag.dcgm_level=4")
    assert result.verdict is Verdict.UNKNOWN
    assert "level 4" in result.reason and "stated" in result.reason
    assert "memtest" in result.reason and "pulse_test" in result.reason


@pytest.mark.parametrize(
    ("name", "category", "canonical"),
    [
        ("GPU Memory", "Hardware", "memory"),
        ("memory", "Hardware", "memory"),
        ("Denylist", "Deployment", "software"),
        ("Permissions and OS Blocks", None, "software"),
        ("software", "Deployment", "software"),
        ("Targeted Stress", "Stress", "targeted_stress"),
        ("Pulse Test", "Hardware", "pulse_test"),
        ("EUD Test", "Hardware", "eud"),
        ("PCIe", "Integration", "pcie"),
    ],
)
def test_canonical_test_names(name, category, canonical):
    assert canonical_test(name, category) == canonical


# -- DCGM's error codes are judged even on a test that says pass --------------------------------


def _pass_with(error_id: int, severity: int, message: str, name: str = "memory"):
    return _json4(
        _level(3),
        {
            (name, 3): [
                {"warning": message, "error_id": error_id, "error_category": 1, "error_severity": severity}
            ]
        },
    )


def test_a_pass_with_a_memory_allocation_error_is_not_a_pass():
    """The memory test reports DCGM_FR_MEMORY_ALLOC (56, TRIAGE) and still says pass
    (https://github.com/NVIDIA/DCGM/issues/284): it did not test the memory it should have."""
    result = _judge(_pass_with(56, 4, "Cannot allocate memory on GPU 3"))
    assert result.verdict is Verdict.UNKNOWN, result.to_dict()
    (finding,) = result.findings
    assert finding.severity is Severity.WARNING and finding.subject == "GPU 3"
    assert "MEMORY_ALLOC" in finding.message


def test_a_pass_with_an_isolate_error_fails_and_names_the_gpu():
    result = _judge(_pass_with(52, 2, "Found 4 faulty memory elements on GPU 3"))
    assert result.verdict is Verdict.FAIL, result.to_dict()
    (finding,) = result.findings
    assert (finding.action, finding.subject) == (Action.RMA, "GPU 3")


def test_a_pass_with_a_reset_error_fails_with_a_reset():
    result = _judge(_pass_with(85, 6, "GPU 3 has a pending row remap."))
    assert result.verdict is Verdict.FAIL
    assert [f.action for f in result.findings] == [Action.RESET_GPU]


def test_a_pass_with_a_monitor_error_warns():
    result = _judge(_pass_with(51, 1, "Error calling cudaFree on GPU 3"))
    assert result.verdict is Verdict.WARN, result.to_dict()


def test_a_pass_whose_error_says_the_test_was_skipped_is_a_skip():
    result = _judge(_pass_with(117, 5, "The test was skipped on GPU 3", name="diagnostic"))
    assert result.verdict is Verdict.UNKNOWN, result.to_dict()
    assert "diagnostic" in result.reason


def test_a_warning_row_under_a_passing_test_in_a_text_table_is_read():
    text = "\n".join(
        [
            "+---------------------------+------------------------------------------------+",
            "| Diagnostic                | Result                                         |",
            "+===========================+================================================+",
            "|-----  Deployment  --------+------------------------------------------------|",
            "| Denylist                  | Pass                                           |",
            "+-----  Integration  -------+------------------------------------------------+",
            "| PCIe                      | Pass - All                                     |",
            "| Warning                   | GPU 1 PCIe replay count is 12                  |",
            "+-----  Hardware  ----------+------------------------------------------------+",
            "| GPU Memory                | Pass - All                                     |",
            "+---------------------------+------------------------------------------------+",
            "",
        ]
    )
    result = _judge(text, "diag.dcgm_level=2")
    assert result.verdict is Verdict.WARN, result.to_dict()
    assert [f.subject for f in result.findings] == ["GPU 1"]


def test_a_run_that_saw_fewer_gpus_than_the_profile_does_not_pass_the_node():
    """A real HGX B300 whose driver saw 7 of its 8 GPUs passed DCGM level 3 on those 7: the
    eighth was never diagnosed, so the run is UNKNOWN on the 8-GPU profile (its absence is
    gpu_inventory's finding), and a pass held to the 7 GPUs it saw."""
    statuses = {name: {g: "Pass" for g in range(7)} for name in LEVEL_TESTS[3]}
    short = _judge(_json4(statuses), "diag.dcgm_level=3")
    assert short.verdict is Verdict.UNKNOWN, short.to_dict()
    assert "7 GPU(s), the profile has 8" in short.to_dict()["reason"]
    assert _judge(_json4(statuses), "diag.dcgm_level=3", "gpu.count=7").verdict is Verdict.PASS
