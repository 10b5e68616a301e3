"""Per-node signals read back from a real fleet store: failures by stage, component and part,
repairs with their reasons, drains, Xid counts, time in each state, each with its source row."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bringup.fleet.models import utcnow
from bringup.fleet.store import FleetStore
from burnin.history.read import read_signals
from burnin.history.signals import classify, gpu_serials
from burnin.stages.group import stage_components
from tests.unit.burnin.history.writer import PastWriter

NOW = utcnow().replace(microsecond=0)


def day(n: float):
    return NOW - timedelta(days=n)


@pytest.fixture
def past(store_url) -> PastWriter:
    store = FleetStore(store_url)
    w = PastWriter(store)
    w.golden("gpu001", "r01", day(60))
    w.golden("gpu002", "r01", day(60))
    w.golden("gpu009", "r02", day(60))
    return w


def test_every_signal_of_a_node_with_its_source(past):
    past.fail("gpu001", day(20), "GPU 5", message="GPU 5 (0000:9b:00.0): row remapping failed")
    past.repair("gpu001", day(19), "ticket 42: GPU 5 replaced")
    past.xids("gpu001", day(10), {79: 2, 13: 4})
    past.fail("gpu001", day(10), "mlx5_3 port 1", stage="ib", check="ib_ports")
    past.drain("gpu001", day(9), "drained in Slurm by operator: cable")
    past.fail("gpu001", day(40), "GPU 2")  # outside the 28-day window

    history = read_signals(past.store, "r01", timedelta(days=28), now=NOW)
    assert set(history.signals) == {"gpu001", "gpu002"}  # --rack
    sig = history.signals["gpu001"]
    assert [f.time for f in sig.failures] == [day(20), day(10)]
    assert all(str(f.source).startswith("events #") for f in sig.failures)
    assert [(r.time, r.reason) for r in sig.repairs] == [(day(19), "ticket 42: GPU 5 replaced")]
    assert [d.reason for d in sig.drains] == ["drained in Slurm by operator: cable"]
    assert sig.failures_by_component() == {"gpu": 1, "hca_port": 1}
    assert sig.failures_by_stage() == {"gpu": 1, "ib": 1}
    assert sig.failures_by_part() == {"GPU 5": 1, "mlx5_3 port 1": 1}
    assert all(str(c.source).startswith("check_results #") for c in sig.components)
    assert sig.xid_counts() == {79: 2, 13: 4}
    assert sig.xid_counts(since=day(5)) == {}
    # time in state: 28 days in all, ~1 day failed then repair/burn-in before golden again
    assert sum(sig.time_in_state.values(), timedelta(0)) == timedelta(days=28)
    assert sig.time_in_state["failed"] == timedelta(days=1 + 10)  # until the repair; unrepaired since day 10
    assert sig.node_days == pytest.approx(28)
    quiet = history.signals["gpu002"]
    assert (
        not quiet.failures and not quiet.components and quiet.time_in_state == {"golden": timedelta(days=28)}
    )


def test_failed_time_counts_until_the_repair(past):
    past.fail("gpu002", day(5), "GPU 1")
    past.repair("gpu002", day(3), "reseated GPU 1", back_after=timedelta(days=1))
    sig = read_signals(past.store, "r01", timedelta(days=28), now=NOW).signals["gpu002"]
    assert sig.time_in_state["failed"] == timedelta(days=2)
    assert sig.time_in_state["repair"] == timedelta(days=1)  # repair -> burnin -> golden a day later
    assert sig.time_in_state["golden"] == timedelta(days=25)


def test_a_retired_node_stops_counting_node_days(past):
    past.dated.transition("gpu009", "retired", "end of life", day(14))
    sig = read_signals(past.store, "r02", timedelta(days=28), now=NOW).signals["gpu009"]
    assert sig.node_days == pytest.approx(14)


@pytest.mark.parametrize(
    "subject, stage, expected",
    [
        ("GPU 5", "gpu", ("gpu", "GPU 5")),
        ("GPU 0000:9b:00.0", "preflight", ("gpu", "GPU 0000:9b:00.0")),
        ("mlx5_4 port 1", "ib", ("hca_port", "mlx5_4 port 1")),
        ("0000:1a:00.0 (Gen5 x16)", "pcie", ("pcie", "0000:1a:00.0")),
        ("DIMM A3", "preflight", ("dimm", "DIMM A3")),
        ("", "ib", ("hca_port", "ib")),
        ("/", "preflight", ("other", "/")),
    ],
)
def test_a_finding_subject_names_its_component(subject, stage, expected):
    assert classify(subject, stage, stage_components()) == expected


def test_a_group_stage_component_comes_from_the_stage_not_the_history():
    """The pure history knows the single-node stages; the group stages' parts come with the call."""
    assert classify("", "ib") == ("other", "ib")
    assert classify("", "ib", stage_components()) == ("hca_port", "ib")


