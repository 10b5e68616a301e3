"""The nvlink check on B300: the profile's 18 links per GPU are required, nothing more.

NVML answers its NVLink capability query for every index below NVML_NVLINK_MAX_LINKS (36), an
upper bound across architectures, so code that counts slots that way sees 36 on a B300 with 18
active (https://github.com/flashinfer-ai/flashinfer/pull/3990,
https://github.com/NVIDIA/TensorRT-LLM/pull/17060). `nvidia-smi nvlink -s` on a real B300 lists
the 18 links only (tests/fixtures/samples/nvidia_smi_nvlink_s_7xb300_610_PARTIAL.txt), and the
check counts the active links it lists against the profile: were idle slots listed as
`<inactive>`, they would not be faults.
"""

from __future__ import annotations

from bringup.profiles.load import apply_overrides, load_profile
from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Action, Severity, Verdict
from tests.paths import REPO
from tests.unit.burnin.parsers._samples import load

B300, _ = load_profile("b300-sxm-8x800g", REPO / "inventories" / "profiles")
SEVEN = apply_overrides(B300, ("gpu.count=7",))  # the capture's machine: its driver saw 7 GPUs


def _nvlink(text: str, profile=SEVEN):
    return judge(ALL_CHECKS["nvlink"], CommandOutput(stdout=text, rc=0), profile)


def _with_idle_slots(text: str, down: dict[int, int] | None = None) -> str:
    """The real output with 18 more '<inactive>' slots under each GPU (as a tool counting NVML's
    36 indices would list them), and ``down`` links of a GPU made inactive."""
    out: list[str] = []
    gpu = -1
    for line in text.splitlines():
        if line.startswith("GPU "):
            if gpu >= 0:
                out += [f"         Link {n}: <inactive>" for n in range(18, 36)]
            gpu += 1
        elif (down or {}).get(gpu) is not None and line.strip() == f"Link {down[gpu]}: 53.125 GB/s":
            line = f"         Link {down[gpu]}: <inactive>"
        out.append(line)
    out += [f"         Link {n}: <inactive>" for n in range(18, 36)]
    return "\n".join(out) + "\n"


def test_a_real_b300_lists_its_18_links_and_passes() -> None:
    text = load("nvidia_smi_nvlink_s_7xb300_610_PARTIAL.txt")
    assert text.count("Link ") == 7 * 18
    r = _nvlink(text)
    assert r.verdict is Verdict.PASS, r.findings
    assert r.metrics["active_links"] == 7 * 18


def test_idle_slots_beyond_the_profiles_links_are_not_a_fault() -> None:
    r = _nvlink(_with_idle_slots(load("nvidia_smi_nvlink_s_7xb300_610_PARTIAL.txt")))
    assert r.verdict is Verdict.PASS, r.findings
    assert r.metrics["active_links"] == 7 * 18


def test_one_of_the_profiles_links_down_still_fails_among_idle_slots() -> None:
    r = _nvlink(_with_idle_slots(load("nvidia_smi_nvlink_s_7xb300_610_PARTIAL.txt"), down={3: 7}))
    assert r.verdict is Verdict.FAIL
    failed = [(f.subject, f.severity, f.action) for f in r.findings if f.severity is Severity.CRITICAL]
    assert failed == [("GPU 3", Severity.CRITICAL, Action.RMA)]
    # The down link is named; the idle slots past the profile's 18 are not called down.
    assert r.findings[0].message == "GPU 3: 17 of 18 NVLinks active (down: 7)"
