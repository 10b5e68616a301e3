"""The BMC's GPUs against the OS's on the virtual rack: the lab BMC lists eight H100s
(bringup/lab/bmc_inventory.py), `bringup discover` records them, and preflight's bmc_gpus_seen
compares them with the node's nvidia-smi -q over real SSH. The node whose nvidia-smi lost GPU 4
(gpu-missing: 'Attached GPUs : 7') fails, naming the slot the BMC gives, GPU.SXM.5."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from burnin.cli import main as burnin_main
from tests.lab.conftest import faulted_rack

pytestmark = pytest.mark.lab

NODE_FAULT = {"node01": None, "node02": "gpu-missing"}


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    with faulted_rack(tmp_path_factory.mktemp("bmcgpus"), "b", NODE_FAULT) as up:
        yield up


def test_a_gpu_the_bmc_lists_and_the_os_does_not_fails_preflight_naming_its_slot(rack):
    name, base, store = rack
    assert len(store.get_node("node02").hardware["gpus"]) == 8  # discovery read the BMC's eight
    res = CliRunner().invoke(
        burnin_main,
        [*base, "run", "--rack", name, "--nodes", ",".join(NODE_FAULT), "--stages", "preflight", "--json"],
    )
    assert res.exit_code == 1, res.output  # node02 fails
    outcomes = {o["node"]: o for o in json.loads(res.stdout)}
    results = {
        node: {r["check"]: r for s in outcome["stages"] for r in s["results"]}
        for node, outcome in outcomes.items()
    }
    assert results["node01"]["bmc_gpus_seen"]["verdict"] == "PASS"
    failed = results["node02"]["bmc_gpus_seen"]
    assert failed["verdict"] == "FAIL" and failed["metrics"] == {"bmc_gpus": 8, "os_gpus": 7}
    (critical,) = [f for f in failed["findings"] if f["severity"] == "critical"]
    assert "slot GPU.SXM.5" in critical["message"] and "1654922016523" in critical["message"]
