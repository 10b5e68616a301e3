"""A lab whose preferred slurmctld and MariaDB ports are already held (as by another lab whose run
id hashed to the same slot) comes up on the next free ones, with Slurm and accounting answering.
Before bringup/lab/ports.py it failed: "port 127.0.0.1:30340 for this lab's accounting is taken"."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

import pytest

from bringup.lab.ports import LabPorts
from bringup.lab.rack import VirtualRack, run_id_for
from bringup.lab.services import lab_services
from tests.lab import conftest
from tests.lab.conftest import lab_inventory_dir, require_root

pytestmark = pytest.mark.lab


def _listen(address: str, port: int) -> socket.socket:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((address, port))
    s.listen()
    return s


def test_a_lab_whose_ports_are_held_comes_up_on_the_next_free_ones(tmp_path):
    require_root()
    name = f"p{uuid.uuid4().hex[:7]}"
    preferred = LabPorts.preferred(run_id_for(name))
    held = [_listen("0.0.0.0", preferred.slurmctld), _listen("127.0.0.1", preferred.mariadb)]
    spec = tmp_path / "faults.yml"
    spec.write_text("nodes: {}\n")
    rack = VirtualRack(name, tmp_path / "state", lab_inventory_dir(tmp_path / "inv"), services=lab_services)
    try:
        state = rack.up(1, spec)
        if not state.inventory_vars.get("slurm_accounting"):
            pytest.fail("the lab came up without Slurm accounting: mariadb-server/slurmdbd missing?")
        conf = dict(
            line.split("=", 1)
            for line in Path(state.inventory_vars["slurm_conf"]).read_text().splitlines()
            if "=" in line and not line.startswith("#")
        )
        assert int(conf["SlurmctldPort"]) != preferred.slurmctld
        assert int(conf["AccountingStoragePort"]) != preferred.slurmdbd
        assert "idle" in conftest.slurm(state, "sinfo", "-h", "-o", "%T")
        clusters = conftest.slurm(state, "sacctmgr", "-n", "-P", "list", "cluster", "format=cluster")
        assert state.prefix in clusters.split()
    finally:
        rack.down()
        for s in held:
            s.close()
