"""The lab's Slurm accounting config (pure parts): slurmdbd + MariaDB per lab, nothing shared."""

from __future__ import annotations

from pathlib import Path

from bringup.lab import accounting
from bringup.lab.ports import LabPorts
from bringup.lab.slurm import munge_dir, render_slurm_conf
from tests.unit.bringup.lab.test_slurm import _conf, _state


def test_slurm_conf_sends_jobs_to_the_labs_slurmdbd_over_its_munge_socket():
    state = _state("rackx", "a1b2c3")
    conf = _conf(render_slurm_conf(state, "vm", 2, accounting_on=True))
    dbd_port = LabPorts.preferred("a1b2c3").slurmdbd
    assert conf["AccountingStorageType"] == ["accounting_storage/slurmdbd"]
    assert conf["AccountingStorageHost"] == ["10.213.7.1"] and conf["AccountingStoragePort"] == [
        str(dbd_port)
    ]
    # the client side of munge auth to slurmdbd: without it sacct uses the host's default munged
    assert conf["AccountingStoragePass"] == [f"{munge_dir('bla1b2c3')}/munge.socket.2"]
    off = _conf(render_slurm_conf(state, "vm", 2, accounting_on=False))
    assert off["AccountingStorageType"] == ["accounting_storage/none"] and "AccountingStoragePass" not in off


def test_slurmdbd_conf_names_the_labs_database_and_socket():
    state = _state("rackx", "a1b2c3")
    ports = LabPorts(21000, 21001, 30340, 30341)
    text = accounting.render_slurmdbd_conf(
        state, Path("/labs/rackx/slurm"), "/run/x/munge.socket.2", "pw123", ports
    )
    conf = _conf(text)
    assert conf["AuthInfo"] == ["socket=/run/x/munge.socket.2"] and conf["DbdAddr"] == ["10.213.7.1"]
    assert conf["DbdPort"] == ["30341"] and conf["StoragePort"] == ["30340"]
    assert conf["StorageHost"] == ["127.0.0.1"] and conf["StoragePass"] == ["pw123"]
    assert conf["PidFile"] == ["/labs/rackx/slurm/slurmdbd.pid"]
