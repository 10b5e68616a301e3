"""The ib stage loads the compute fabric's ports only: on a B300 node with a storage ConnectX-7 in
InfiniBand mode beside its ConnectX-8 rails (a real Dell XE9780's HCAs), the CX-7 ports are listed,
never loaded or judged against the 800 Gb/s floor (burnin/checks/ib_fabric.py); the record and its
replay keep the CA types."""

from __future__ import annotations

from bringup.profiles.load import apply_overrides, load_profile
from bringup.ssh.fanout import SshTarget
from burnin.checks.base import CommandOutput
from burnin.checks.ib_replay import parse_record, replay
from burnin.result import Verdict
from burnin.stages import ib as ib_stage
from burnin.stages.ib_discovery import discovery_jobs
from burnin.stages.jobs import GroupContext, NodeJob
from tests.paths import REPO, SAMPLES
from tests.unit.burnin.stages.ib_rounds import fake_run_round

B300, _ = load_profile("b300-sxm-8x800g", REPO / "inventories/profiles")
HEALTHY = (
    (SAMPLES / "ibstat_b300_xe9780_8x_cx8_800g_cx7_100g_storage_DERIVED.txt").read_text().split("\n", 1)[1]
)
STORAGE = {"mlx5_2/1", "mlx5_3/1", "mlx5_4/1", "mlx5_5/1"}  # the 4-port ConnectX-7, MT4129, 100 Gb/s
NODES = ["node01", "node02", "node03"]


def outputs(**kw: CommandOutput) -> dict[str, CommandOutput]:
    base = {"ibstat": CommandOutput(""), "sysfs": CommandOutput(""), "perftest": CommandOutput("1\n")}
    return {**base, **kw}


def test_discovery_gives_each_port_its_hcas_ca_type():
    found = ib_stage.parse_discovery("n", outputs(ibstat=CommandOutput(HEALTHY)))
    types = {p.rail: p.ca_type for p in found.ports}
    assert len(types) == 12 and {r for r, t in types.items() if t == "MT4129"} == STORAGE
    assert {t for r, t in types.items() if r not in STORAGE} == {"MT4131"}


def test_discovery_from_sysfs_reads_hca_type():
    assert "/sys/class/infiniband/*/hca_type" in discovery_jobs(False)[1].script
    sysfs = "\n".join(
        [
            "/sys/class/infiniband/mlx5_0/hca_type:MT4131",
            "/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE",
            "/sys/class/infiniband/mlx5_0/ports/1/phys_state:5: LinkUp",
            "/sys/class/infiniband/mlx5_0/ports/1/rate:800 Gb/sec (4X XDR)",
            "/sys/class/infiniband/mlx5_0/ports/1/link_layer:InfiniBand",
            "/sys/class/infiniband/mlx5_2/hca_type:MT4129",
            "/sys/class/infiniband/mlx5_2/ports/1/state:4: ACTIVE",
            "/sys/class/infiniband/mlx5_2/ports/1/rate:100 Gb/sec (2X HDR)",
            "/sys/class/infiniband/mlx5_2/ports/1/link_layer:InfiniBand",
        ]
    )
    found = ib_stage.parse_discovery(
        "n", outputs(ibstat=CommandOutput("", "ibstat: not found\n", rc=127), sysfs=CommandOutput(sysfs))
    )
    assert {p.rail: (p.ca_type, p.rate_gbps) for p in found.ports} == {
        "mlx5_0/1": ("MT4131", 800.0),
        "mlx5_2/1": ("MT4129", 100.0),
    }


def run_stage(monkeypatch, profile):
    """The stage over a simulated fabric where a session runs at its slower end's line rate
    (800 on the CX-8 rails, 100 on the storage CX-7): returns the results and the loaded rails."""
    loaded: set[str] = set()

    def fake_discover(targets, bound=None):
        return {n: ib_stage.parse_discovery(n, outputs(ibstat=CommandOutput(HEALTHY))) for n in targets}

    def bandwidth(round_, s) -> float:
        rails = {k.rail for k in s.ends}
        loaded.update(rails)
        return 196.2 if rails & STORAGE else 1569.4  # both directions: 98.1 or 784.7 each

    monkeypatch.setattr(ib_stage, "discover", fake_discover)
    monkeypatch.setattr(ib_stage, "run_round", fake_run_round(bandwidth))
    jobs = [NodeJob(n, profile, SshTarget(n, f"10.0.0.{i}")) for i, n in enumerate(NODES, 1)]
    results = ib_stage.run_ib_stage(GroupContext(jobs, None, {}, lambda _: None))
    return {n: r[0] for n, r in results.items()}, loaded


# Bidirectional sessions, as on the H100 profile (720 of 2 x 400): 1440 of 2 x 800.
PROFILE = apply_overrides(B300, ["diag.ib_load_seconds=3", "floors.ib_write_bw_bidir_gbps=1440"])


def test_the_storage_hca_is_never_loaded_and_the_node_passes(monkeypatch):
    results, loaded = run_stage(monkeypatch, PROFILE)
    assert loaded and not loaded & STORAGE
    for node, (result, _) in results.items():
        assert result.verdict is Verdict.PASS, (node, [f.message for f in result.findings])
        assert set(result.metrics["ports"]) == {f"mlx5_{i}" for i in (0, 1, 6, 7, 8, 9, 10, 11)}
        notes = [(f.message, f.evidence) for f in result.findings]
        assert (
            "4 port(s) not the compute fabric (CA type MT4129): not loaded",
            "mlx5_2/1, mlx5_3/1, mlx5_4/1, mlx5_5/1",
        ) in notes


def test_the_replay_keeps_the_storage_hca_out(monkeypatch):
    results, _ = run_stage(monkeypatch, PROFILE)
    records = {n: parse_record(evidence) for n, (_, evidence) in results.items()}
    assert {p["ca_type"] for p in records["node01"]["ports"]} == {"MT4131", "MT4129"}
    again = replay(records, dict.fromkeys(records, PROFILE))
    assert {n: r.verdict for n, r in again.items()} == dict.fromkeys(NODES, Verdict.PASS)


def test_without_ca_types_the_storage_ports_are_loaded_and_no_node_passes(monkeypatch):
    """As before ib.ca_types: the CX-7 ports load at 100 Gb/s against the 800 floor (every node's
    storage ports fail alike, so the stage cannot tell whose end is bad: UNKNOWN, never PASS)."""
    results, loaded = run_stage(monkeypatch, apply_overrides(PROFILE, ["ib.ca_types=[]"]))
    assert loaded >= STORAGE
    assert not {n for n, (r, _) in results.items() if r.verdict in (Verdict.PASS, Verdict.WARN)}
