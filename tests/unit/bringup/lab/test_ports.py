"""A lab's host ports: its preferred slots, and the next free ones when something holds those."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from bringup.lab import ports
from bringup.lab.network import LabError
from bringup.lab.ports import ACCOUNTING, SLURM, LabPorts


def test_two_labs_prefer_different_ports_and_the_ranges_do_not_meet():
    a, b = LabPorts.preferred("000001"), LabPorts.preferred("00abcd")
    assert set(vars(a).values()).isdisjoint(vars(b).values())
    for run_id in ("000000", "ffffff", "a1b2c3"):
        p = LabPorts.preferred(run_id)
        assert p.slurmd == p.slurmctld + 1 and p.slurmdbd == p.mariadb + 1
        assert SLURM.base <= p.slurmctld < SLURM.last < ACCOUNTING.base <= p.mariadb < ACCOUNTING.last


def test_every_lab_port_is_below_the_kernels_ephemeral_range():
    # A port in 32768-60999 (Linux's default ip_local_port_range) can be held by any outgoing
    # connection: a lab's MariaDB once failed to start because 127.0.0.1:33006 was taken.
    assert SLURM.last < 32768 and ACCOUNTING.last < 32768
    assert SLURM.base > 1024


def test_a_lab_whose_preferred_ports_are_free_gets_them():
    assert ports.choose("a1b2c3", is_free=lambda port: True) == LabPorts.preferred("a1b2c3")


def test_a_held_port_moves_the_lab_to_the_next_free_slot():
    # Two labs up at once whose run ids hash to one slot: the second must not fail to start
    # (a CI run lost a lab module to "port 127.0.0.1:30340 for this lab's accounting is taken").
    mine = LabPorts.preferred("a1b2c3")
    held = {mine.slurmctld, mine.slurmdbd, mine.mariadb + 2}  # and the next accounting slot's first
    chosen = ports.choose("a1b2c3", is_free=lambda port: port not in held)
    assert chosen.slurmctld == mine.slurmctld + 2 and chosen.slurmd == mine.slurmd + 2
    assert chosen.mariadb == mine.mariadb + 4 and chosen.slurmdbd == mine.slurmdbd + 4
    assert not held & set(vars(chosen).values())


def test_the_search_wraps_at_the_end_of_the_range():
    run_id = format(SLURM.slots - 1, "06x")  # the last slurm slot
    last = SLURM.ports(SLURM.slots - 1)[0]
    chosen = ports.choose(run_id, is_free=lambda port: port != last)
    assert chosen.slurmctld == SLURM.base


def test_no_free_slot_is_one_clear_error():
    with pytest.raises(LabError, match=r"no free pair of ports in 21000-28999: the 64 slots"):
        ports.choose("a1b2c3", is_free=lambda port: False)


def test_a_port_something_listens_on_is_not_free_and_is_skipped():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert not ports.port_free(port)  # held on another address than the wildcard tried
    assert ports.port_free(port)


def test_the_chosen_ports_are_saved_and_read_back(tmp_path: Path):
    path = tmp_path / "ports.json"
    assert LabPorts.load(path, "a1b2c3") == LabPorts.preferred("a1b2c3")  # a lab from before the file
    chosen = LabPorts(21002, 21003, 29004, 29005)
    chosen.save(path)
    assert LabPorts.load(path, "a1b2c3") == chosen
