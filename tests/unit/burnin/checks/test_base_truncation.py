"""An output is cut when its structure is incomplete, not when its last byte is not a newline
(burnin/checks/base.py ``judge``, docs/burnin.md "A cut output").

A complete tool output saved without its final newline (an operator's paste, a ticket attachment)
is judged as the output it is: a FAIL it shows must not hide behind "cut short".
"""

from __future__ import annotations

from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Verdict
from tests.paths import REPO
from tests.profiles import shipped

PROFILE = shipped()  # h100-sxm-8x400g: 8 H100 80GB HBM3, 400 Gb/s InfiniBand
STANDINS = REPO / "bringup" / "lab" / "standins" / "samples"


def _sample(name: str) -> str:
    return (STANDINS / name).read_text(encoding="utf-8").split("\n", 1)[1]


def _verdict(check: str, text: str) -> Verdict:
    return judge(ALL_CHECKS[check], CommandOutput(stdout=text), PROFILE).verdict


def test_an_ibstat_at_200g_on_a_400g_profile_fails_without_its_final_newline() -> None:
    text = _sample("ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt").replace("Rate: 400", "Rate: 200")
    assert "Rate: 200" in text and text.endswith("\n")
    assert _verdict("ib_ports", text) is Verdict.FAIL
    assert _verdict("ib_ports", text.rstrip("\n")) is Verdict.FAIL


def test_eight_rtx_4090s_on_an_h100_profile_fail_without_the_final_newline() -> None:
    text = _sample("nvidia_smi_q_8xh100_535_183.txt").replace("NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 4090")
    assert text.count("NVIDIA GeForce RTX 4090") == 8
    assert _verdict("gpu_inventory", text) is Verdict.FAIL
    assert _verdict("gpu_inventory", text.rstrip("\n")) is Verdict.FAIL
