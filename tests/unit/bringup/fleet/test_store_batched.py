"""FleetStore.add_results_many: the results of many nodes in one transaction.

At 1,000 nodes the burn-in wrote one transaction per node and one query per output; what a
fan-out has in at one moment is now one write. It must keep what add_results promised: all or
none, evidence stored once, a golden node that fails leaves golden.
"""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from bringup.fleet.models import CheckResult, EvidenceBlob
from bringup.fleet.store import FleetStore, NodeNotFound, StoreError

SMI_Q = "==============NVSMI LOG==============\nAttached GPUs : 8\n" * 50


def _store(url: str, nodes: int) -> FleetStore:
    store = FleetStore(url)
    for i in range(1, nodes + 1):
        store.enroll(f"gpu{i:03d}", "r01", "h100-sxm-8x400g")
    return store


def _count(store: FleetStore, model: type) -> int:
    with store.reading() as s:
        return s.execute(select(func.count()).select_from(model)).scalar_one()


def _rows(node: str) -> list[dict]:
    return [
        {"stage": "preflight", "check": "gpu_inventory", "verdict": "PASS", "evidence": SMI_Q},
        {"stage": "preflight", "check": "gpu_ecc", "verdict": "PASS", "evidence": SMI_Q},
        {"stage": "preflight", "check": "kernel_log", "verdict": "WARN", "evidence": f"dmesg of {node}\n"},
        {"stage": "preflight", "check": "bmc_event_log", "verdict": "UNKNOWN", "evidence": None},
    ]


def test_several_nodes_in_one_call_each_with_its_results_and_shared_evidence_once(store_url):
    store = _store(store_url, 3)
    store.add_results_many([(n, _rows(n)) for n in ("gpu001", "gpu002", "gpu003")], run_id=None)
    assert _count(store, CheckResult) == 12
    assert _count(store, EvidenceBlob) == 4  # one nvidia-smi -q for all three, a dmesg each
    for node in ("gpu001", "gpu002", "gpu003"):
        latest = {r.check: r for r in store.latest_results(node)}
        assert latest["kernel_log"].verdict == "WARN"
        assert store.evidence(latest["kernel_log"]) == f"dmesg of {node}\n"
        assert store.evidence(latest["gpu_ecc"]) == SMI_Q
        assert latest["bmc_event_log"].evidence_id is None
    store.add_results_many([("gpu001", _rows("gpu001"))])  # the same outputs again: no new blob
    assert _count(store, EvidenceBlob) == 4


def test_all_or_none_an_unknown_node(store_url):
    store = _store(store_url, 1)
    with pytest.raises(NodeNotFound, match="no node 'gpu404'"):
        store.add_results_many([("gpu001", _rows("gpu001")), ("gpu404", _rows("gpu404"))])
    assert _count(store, CheckResult) == 0 and _count(store, EvidenceBlob) == 0


def test_all_or_none_a_bad_verdict(store_url):
    store = _store(store_url, 2)
    bad = [{"stage": "preflight", "check": "x", "verdict": "OK"}]
    with pytest.raises(StoreError, match="verdict must be one of"):
        store.add_results_many([("gpu001", _rows("gpu001")), ("gpu002", bad)])
    assert _count(store, CheckResult) == 0


def test_a_node_is_found_by_its_serial_too(store_url):
    store = _store(store_url, 2)
    store.update_node("gpu002", serial="SN-2")
    store.add_results_many([("SN-2", _rows("gpu002")), ("gpu001", _rows("gpu001"))])
    assert len(store.latest_results("gpu002")) == 4 and len(store.latest_results("gpu001")) == 4
    assert store.evidence(next(r for r in store.latest_results("gpu002") if r.check == "kernel_log")) == (
        "dmesg of gpu002\n"
    )
