"""A drain's pass through the circuit breaker (burnin/service/breaker_gate.py): the node's
partition from `sinfo`, the store's decision, and `burnin health` holding a drain it would have
made: no `scontrol update`, the Slurm action and the metric say so, and how to resume."""

from __future__ import annotations

from pathlib import Path

import pytest

from bringup.fleet import breaker as records
from bringup.fleet.store import FleetStore
from burnin.service import slurm
from burnin.service.breaker import BreakerSettings
from burnin.service.breaker_gate import gate_drain, hold
from burnin.service.health import EXIT_DRAIN
from burnin.service.health_run import run_health
from burnin.service.state import METRICS_FILE
from tests.unit.burnin.parsers._samples import load
from tests.unit.burnin.service.test_health_run import options, tools  # noqa: F401 - the fixture

SETTINGS = BreakerSettings()  # 10 %, at least 2, 10 minutes


def sinfo_script(tmp_path: Path, partitions: dict[str, list[str]]) -> str:
    """An `sinfo` printing `%N|%R` lines, as `sinfo -N -h -o '%N|%R'` does (a node in two
    partitions is on two lines)."""
    lines = [f"{n}|{p}" for p, nodes in partitions.items() for n in nodes]
    (tmp_path / "sinfo.txt").write_text("\n".join(lines) + "\n")
    return f"#!/bin/bash\ncat {tmp_path / 'sinfo.txt'}\n"


def idle_scontrol(tmp_path: Path, node: str) -> tuple[str, Path]:
    """`scontrol` showing ``node`` idle and not drained (a real Slurm 22.05 line, renamed), and
    logging every call."""
    line = load("slurm_22_05_scontrol_show_node_o_idle.txt").splitlines()[-1].replace("node01", node)
    (tmp_path / "node.txt").write_text(line + "\n")
    log = tmp_path / "scontrol.log"
    script = f'#!/bin/bash\necho "$*" >> {log}\nif [ "$1 $2" = "show node" ]; then cat {tmp_path / "node.txt"}; fi\n'
    return script, log


@pytest.fixture
def store_url_sqlite(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'fleet.db'}"


def test_partition_of_takes_the_first_partition_and_counts_its_nodes(tools, tmp_path):  # noqa: F811
    tools(extra={"sinfo": sinfo_script(tmp_path, {"gpu": ["a", "b", "c"], "debug": ["a", "d"]})})
    assert slurm.partition_of("a") == ("gpu", 3)
    assert slurm.partition_of("d") == ("debug", 2)
    with pytest.raises(slurm.SlurmError, match="no partition"):
        slurm.partition_of("zz")


def test_gate_lets_the_cap_through_then_holds_with_the_resume_command(store_url_sqlite):
    store = FleetStore(store_url_sqlite)
    got = [gate_drain(store, f"n{i}", "gpu_ecc", "gpu", 8, SETTINGS) for i in range(3)]
    assert [g.allowed for g in got] == [True, True, False]
    assert got[2].tripped_now and "burnin breaker reset gpu_ecc --partition gpu" in got[2].message
    store.close()


def test_a_store_that_cannot_answer_leaves_the_drain_to_go_ahead(tools, tmp_path):  # noqa: F811
    """Fail open: a store outage must not keep a faulty node in service; the problem is kept."""
    tools(extra={"sinfo": sinfo_script(tmp_path, {"gpu": ["n1"]})})
    (tmp_path / "a-file").write_text("")
    problems: list[str] = []
    held = hold("n1", "gpu_ecc", SETTINGS, f"sqlite:///{tmp_path}/a-file/fleet.db", None, problems)
    assert held == "" and problems and "not consulted" in problems[0]


def test_health_holds_the_drain_once_the_check_has_drained_its_share(tools, tmp_path, store_url_sqlite):  # noqa: F811
    """Two nodes of an 8-node partition already drained for gpu_inventory in the window: the
    third failing it is not drained (no `scontrol update`), its report and metrics say it is
    held and how to resume; the exit status still says the check failed."""
    nodes = [f"node{i:02d}" for i in range(1, 9)]
    store = FleetStore(store_url_sqlite)
    for n in nodes[:2]:
        assert gate_drain(store, n, "gpu_inventory", "gpu", 8, SETTINGS).allowed
    scontrol, log = idle_scontrol(tmp_path, "node03")
    tools("gpu-missing", extra={"scontrol": scontrol, "sinfo": sinfo_script(tmp_path, {"gpu": nodes})})
    report = run_health(options(tmp_path, node="node03", breaker_db=store_url_sqlite))
    assert report.exit_code == EXIT_DRAIN and report.decision.check == "gpu_inventory"
    assert report.slurm_action.startswith("held by the circuit breaker: check gpu_inventory is suspect")
    assert report.slurm_action.endswith("burnin breaker reset gpu_inventory --partition gpu")
    assert log.read_text().splitlines() == ["show node -o node03"]  # read, never updated
    assert report.to_dict()["breaker_held"] is True
    prom = (tmp_path / "textfile" / METRICS_FILE).read_text()
    assert 'bringup_health_breaker_held{node="node03",check="gpu_inventory"} 1' in prom
    (state,) = records.states(store, tripped_only=True)
    assert (state.check, state.drained, state.held) == ("gpu_inventory", 2, 1)
    store.close()


def test_health_drains_through_a_closed_breaker_and_records_the_drain(tools, tmp_path, store_url_sqlite):  # noqa: F811
    scontrol, log = idle_scontrol(tmp_path, "node03")
    tools(
        "gpu-missing", extra={"scontrol": scontrol, "sinfo": sinfo_script(tmp_path, {"gpu": ["node03", "x"]})}
    )
    report = run_health(options(tmp_path, node="node03", breaker_db=store_url_sqlite))
    assert report.slurm_action == "drained", report.to_dict()
    assert log.read_text().splitlines()[-1].startswith("update NodeName=node03 State=DRAIN")
    assert report.to_dict()["breaker_held"] is False
    store = FleetStore(store_url_sqlite)
    (state,) = records.states(store)
    assert not state.tripped and state.drained == 1
    store.close()
