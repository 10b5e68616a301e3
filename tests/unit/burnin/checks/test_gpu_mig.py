"""A GPU in MIG mode on a whole-GPU node: gpu_inventory warns, with the configuration to undo.

MIG splits a GPU into instances with no peer-to-peer over NVLink or PCIe, which a multi-GPU
training node's burn-in and jobs need: not a fault of the part (WARN, RECONFIGURE), never a pass
that hides it.
"""

from __future__ import annotations

from bringup.profiles.load import apply_overrides
from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Action, Severity, Verdict
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

ONE_H100 = apply_overrides(shipped(), ("gpu.count=1",))
MIG_Q = load("nvidia_smi_q_h100_mig_590_48_load.txt")


def _inventory(text: str):
    return judge(ALL_CHECKS["gpu_inventory"], CommandOutput(stdout=text, rc=0), ONE_H100)


def test_mig_mode_enabled_warns_to_turn_it_off() -> None:
    r = _inventory(MIG_Q)
    assert r.verdict is Verdict.WARN, r.findings
    assert [(f.severity, f.action, f.subject) for f in r.findings] == [
        (Severity.WARNING, Action.RECONFIGURE, "GPU 0")
    ]
    assert "MIG" in r.findings[0].message and "Enabled" in r.findings[0].evidence


def test_mig_mode_disabled_is_no_finding() -> None:
    text = MIG_Q.replace(
        "        Current                                        : Enabled\n"
        "        Pending                                        : Enabled\n",
        "        Current                                        : Disabled\n"
        "        Pending                                        : Disabled\n",
        1,
    )
    assert text != MIG_Q
    r = _inventory(text)
    assert not any("MIG" in f.message for f in r.findings), r.findings
