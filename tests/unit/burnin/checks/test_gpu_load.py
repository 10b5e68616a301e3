"""The gpu stage's judging under load (burnin/checks/gpu_load.py): the silent-data-corruption
compare of the stress report and the throttle reasons sampled while it ran. The DCGM
diagnostics are judged on real dcgmi outputs in test_samples.py."""

from __future__ import annotations

import pytest

from burnin.checks.gpu_load import _sdc_findings, throttle_findings
from burnin.parsers import ParseError
from burnin.parsers.nvidia_smi import ThrottleSample
from burnin.result import Action, Severity


def _gpu(index: int, **digests: str) -> dict:
    return {"index": index, "digests": digests, "mismatches": 0}


def test_gpus_that_agree_on_every_input_give_no_finding():
    assert _sdc_findings([_gpu(i, s1="aa", s2="bb") for i in range(8)]) == []


def test_the_gpu_whose_result_differs_from_the_others_is_named_for_rma():
    gpus = [_gpu(i, s1="aa") for i in range(8)]
    gpus[5] = _gpu(5, s1="ff")
    (finding,) = _sdc_findings(gpus)
    assert (finding.subject, finding.action, finding.severity) == ("GPU 5", Action.RMA, Severity.CRITICAL)


def test_a_gpu_that_disagrees_with_itself_and_one_whose_load_failed_are_findings():
    gpus = [{"index": 0, "digests": {}, "mismatches": 3}, {"index": 1, "error": "CUDA error: ECC"}]
    actions = [(f.subject, f.action) for f in _sdc_findings(gpus)]
    assert actions == [("GPU 0", Action.RMA), ("GPU 1", Action.RESET_GPU)]


def test_a_gpu_entry_that_is_not_an_object_cannot_be_judged():
    with pytest.raises(ParseError):
        _sdc_findings(["GPU 0"])


def test_hardware_throttling_under_load_is_critical_and_software_thermal_a_warning():
    samples = [
        ThrottleSample(0, 0x1, 60.0, 500.0),  # gpu_idle: normal
        ThrottleSample(3, 0x8, 85.0, 690.0),  # hw_slowdown
        ThrottleSample(6, 0x20, 88.0, 650.0),  # sw_thermal_slowdown
        ThrottleSample(7, None, None, None),  # [N/A]: nothing to judge
    ]
    found = {(f.subject, f.severity, f.action) for f in throttle_findings(samples)}
    assert found == {
        ("GPU 3", Severity.CRITICAL, Action.RESEAT),
        ("GPU 6", Severity.WARNING, Action.MONITOR),
    }