def test_a_gpu_slot_gets_its_serial_from_the_hardware_record():
    assert gpu_serials({"gpus": [{"index": 5, "serial": "1652922001234"}, {"index": 6}]}) == {
        "GPU 5": "1652922001234"
    }
    assert gpu_serials(None) == {} and gpu_serials({"gpus": "garbage"}) == {}


def test_a_bring_up_failure_is_not_a_node_failure(store_url):
    w = PastWriter(FleetStore(store_url))
    w.dated.enroll("gpu007", "r03", "h100-sxm-8x400g", day(30))
    with w.dated.at("gpu007", day(20)):
        w.store.transition("gpu007", "discovered", "found")
        w.store.transition("gpu007", "provisioning", "pxe")
        w.store.transition("gpu007", "failed", "installer timed out")
    sig = read_signals(w.store, "r03", timedelta(days=28), now=NOW).signals["gpu007"]
    assert sig.failures == [] and sig.time_in_state["failed"] == timedelta(days=20)


def test_a_gpu_named_by_its_pcie_address_is_the_slot_another_finding_names_there():
    """The lab's lemon: nvidia-smi's finding says "GPU 7 (0000:ca:00.0, ...)", the kernel log's
    Xid names "GPU 0000:ca:00.0": one GPU, one part (it was two before)."""
    from types import SimpleNamespace

    from burnin.history.signals import component_failures

    def result(check: str, subject: str, message: str):
        finding = {"severity": "critical", "subject": subject, "message": message}
        return SimpleNamespace(
            verdict="FAIL", findings=[finding], stage="preflight", check=check, time=NOW, id=1
        )

    rows = [
        result(
            "gpu_ecc", "GPU 7", "GPU 7 (0000:ca:00.0, serial 1654922015414): 1 volatile dram uncorrectable"
        ),
        result("kernel_log", "GPU 0000:CA:00.0", "Xid 48 ROBUST_CHANNEL_GPU_ECC_DBE on GPU 0000:ca:00.0"),
        result("kernel_log", "GPU 0000:9b:00.0", "Xid 79 on GPU 0000:9b:00.0"),  # no slot known for it
    ]
    # one part, named by the serial the nvidia-smi finding of the same time gives it
    gpu7 = "GPU 7 (serial 1654922015414)"
    assert [c.part for c in component_failures(rows)] == [gpu7, gpu7, "GPU 0000:9b:00.0"]


def test_remediations_count_as_repairs_once_each(past):
    """Every rung `burnin remediate` carried out is a repair, its command worked or not
    (docs/in-service.md, "Remediation"); the move to repair it made is not counted again."""
    fail_at = (day(12), day(9), day(6), day(3))
    for i, at in enumerate(fail_at):
        if past.store.get_node("gpu001").state == "golden":
            past.fail("gpu001", at, "GPU 3", check="kernel_log", stage="health")
        ok = i % 2 == 1  # two power cycles whose BMC did not answer, two that worked
        details = {"rung": "power_cycle", "check": "kernel_log", "acted": True, "ok": ok}
        past.dated.record_event(
            "gpu001",
            "remediation",
            "power_cycle",
            at + timedelta(hours=1),
            actor="burnin remediate",
            details=details,
        )
        if ok:
            past.dated.transition(
                "gpu001",
                "repair",
                "remediated (power_cycle)",
                at + timedelta(hours=1),
                actor="burnin remediate",
            )
            with past.dated.at("gpu001", at + timedelta(hours=2)):
                past.store.transition("gpu001", "burnin", "nightly")
                past.store.transition("gpu001", "golden", "nightly")
    sig = read_signals(past.store, "r01", timedelta(days=28), now=NOW).signals["gpu001"]
    assert len(sig.repairs) == 4
    assert all(r.reason.startswith("remediation") for r in sig.repairs)
    from burnin.history.lemons import LemonPolicy, judge_node

    verdict = judge_node(sig, LemonPolicy(), "28 days", rate=0.0065)
    assert verdict is not None and "repairs" in verdict.rules
