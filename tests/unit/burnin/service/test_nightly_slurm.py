"""check_reservation against a stand-in `scontrol` that prints a real Slurm 22.05 capture."""

from __future__ import annotations

from pathlib import Path

import pytest

from burnin.service import nightly_slurm
from burnin.service.slurm import SlurmError

SAMPLE = Path(__file__).parents[3] / "fixtures/samples/slurm_22_05_scontrol_show_reservation_o.txt"


@pytest.fixture
def scontrol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`scontrol show reservation -o NAME` prints that reservation's line of the capture."""
    lines = tmp_path / "reservations.txt"
    lines.write_text(
        "".join(line for line in SAMPLE.read_text().splitlines(True) if not line.startswith("#"))
    )
    program = tmp_path / "bin/scontrol"
    program.parent.mkdir()
    program.write_text(f'#!/bin/sh\ngrep "^ReservationName=$4 " {lines} || echo "Reservation $4 not found"\n')
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{program.parent}:/usr/bin:/bin")


def test_an_active_reservation_is_taken_with_its_nodes(scontrol: None) -> None:
    found = nightly_slurm.check_reservation("maint-cap")
    assert found.state == "ACTIVE" and found.nodes == ("node01", "node02", "node04")


def test_a_reservation_that_has_not_started_is_refused(scontrol: None) -> None:
    # 'later' starts in two hours: nothing keeps jobs off its nodes tonight, and the night
    # drains nothing inside a reservation, so it would test nodes users' jobs can land on.
    with pytest.raises(SlurmError, match="'later' has not started"):
        nightly_slurm.check_reservation("later")


def test_an_unknown_reservation_is_refused(scontrol: None) -> None:
    with pytest.raises(SlurmError, match="no reservation 'nope'"):
        nightly_slurm.check_reservation("nope")
