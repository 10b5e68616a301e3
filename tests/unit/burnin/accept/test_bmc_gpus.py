"""The GPUs the BMC lists against the order (burnin/accept/bmc_gpus.py), through the order
comparison: node records from a real discovery of the X13-shaped BMC over HTTP listing the
GPUs each test makes, check results from the real checks judging nvidia-smi -q
(tests/unit/burnin/accept/test_conformance.py's helpers)."""

from __future__ import annotations

from burnin.accept.conformance import compare_node
from burnin.result import Action
from tests.unit.burnin.accept.test_conformance import (
    PROFILE,
    SMI_SERIALS,
    bmc_gpus,
    discovered,
    healthy_results,
    node,
    order,
)


def bmc_mismatches(conf) -> list:
    return [m for m in conf.mismatches if m.part == "gpu (BMC)"]


def test_a_bmc_listing_7_of_the_8_gpus_ordered_rejects_the_node_naming_the_gpu_it_lacks():
    seven = [s for s in SMI_SERIALS if s != "1654922016523"]  # nvidia-smi's GPU 4
    conf = compare_node(order(), node(discovered(gpus=lambda r: bmc_gpus(r, seven))), healthy_results())
    assert conf.conforms is False
    (m,) = bmc_mismatches(conf)
    assert m.action is Action.RESEAT and (m.ordered, m.found) == ("8", "7")
    assert (
        m.finding == "the BMC lists 7 GPUs, the order has 8: it lacks nvidia-smi's GPU 4 (00000000:97:00.0)"
    )
    assert (m.slot, m.serial) == ("GPU 4 (00000000:97:00.0)", "1654922016523")
    assert {r.part: r.ok for r in conf.rows}["gpu (BMC)"] is False


def test_a_bmc_listing_7_gpus_without_serials_names_the_slots_it_lists():
    conf = compare_node(order(), node(discovered(gpus=lambda r: bmc_gpus(r, [None] * 7))), healthy_results())
    (m,) = bmc_mismatches(conf)
    assert m.finding == "the BMC lists 7 GPUs, the order has 8" and m.action is Action.RESEAT
    assert m.slot == "GPU1; GPU2; GPU3; GPU4; GPU5; GPU6; GPU7"


def test_a_bmc_listing_a100s_where_h100s_were_ordered_is_rma_naming_each_slot():
    edit = lambda r: bmc_gpus(r, SMI_SERIALS, model="NVIDIA A100-SXM4-80GB")  # noqa: E731
    conf = compare_node(order(), node(discovered(gpus=edit)), healthy_results())
    assert conf.conforms is False
    found = bmc_mismatches(conf)
    assert [m.slot for m in found] == [f"GPU{n}" for n in range(1, 9)]
    assert all(m.action is Action.RMA for m in found)
    assert found[0].finding == "the BMC lists GPU1 as 'NVIDIA A100-SXM4-80GB', the order has 'H100 80GB HBM3'"
    assert found[0].serial == "1655022005478"


def test_a_bmc_that_lists_no_gpu_is_not_judged_and_says_so():
    conf = compare_node(order(), node(discovered(gpus=lambda r: bmc_gpus(r, []))), healthy_results())
    assert bmc_mismatches(conf) == [] and conf.conforms is True
    row = {r.part: r for r in conf.rows}["gpu (BMC)"]
    assert (row.ok, row.found) == (None, "not judged: the BMC lists no GPU")
    # a Processors collection that could not be read: its reason is the row's
    conf = compare_node(order(), node(discovered("dell-idrac9")), [])
    row = {r.part: r for r in conf.rows}["gpu (BMC)"]
    assert row.ok is None and row.found.startswith("not judged: ") and "HTTP 404" in row.found


def test_ilo_writes_the_model_with_underscores_and_it_is_the_model_ordered():
    edit = lambda r: bmc_gpus(r, SMI_SERIALS, model="NVIDIA_A100-SXM4-40GB")  # noqa: E731
    conf = compare_node(
        order(**{f"profiles__{PROFILE}__gpu": {"model": "A100-SXM4-40GB", "count": 8}}),
        node(discovered(gpus=edit)),
        [],
    )
    assert bmc_mismatches(conf) == []
    assert {r.part: r.ok for r in conf.rows}["gpu (BMC)"] is True
