"""The lab's Slurm cluster config (pure parts): one cluster per lab, nothing shared between labs."""

from __future__ import annotations

from pathlib import Path

from bringup.lab.ports import LabPorts
from bringup.lab.slurm import SlurmService, _node_ids, munge_dir, render_slurm_conf
from bringup.lab.state import LabNode, LabState


def _state(name: str, run_id: str) -> LabState:
    nodes = [
        LabNode(f"node{i:02d}", i - 1, f"10.213.7.{10 + i}", "02:00:00:00:00:01", "S", "U", "http://b")
        for i in (1, 2, 3)
    ]
    return LabState(
        name, run_id, f"bl{run_id}", f"/labs/{name}", "/inv.yml", "now", node_subnet="10.213.7.0/24",
        gateway="10.213.7.1", nodes=nodes,
    )  # fmt: skip


def _conf(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out.setdefault(key, []).append(value)
    return out


def test_slurm_conf_for_a_lab():
    conf = _conf(render_slurm_conf(_state("rackx", "a1b2c3"), "vm", 2))
    assert conf["ClusterName"] == ["bla1b2c3"] and conf["SlurmctldHost"] == ["vm(10.213.7.1)"]
    assert conf["SlurmctldPort"] == [str(LabPorts.preferred("a1b2c3").slurmctld)]
    assert conf["AuthInfo"] == [f"socket={munge_dir('bla1b2c3')}/munge.socket.2"]
    assert conf["ProctrackType"] == ["proctrack/linuxproc"] and conf["TaskPlugin"] == ["task/none"]
    assert conf["MpiDefault"] == ["pmix"] and conf["StateSaveLocation"] == ["/labs/rackx/slurm/ctld"]
    assert conf["NodeName"] == [
        "node01 NodeAddr=10.213.7.11 CPUs=2 State=UNKNOWN",
        "node02 NodeAddr=10.213.7.12 CPUs=2 State=UNKNOWN",
        "node03 NodeAddr=10.213.7.13 CPUs=2 State=UNKNOWN",
    ]
    assert conf["PartitionName"] == [
        "rackx Nodes=node01,node02,node03 Default=YES MaxTime=INFINITE State=UP PriorityTier=10",
        "rackx-idle Nodes=node01,node02,node03 MaxTime=INFINITE State=UP PriorityTier=1",  # nightly --idle
    ]
    assert (conf["PreemptType"], conf["PreemptMode"]) == (["preempt/partition_prio"], ["CANCEL"])


def test_two_labs_share_no_port_socket_or_state():
    a, b = (
        _conf(render_slurm_conf(_state("a", "000001"), "vm", 2)),
        _conf(render_slurm_conf(_state("b", "00abcd"), "vm", 2)),
    )
    for key in (
        "ClusterName",
        "SlurmctldPort",
        "SlurmdPort",
        "AuthInfo",
        "StateSaveLocation",
        "SlurmctldPidFile",
    ):
        assert a[key] != b[key], key
    ports = LabPorts.preferred("ffffff")
    assert ports.slurmd == ports.slurmctld + 1 and 1024 < ports.slurmctld < 65535


def test_munge_ids_come_from_the_node_root(tmp_path: Path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_text(
        "root:x:0:0::/root:/bin/sh\nmunge:x:101:103::/nonexistent:/usr/sbin/nologin\n"
    )
    assert _node_ids(tmp_path, "munge") == (101, 103) and _node_ids(tmp_path, "slurm") is None


def test_stop_without_a_start_removes_nothing(tmp_path: Path):
    assert SlurmService().stop(tmp_path) == []
