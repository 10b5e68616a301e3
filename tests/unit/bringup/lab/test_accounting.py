"""The lab's Slurm accounting config (pure parts): slurmdbd + MariaDB per lab, nothing shared."""

from __future__ import annotations

from pathlib import Path

from bringup.lab import accounting, slurm
from bringup.lab.slurm import munge_dir, render_slurm_conf
from tests.unit.bringup.lab.test_slurm import _conf, _state


def test_slurm_conf_sends_jobs_to_the_labs_slurmdbd_over_its_munge_socket():
    state = _state("rackx", "a1b2c3")
    conf = _conf(render_slurm_conf(state, "vm", 2, accounting_on=True))
    _, dbd_port = accounting.accounting_ports("a1b2c3")
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
    text = accounting.render_slurmdbd_conf(state, Path("/labs/rackx/slurm"), "/run/x/munge.socket.2", "pw123")
    conf = _conf(text)
    db_port, dbd_port = accounting.accounting_ports("a1b2c3")
    assert conf["AuthInfo"] == ["socket=/run/x/munge.socket.2"] and conf["DbdAddr"] == ["10.213.7.1"]
    assert conf["DbdPort"] == [str(dbd_port)] and conf["StoragePort"] == [str(db_port)]
    assert conf["StorageHost"] == ["127.0.0.1"] and conf["StoragePass"] == ["pw123"]
    assert conf["PidFile"] == ["/labs/rackx/slurm/slurmdbd.pid"]


def test_two_labs_share_no_accounting_port_and_none_clashes_with_slurmctld():
    a, b = accounting.accounting_ports("000001"), accounting.accounting_ports("00abcd")
    assert set(a).isdisjoint(b)
    for run_id in ("000000", "ffffff", "a1b2c3"):
        db, dbd = accounting.accounting_ports(run_id)
        assert dbd == db + 1 and dbd < 65535
        assert db >= accounting.PORT_BASE >= slurm.PORT_BASE + 2 * slurm.PORT_SLOTS  # above slurmctld's range


def test_every_lab_port_is_below_the_kernels_ephemeral_range():
    # A port in 32768-60999 (Linux's default ip_local_port_range) can be held by any outgoing
    # connection: a lab's MariaDB once failed to start because 127.0.0.1:33006 was taken.
    highest = {
        "slurm": slurm.PORT_BASE + 2 * (slurm.PORT_SLOTS - 1) + 1,
        "accounting": accounting.PORT_BASE + 2 * (accounting.PORT_SLOTS - 1) + 1,
    }
    assert all(port < 32768 for port in highest.values()), highest
