"""bmc_gpus_seen: the GPUs the BMC lists against those nvidia-smi sees, on the lab's 8x H100
captures (healthy, and GPU 4 at 00000000:97:00.0 gone: 'Attached GPUs : 7')."""

from __future__ import annotations

import pytest

from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.checks.gpu_bmc import BmcGpusSeen
from burnin.result import Verdict
from tests.paths import REPO
from tests.profiles import shipped

SAMPLES = REPO / "bringup" / "lab" / "standins" / "samples"
HEALTHY = (SAMPLES / "nvidia_smi_q_8xh100_535_183.txt").read_text()
GPU4_GONE = (SAMPLES / "nvidia_smi_q_8xh100_535_183_gpu4_missing_DERIVED.txt").read_text()
# (slot as the BMC gives it, serial, UUID) of the eight GPUs of the healthy capture, in bus order.
GPUS = [
    ("GPU.SXM.1", "1655022005478", "566e6f65-c38e-b12f-4824-6944218668b9"),
    ("GPU.SXM.2", "1654522012780", "9930d717-21dd-7692-054e-3d0a2bae76b5"),
    ("GPU.SXM.3", "1654922018857", "973565ff-45cf-12ea-4e91-33386720f7bb"),
    ("GPU.SXM.4", "1654522012479", "6b932a61-abfd-5ea1-b26a-7dea7f2fa601"),
    ("GPU.SXM.5", "1654922016523", "726d356b-f548-bbfd-c81e-b9c68f2f1587"),
    ("GPU.SXM.6", "1655022006092", "06db64f6-6181-5a90-cf95-5ce52a58c4e5"),
    ("GPU.SXM.7", "1654522012843", "a5271aa6-4cdb-28c7-0ef5-5da271d0caae"),
    ("GPU.SXM.8", "1654922015414", "7e78e6c8-c71c-66c7-9ded-f8836cecab32"),
]
CHECK = BmcGpusSeen()


@pytest.fixture(scope="module")
def profile():
    return shipped()


def bmc(serial=True, uuid=False):
    return [
        {
            "slot": slot,
            "model": "NVIDIA H100 80GB HBM3",
            "serial": s if serial else None,
            "uuid": u if uuid else None,
        }
        for slot, s, u in GPUS
    ]


def run(gpus, smi, profile, unavailable=None):
    record = {"hardware": {"gpus": gpus, **({"unavailable": {"gpus": unavailable}} if unavailable else {})}}
    return judge(CHECK, CommandOutput(stdout=CHECK.with_record(record, smi)), profile)


def test_all_eight_seen_passes(profile):
    result = run(bmc(), HEALTHY, profile)
    assert result.verdict == Verdict.PASS and result.metrics == {"bmc_gpus": 8, "os_gpus": 8}


def test_a_gpu_the_bmc_lists_and_the_os_does_not_fails_naming_its_slot(profile):
    result = run(bmc(), GPU4_GONE, profile)
    assert result.verdict == Verdict.FAIL
    (bad,) = [f for f in result.findings if f.severity.value == "critical"]
    assert "slot GPU.SXM.5" in bad.message and "1654922016523" in bad.message and bad.subject == "GPU.SXM.5"


def test_matched_by_uuid_when_the_bmc_gives_no_serial(profile):
    assert run(bmc(serial=False, uuid=True), HEALTHY, profile).verdict == Verdict.PASS
    failed = run(bmc(serial=False, uuid=True), GPU4_GONE, profile)
    assert failed.verdict == Verdict.FAIL and any("GPU.SXM.5" in f.message for f in failed.findings)


def test_without_serial_or_uuid_a_missing_gpu_still_fails_by_count(profile):
    result = run(bmc(serial=False), GPU4_GONE, profile)
    assert result.verdict == Verdict.FAIL
    assert any("lists 8 GPUs, the OS sees 7" in f.message for f in result.findings)


def test_a_bmc_list_never_read_is_unknown_not_a_pass(profile):
    result = run(None, HEALTHY, profile, unavailable="no Processors collection")
    assert result.verdict == Verdict.UNKNOWN and "no Processors collection" in result.reason


def test_a_bmc_listing_no_gpu_has_nothing_to_compare(profile):
    result = run([], GPU4_GONE, profile)
    assert result.verdict == Verdict.PASS and result.metrics == {"bmc_gpus": 0, "os_gpus": 7}


def test_a_gpu_only_the_os_sees_is_a_warning(profile):
    result = run(bmc()[:7], HEALTHY, profile)
    assert result.verdict != Verdict.FAIL
    assert any("not listed by the BMC" in f.message and "1654922015414" in f.message for f in result.findings)


def test_it_is_a_preflight_check_sharing_the_nvidia_smi_run():
    assert ALL_CHECKS["bmc_gpus_seen"].stages == ("preflight",)
    assert ALL_CHECKS["bmc_gpus_seen"].command(None) == ALL_CHECKS["gpu_inventory"].command(None)
