"""bringup/fleet/select.py: one place that loads a rack, picks --nodes and applies the state gate."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from bringup.core.errors import BadInput, UserError
from bringup.fleet.lifecycle import State, Step
from bringup.fleet.select import (
    InvalidRack,
    UnknownNodes,
    gate_hosts,
    load_valid_rack,
    pick_hosts,
    select,
    split_nodes,
)
from bringup.fleet.store import FleetStore
from tests.paths import REPO

RACK = """
all:
  vars:
    profile: h100-sxm-8x400g
    bmc_vendor: dell
    bmc_username: root
    bmc_password: env:TEST_SELECT_PW
  hosts:
    gpu1: {bmc_address: 10.1.0.1, rack_unit: 1}
    gpu2: {bmc_address: 10.1.0.2, rack_unit: 2}
    gpu3: {bmc_address: 10.1.0.3, rack_unit: 3}
    gpu4: {bmc_address: 10.1.0.4, rack_unit: 4}
"""


@pytest.fixture
def invdir(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("TEST_SELECT_PW", "x")
    shutil.copytree(REPO / "inventories" / "profiles", tmp_path / "profiles")
    (tmp_path / "r09.yml").write_text(RACK)
    return tmp_path


@pytest.fixture
def store(tmp_path: Path):
    s = FleetStore.open(str(tmp_path / "fleet.db"))
    yield s
    s.close()


def put(store: FleetStore, name: str, *path: str) -> None:
    store.enroll(name, "r09", "h100-sxm-8x400g")
    for state in path:
        store.transition(name, state, "test")


def test_split_nodes_takes_commas_and_repeats_in_order():
    assert split_nodes(("b,a", " c ", "a")) == ["b", "a", "c"]
    assert split_nodes("x, y") == ["x", "y"]
    assert split_nodes(None) == [] and split_nodes(()) == []


def test_an_invalid_rack_lists_every_problem_with_file_host_and_field(invdir):
    (invdir / "bad.yml").write_text(
        textwrap.dedent(
            """
            all:
              vars: {profile: h100-sxm-8x400g, bmc_username: root, bmc_password: env:X}
              hosts:
                gpu1: {bmc_address: 10.1.0.1, rack_unit: 0, bmc_vendor: dell}
                gpu2: {rack_unit: 2, bmc_vendor: acme}
            """
        )
    )
    with pytest.raises(InvalidRack) as err:
        load_valid_rack("bad", invdir)
    text = str(err.value)
    assert isinstance(err.value, UserError) and isinstance(err.value, BadInput)
    assert text.startswith("rack bad is not valid:")
    assert "host gpu1: field rack_unit" in text
    assert "host gpu2: field bmc_address: missing" in text and "host gpu2: field bmc_vendor" in text
    assert str(invdir / "bad.yml") in text
    assert len(err.value.problems) == 3


def test_a_missing_rack_is_a_user_error_naming_the_known_racks(invdir):
    with pytest.raises(InvalidRack, match="no such inventory.*r09"):
        load_valid_rack("r99", invdir)


def test_warnings_come_back_with_a_valid_rack(invdir, monkeypatch):
    monkeypatch.delenv("TEST_SELECT_PW")
    rack, warnings = load_valid_rack("r09", invdir)
    assert [h.name for h in rack.hosts] == ["gpu1", "gpu2", "gpu3", "gpu4"]
    assert len(warnings) == 1 and "TEST_SELECT_PW" in warnings[0].message


def test_pick_hosts_keeps_rack_order_and_names_unknown_hosts(invdir):
    rack, _ = load_valid_rack("r09", invdir)
    assert [h.name for h in pick_hosts(rack, [])] == ["gpu1", "gpu2", "gpu3", "gpu4"]
    assert [h.name for h in pick_hosts(rack, ["gpu3", "gpu1"])] == ["gpu1", "gpu3"]
    with pytest.raises(UnknownNodes) as err:
        pick_hosts(rack, ["gpu1", "gpu7", "nope"])
    assert str(err.value) == "rack r09 has no host(s) gpu7, nope"
    assert isinstance(err.value, UserError) and err.value.names == ["gpu7", "nope"]


def test_the_gate_admits_and_refuses_with_lifecycle_reasons(invdir, store):
    put(store, "gpu1", "discovered", "provisioning", "provisioned")
    put(store, "gpu2", "discovered", "provisioning", "provisioned", "configured", "burnin", "golden")
    put(store, "gpu3", "discovered")
    rack, _ = load_valid_rack("r09", invdir)
    gate = gate_hosts(store, Step.CONFIGURE, rack.hosts)
    assert [a.name for a in gate.admitted] == ["gpu1"]
    assert gate.admitted[0].node.state == State.PROVISIONED.value and gate.admitted[0].host.rack_unit == 1
    why = gate.reasons()
    assert "--force" in why["gpu2"] and "golden" in why["gpu2"]
    assert "bringup provision" in why["gpu3"]
    assert "enroll it" in why["gpu4"] and "bringup inventory enroll r09" in why["gpu4"]
    assert {r.name: r.state for r in gate.refused} == {"gpu2": "golden", "gpu3": "discovered", "gpu4": "-"}

    forced = gate_hosts(store, Step.CONFIGURE, rack.hosts, force=True)
    assert [a.name for a in forced.admitted] == ["gpu1", "gpu2"]


def test_select_does_all_three_in_one_call(invdir, store):
    put(store, "gpu1")
    put(store, "gpu2", "retired")
    sel = select(store, "r09", invdir, ("gpu2", "gpu1"), Step.DISCOVER)
    assert sel.rack.name == "r09" and sel.named and [h.name for h in sel.hosts] == ["gpu1", "gpu2"]
    assert [a.name for a in sel.gate.admitted] == ["gpu1"]
    assert "left the fleet" in sel.gate.reasons()["gpu2"]
    everyone = select(store, "r09", invdir, None, Step.POWER)
    assert not everyone.named and len(everyone.hosts) == 4
    with pytest.raises(UnknownNodes):
        select(store, "r09", invdir, "gpu9", Step.POWER)


# -- the node's profile against the GPUs its BMC lists (bringup/profiles/suggest.py) -------------


def configured_with_gpus(store: FleetStore, name: str, gpus: list[dict] | None) -> None:
    put(store, name)
    hardware = {"gpus": gpus} if gpus is not None else {}
    store.record_discovery(name, f"SN-{name}", macs=[], hardware=hardware, owned_keys=("gpus",))
    for state in ("provisioning", "provisioned", "configured"):
        store.transition(name, state, "test")


A100_40 = [{"slot": f"PCI-E Slot {i}", "model": "NVIDIA_A100-SXM4-40GB"} for i in range(1, 9)]
H100 = [{"slot": f"GPU{i}", "model": "NVIDIA H100 80GB HBM3"} for i in range(8)]


def test_burnin_refuses_a_node_whose_bmc_lists_other_gpus_than_its_profile_naming_both(invdir, store):
    configured_with_gpus(store, "gpu1", A100_40)  # an A100 node written down as H100
    configured_with_gpus(store, "gpu2", H100)
    configured_with_gpus(store, "gpu3", None)  # no GPU list from its BMC: nothing to compare
    configured_with_gpus(store, "gpu4", [])  # the BMC lists no GPU
    sel = select(store, "r09", invdir, None, Step.BURNIN)
    assert [a.name for a in sel.gate.admitted] == ["gpu2", "gpu3", "gpu4"]
    (refused,) = sel.gate.refused
    assert refused.name == "gpu1" and refused.state == "configured"
    assert refused.reason.startswith(
        "node gpu1: the BMC lists 8 x NVIDIA_A100-SXM4-40GB; its profile h100-sxm-8x400g expects "
        "8 x NVIDIA H100 80GB HBM3"
    )


def test_configure_is_gated_on_the_profile_too_and_force_lets_the_operator_go_on(invdir, store):
    put(store, "gpu1")
    store.record_discovery("gpu1", "SN-gpu1", macs=[], hardware={"gpus": A100_40}, owned_keys=("gpus",))
    store.transition("gpu1", "provisioning", "test")
    store.transition("gpu1", "provisioned", "test")
    refused = select(store, "r09", invdir, "gpu1", Step.CONFIGURE).gate
    assert not refused.admitted and "its profile h100-sxm-8x400g expects" in refused.reasons()["gpu1"]
    forced = select(store, "r09", invdir, "gpu1", Step.CONFIGURE, force=True).gate
    assert [a.name for a in forced.admitted] == ["gpu1"]


def test_steps_that_do_not_judge_by_the_profile_are_not_gated_on_it(invdir, store):
    put(store, "gpu1")
    store.record_discovery("gpu1", "SN-gpu1", macs=[], hardware={"gpus": A100_40}, owned_keys=("gpus",))
    for step in (Step.DISCOVER, Step.POWER, Step.BOOT, Step.PROVISION):
        assert [a.name for a in select(store, "r09", invdir, "gpu1", step).gate.admitted] == ["gpu1"]


def test_the_refusal_names_the_shipped_profile_the_gpus_fit_even_one_the_rack_does_not_use(invdir, store):
    configured_with_gpus(store, "gpu1", [{"slot": f"GPU{i}", "model": "NVIDIA H200"} for i in range(8)])
    why = select(store, "r09", invdir, "gpu1", Step.BURNIN).gate.reasons()["gpu1"]
    assert "expects 8 x NVIDIA H100 80GB HBM3 (the BMC's GPUs fit h200-sxm-8x400g)" in why
