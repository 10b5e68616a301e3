"""The inputs of burnin fabric verify: saved outputs, a live ibnetdiscover (a stand-in script on
PATH here), each failure a PlanError naming the input."""

from __future__ import annotations

import pytest

from burnin.fabric.live import fabric_ports, live_fabric_text
from burnin.fabric.plan import PlanError
from tests.unit.burnin.parsers._samples import SAMPLES_DIR, load


def _standin(tmp_path, monkeypatch, body: str) -> None:
    tool = tmp_path / "bin" / "ibnetdiscover"
    tool.parent.mkdir()
    tool.write_text(f"#!/bin/sh\n{body}\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}:/usr/bin:/bin")


def test_saved_outputs_of_two_parts_are_read_together(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(load("ibnetdiscover_p_edr.txt"))
    b.write_text(load("ibnetdiscover_p_hdr_leaf_spine.txt"))
    assert len(fabric_ports([a, b])) == 9 + 5


def test_a_live_run_is_read_and_its_failure_named(tmp_path, monkeypatch):
    _standin(tmp_path, monkeypatch, f"tail -n +2 '{SAMPLES_DIR / 'ibnetdiscover_p_edr.txt'}'")
    assert "0x7cfe9003003b4bde" in live_fabric_text()
    assert len(fabric_ports([])) == 9
    (tmp_path / "bin" / "ibnetdiscover").write_text(
        "#!/bin/sh\necho 'ibwarn: mad_rpc_open_port failed' >&2\nexit 1\n"
    )
    with pytest.raises(PlanError, match="ibnetdiscover -p: failed: ibwarn: mad_rpc_open_port failed"):
        live_fabric_text()


def test_no_ibnetdiscover_here_says_to_give_a_saved_output(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PlanError, match="not installed here: give a saved output with --ibnetdiscover FILE"):
        fabric_ports([])
    with pytest.raises(PlanError, match="nothing.txt: cannot read"):
        fabric_ports([tmp_path / "nothing.txt"])


def test_an_ibnetdiscover_that_could_not_open_its_port_is_an_input_error(tmp_path):
    """The real failure text (no InfiniBand port to open) is refused, not read as an empty
    fabric whose every planned cable is missing."""
    saved = tmp_path / "fabric.txt"
    saved.write_text(load("ibnetdiscover_mad_port_failed_PARTIAL.txt"))
    with pytest.raises(PlanError, match=r"fabric.txt: not 'ibnetdiscover -p' output"):
        fabric_ports([saved])
