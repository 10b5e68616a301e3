"""The provisioning orchestrator and `bringup provision`, with a fake backend and a real store."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from bringup.cli.main import main
from bringup.core.credentials import write_secret_file
from bringup.fleet.models import Run
from bringup.fleet.store import FleetStore
from bringup.inventory.rack import load_rack
from bringup.provision import rack as provision_library
from bringup.provision.backend import ProvisionOutcome, ProvisionTarget
from bringup.provision.orchestrator import Orchestrator, plan_rack, rack_vars
from bringup.redfish.discovery import HARDWARE_KEYS, discover_endpoint
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.targets import load_targets
from tests.doubles.redfish_server import FakeBmc, serving
from tests.fleet import walk_to
from tests.paths import REPO

NODES = ("gpu001", "gpu002", "gpu003", "gpu004")


def mac(i: int) -> str:
    return f"02:00:00:00:00:{i:02x}"


def write_inventory(base: Path, extra_vars: str = "", host_extra: dict[str, str] | None = None) -> Path:
    inv = base / "inventories"
    inv.mkdir(exist_ok=True)
    if not (inv / "profiles").exists():
        shutil.copytree(REPO / "inventories" / "profiles", inv / "profiles")
    write_secret_file(inv / "bmc.pass", "s3cret-pass\n")
    hosts = "\n".join(
        f"    {n}: {{bmc_address: 'http://10.10.0.{11 + i}:8000', rack_unit: {i + 1}, provision_ip: 10.20.0.{11 + i}"
        f"{(', ' + host_extra[n]) if host_extra and n in host_extra else ''}}}"
        for i, n in enumerate(NODES)
    )
    (inv / "r01.yml").write_text(
        "all:\n  vars:\n    profile: h100-sxm-8x400g\n    bmc_vendor: generic\n    bmc_username: root\n"
        "    bmc_password: file:bmc.pass\n    bmc_allow_http: true\n    provisioner: pxe\n    pxe_interface: pxe0\n"
        "    pxe_server_ip: 10.20.0.1\n    pxe_subnet: 10.20.0.0/24\n    pxe_mode: agent\n"
        f"    pxe_agent_dir: {base / 'agent'}\n{extra_vars}  hosts:\n{hosts}\n"
    )
    return inv


def discover(store: FleetStore, names: Sequence[str] = NODES, macs: bool = True) -> None:
    for i, name in enumerate(NODES):
        store.enroll(
            name, "r01", "h100-sxm-8x400g", bmc_address=f"http://10.10.0.{11 + i}:8000", rack_unit=i + 1
        )
        if name in names:
            hw = {
                "provisioning_nic": {"mac": mac(i + 1)} if macs else None,
                "system": {"uuid": f"00000000-0000-0000-0000-00000000000{i + 1}", "serial": f"SN{i + 1}"},
                "chassis": {"serial": f"SN{i + 1}"},
            }
            store.record_discovery(name, f"SN{i + 1}", macs=[mac(i + 1)] if macs else [], hardware=hw)


class FakeBackend:
    """Answers per node with ``outcome(target)``; records the batches it was given."""

    name = "fake"

    def __init__(self, outcome: Callable[[ProvisionTarget], ProvisionOutcome] | None = None, problems=()):
        self.outcome = outcome or good_outcome
        self.problems = list(problems)
        self.batches: list[list[str]] = []
        self.preflighted: list[str] = []
        self.closed = False

    def preflight(self, targets):
        self.preflighted = [t.name for t in targets]
        return self.problems

    def plan(self, targets):
        return [f"{t.name}: would do it" for t in targets]

    def provision(self, batch, progress) -> Iterator[ProvisionOutcome]:
        self.batches.append([t.name for t in batch])
        for t in batch:
            progress(t.key, "booting")
            yield self.outcome(t)

    def close(self):
        self.closed = True


def good_outcome(t: ProvisionTarget) -> ProvisionOutcome:
    report = {
        "serial": t.serial,
        "chassis_serial": t.serial,
        "macs": list(t.macs),
        "uuid": t.uuid,
        "disks": [],
    }
    return ProvisionOutcome(
        t.key, True, "provisioned", ip=t.ip, hostname=t.name, report=report, details={"dhcp_after_s": 3}
    )


@pytest.fixture
def env(tmp_path):
    inv = write_inventory(tmp_path)
    store = FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}")
    yield tmp_path, inv, store
    store.close()


def selection(inv: Path, store: FleetStore, only=None, force=False):
    rack, targets = load_targets("r01", inv, only)
    nodes = {n.name: n for n in store.list_nodes(rack="r01")}
    return plan_rack(rack, nodes, {t.name: t for t in targets}, only, force)


def states(store: FleetStore) -> dict[str, str]:
    return {n.name: n.state for n in store.list_nodes()}


def runs(store: FleetStore) -> int:
    with store.reading() as s:
        return s.execute(select(func.count()).select_from(Run)).scalar_one()


# -- selection -------------------------------------------------------------------------------


def test_selection_by_state(env):
    _, inv, store = env
    discover(store)
    store.transition("gpu002", "provisioning", "interrupted run")
    store.transition("gpu003", "provisioning", "x")
    store.transition("gpu003", "provisioned", "x")
    store.transition("gpu004", "failed", "x")
    sel = selection(inv, store)
    assert sel.problems == []
    got = {p.name: (p.action, p.counts_as_failed) for p in sel.plans}
    assert got == {
        "gpu001": ("provision", False),
        "gpu002": ("resume", False),
        "gpu003": ("skip", False),
        "gpu004": ("skip", True),  # failed: waits for mark-repaired, and the rack is not done
    }
    t = next(p.target for p in sel.plans if p.name == "gpu001")
    assert (t.key, t.provisioning_mac, t.ip, t.serial, t.boot_mode) == (
        "SN1",
        mac(1),
        "10.20.0.11",
        "SN1",
        "uefi",
    )
    assert t.bmc is not None and t.bmc.password == "s3cret-pass" and "s3cret" not in repr(t)
    assert {p.name: p.action for p in selection(inv, store, force=True).plans}["gpu003"] == "provision"


def test_golden_needs_force(env):
    _, inv, store = env
    discover(store)
    walk_to(store, "gpu001", "golden", "x")
    assert selection(inv, store).plans[0].action == "skip"
    named = selection(inv, store, only=["gpu001"]).plans[0]
    assert named.action == "refuse" and named.counts_as_failed and "--force" in named.reason
    assert selection(inv, store, only=["gpu001"], force=True).plans[0].action == "provision"


def test_undiscovered_flagged_and_macless_nodes_stop_the_run(env):
    _, inv, store = env
    discover(store, names=("gpu001", "gpu002", "gpu003"))
    store.record_discovery("gpu002", "SN-OTHER", macs=[mac(2)], hardware={})  # serial changed: flagged
    sel = selection(inv, store)
    assert len(sel.problems) == 2
    assert "gpu002: its serial is flagged (changed" in sel.problems[0]
    assert sel.problems[1].startswith(
        "gpu004: not discovered yet (state enrolled): run `bringup discover --rack r01`"
    )
    assert selection(inv, store, only=["gpu001", "gpu003"]).problems == []


def test_a_node_without_macs_is_a_problem(env):
    _, inv, store = env
    discover(store, macs=False)
    sel = selection(inv, store, only=["gpu001"])
    assert sel.problems == ["gpu001: no provisioning MAC recorded (discovery found no NIC): re-run discovery"]


def test_rack_settings_must_agree(tmp_path):
    inv = write_inventory(
        tmp_path, host_extra={"gpu002": "pxe_interface: eth9", "gpu003": "pxe_dhcp_timeout: 15"}
    )
    rack, _ = load_rack("r01", inv)
    common, problems = rack_vars(rack.hosts)
    assert "pxe_interface" not in common and common["pxe_subnet"] == "10.20.0.0/24"
    assert problems == [
        "rack setting pxe_interface differs between hosts ('eth9', 'pxe0'): set it once, for the rack"
    ]


# -- the run ----------------------------------------------------------------------------------


def test_run_in_batches_records_everything(env):
    _, inv, store = env
    discover(store)
    backend = FakeBackend()
    lines: list[tuple[str, str]] = []
    orch = Orchestrator(
        store, backend, rack="r01", batch_size=3, on_progress=lambda n, line: lines.append((n, line))
    )
    results = orch.run(selection(inv, store).targets, {})
    assert backend.batches == [["gpu001", "gpu002", "gpu003"], ["gpu004"]]
    assert all(r.ok for r in results) and states(store) == dict.fromkeys(NODES, "provisioned")
    assert ("gpu004", "booting") in lines
    node = store.get_node("SN1")
    assert (node.ip, node.hostname) == ("10.20.0.11", "gpu001")
    assert node.hardware["provision_report"]["serial"] == "SN1"
    assert (
        node.hardware["provision"]["dhcp_after_s"] == 3 and node.hardware["provision"]["run"] == orch.run_id
    )
    assert node.hardware["chassis"] == {"serial": "SN1"}  # discovery's keys kept
    moves = [(e.from_state, e.to_state) for e in store.history("SN1") if e.kind == "transition"]
    assert moves[-2:] == [("discovered", "provisioning"), ("provisioning", "provisioned")]
    assert "matches Redfish (serial SN1, 1 MAC(s), UUID)" in store.history("SN1")[-1].reason
    assert store.get_run(orch.run_id).status == "ok"


def test_a_mismatching_report_fails_the_node_and_flags_it(env):
    _, inv, store = env
    discover(store)

    def swapped(t: ProvisionTarget) -> ProvisionOutcome:
        out = good_outcome(t)
        if t.name == "gpu002":
            out.report.update(
                serial="SN-BOARD", chassis_serial="SN-BOARD", macs=[mac(2), "02:00:00:00:00:99"]
            )
        return out

    orch = Orchestrator(store, FakeBackend(swapped), rack="r01")
    results = {r.name: r for r in orch.run(selection(inv, store, only=["gpu001", "gpu002"]).targets, {})}
    assert results["gpu001"].ok and not results["gpu002"].ok
    node = store.get_node("SN2")
    assert node.state == "failed" and node.serial == "SN2" and node.macs == [mac(2)]  # nothing overwritten
    kinds = [f["kind"] for f in node.hardware["provision_flag"]["findings"]]
    assert kinds == ["serial-mismatch", "mac-mismatch"]
    assert node.hardware["serial_flag"]["reported"] == "SN-BOARD"
    events = [e.kind for e in store.history("SN2")]
    assert "provision-mismatch" in events
    assert "does not match Redfish" in store.history("SN2")[-1].reason
    assert store.get_run(orch.run_id).status == "partial"


def test_a_backend_failure_is_the_nodes_reason(env):
    _, inv, store = env
    discover(store, names=("gpu001",))

    def dead(t: ProvisionTarget) -> ProvisionOutcome:
        return ProvisionOutcome(
            t.key, False, "no DHCP request within 15 s (powered on 3 times: ...)", details={"power_ons": 3}
        )

    orch = Orchestrator(store, FakeBackend(dead), rack="r01")
    (result,) = orch.run(selection(inv, store, only=["gpu001"]).targets, {})
    node = store.get_node("SN1")
    assert node.state == "failed" and not result.ok
    assert store.history("SN1")[-1].reason.startswith("no DHCP request within 15 s")
    assert node.hardware["provision"]["power_ons"] == 3 and "provision_report" not in node.hardware


def test_an_interrupted_run_is_resumed(env):
    _, inv, store = env
    discover(store)
    calls = []

    def flaky(t: ProvisionTarget) -> ProvisionOutcome:
        calls.append(t.name)
        if t.name == "gpu002" and calls.count("gpu002") == 1:
            raise KeyboardInterrupt
        return good_outcome(t)

    backend = FakeBackend(flaky)
    orch = Orchestrator(store, backend, rack="r01", batch_size=2)
    with pytest.raises(KeyboardInterrupt):
        orch.run(selection(inv, store).targets, {})
    assert states(store) == {
        "gpu001": "provisioned",
        "gpu002": "provisioning",
        "gpu003": "discovered",
        "gpu004": "discovered",
    }
    assert store.get_run(orch.run_id).status == "interrupted"

    sel = selection(inv, store)
    assert [p.action for p in sel.plans] == ["skip", "resume", "provision", "provision"]
    Orchestrator(store, backend, rack="r01", batch_size=2).run(sel.targets, {})
    assert states(store) == dict.fromkeys(NODES, "provisioned")
    assert "provision-resumed" in [e.kind for e in store.history("SN2")]
    assert calls.count("gpu001") == 1  # never redone


# -- the command line ---------------------------------------------------------------------------


def bringup(tmp_path: Path, inv: Path, *args: str):
    return CliRunner(env={"COLUMNS": "200"}).invoke(
        main,
        [
            "--db",
            str(tmp_path / "fleet.db"),
            "--inventory-dir",
            str(inv),
            "provision",
            "--rack",
            "r01",
            *args,
        ],
    )


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


def test_cli_undiscovered_node_is_one_line_and_nothing_is_touched(env, monkeypatch):
    tmp_path, inv, store = env
    discover(store, names=("gpu001", "gpu002", "gpu003"))
    backend = FakeBackend()
    monkeypatch.setattr(provision_library, "make_backend", lambda *a, **k: backend)
    result = bringup(tmp_path, inv)
    assert result.exit_code == 1
    assert error_lines(result.output) == [
        "error: gpu004: not discovered yet (state enrolled): run `bringup discover --rack r01` first, or leave it out "
        "with --nodes"
    ]
    assert backend.preflighted == [] and backend.batches == [] and runs(store) == 0
    assert set(states(store).values()) == {"discovered", "enrolled"}


def test_cli_missing_mac_is_one_line(env, monkeypatch):
    tmp_path, inv, store = env
    discover(store, macs=False)
    monkeypatch.setattr(provision_library, "make_backend", lambda *a, **k: FakeBackend())
    result = bringup(tmp_path, inv, "--nodes", "gpu003")
    assert result.exit_code == 1
    assert error_lines(result.output) == [
        "error: gpu003: no provisioning MAC recorded (discovery found no NIC): re-run discovery"
    ]
    assert runs(store) == 0


def test_cli_backend_preflight_problem_touches_nothing(env, monkeypatch):
    tmp_path, inv, store = env
    discover(store)
    backend = FakeBackend(
        problems=["the boot server cannot listen on 10.20.0.1:8080: Address already in use"]
    )
    monkeypatch.setattr(provision_library, "make_backend", lambda *a, **k: backend)
    result = bringup(tmp_path, inv)
    assert result.exit_code == 1
    assert error_lines(result.output) == [
        "error: the boot server cannot listen on 10.20.0.1:8080: Address already in use"
    ]
    assert backend.preflighted == list(NODES) and backend.batches == [] and backend.closed
    assert states(store) == dict.fromkeys(NODES, "discovered") and runs(store) == 0


def test_cli_dry_run_lists_every_node_and_changes_nothing(env):
    tmp_path, inv, store = env
    discover(store, names=("gpu001", "gpu002", "gpu003"))
    store.transition("gpu003", "provisioning", "x")
    result = bringup(tmp_path, inv, "--dry-run", "--json")
    assert result.exit_code == 1  # gpu004 would stop the run
    doc = json.loads(result.stdout)
    rows = {r["name"]: r for r in doc["nodes"]}
    assert {n: r["action"] for n, r in rows.items()} == {
        "gpu001": "provision",
        "gpu002": "provision",
        "gpu003": "resume",
        "gpu004": "refuse",
    }
    assert rows["gpu001"]["would"].startswith(f"gpu001: reserve 10.20.0.11 for {mac(1)}, one-time PXE (uefi)")
    assert "watchdog 180 s x 3 power-ons" in rows["gpu002"]["would"]
    assert doc["problems"][0].startswith("gpu004: not discovered yet")
    assert runs(store) == 0 and states(store)["gpu001"] == "discovered"
    result = bringup(tmp_path, inv, "--dry-run", "--nodes", "gpu001,gpu002", "--dhcp-timeout", "20")
    assert result.exit_code == 0 and "watchdog 20 s x 3" in result.output and "gpu003" not in result.output


def test_cli_run_then_rerun_changes_nothing(env, monkeypatch):
    tmp_path, inv, store = env
    discover(store)
    backend = FakeBackend()
    monkeypatch.setattr(provision_library, "make_backend", lambda *a, **k: backend)
    result = bringup(tmp_path, inv, "--batch", "2", "--json")
    assert result.exit_code == 0, result.output
    assert backend.batches == [["gpu001", "gpu002"], ["gpu003", "gpu004"]] and backend.closed
    doc = json.loads(result.stdout)
    assert [r["state"] for r in doc["nodes"]] == ["provisioned"] * 4 and doc["run"] == 1
    before = [(n.name, n.state, n.updated_at) for n in store.list_nodes()]
    again = FakeBackend()
    monkeypatch.setattr(provision_library, "make_backend", lambda *a, **k: again)
    result = bringup(tmp_path, inv)
    assert result.exit_code == 0 and "nothing to do" in result.output
    assert again.preflighted == [] and again.batches == [] and runs(store) == 1
    assert [(n.name, n.state, n.updated_at) for n in store.list_nodes()] == before


# -- a provisioning NIC discovery could not choose ---------------------------------------------


def discover_from_fixture(store: FleetStore, name: str, fixture: str) -> dict:
    """Record what discovery reads from a vendor-shaped fake BMC, as `bringup discover` does."""
    fake = FakeBmc.from_fixture(fixture, password="s3cret-pass")
    with serving(fake):
        ep = BmcEndpoint(name, fake.url, "root", "s3cret-pass", None, False)
        d = discover_endpoint(ep, TransportOptions(retries=0))
    store.record_discovery(
        name, d.serial, macs=d.macs, hardware=d.hardware, owned_keys=HARDWARE_KEYS, accept_new_serial=True
    )
    return d.hardware


def test_an_ambiguous_provisioning_nic_refuses_the_node_until_provisioning_nic_names_one(env, monkeypatch):
    tmp_path, inv, store = env
    discover(store)
    hw = discover_from_fixture(store, "gpu002", "hpe-dl360g10p-ocp-only")  # only an OCP 3.0 card
    line = hw["provisioning_nic_flag"]["message"]
    assert line.startswith("provisioning NIC ambiguous: candidates 1 (slot 10 port 1")
    sel = selection(inv, store, only=["gpu002"])
    plan = sel.plans[0]
    assert (plan.action, plan.reason, plan.target) == ("refuse", "provisioning NIC ambiguous", None)
    assert sel.problems == [f"gpu002: {line}"]
    # Through the command: one line, nothing touched.
    monkeypatch.setattr(provision_library, "make_backend", lambda *a, **k: FakeBackend())
    result = bringup(tmp_path, inv, "--nodes", "gpu002")
    assert result.exit_code == 1 and error_lines(result.output) == [f"error: gpu002: {line}"]
    dry = bringup(tmp_path, inv, "--nodes", "gpu002", "--dry-run")
    assert f"would stop: gpu002: {line}" in dry.output
    assert runs(store) == 0 and states(store)["gpu002"] == "discovered"
    # The operator names the port: the recorded NICs settle it, no guess and no first MAC.
    inv = write_inventory(tmp_path, host_extra={"gpu002": "provisioning_nic: 'slot:10:2'"})
    sel = selection(inv, store, only=["gpu002"])
    assert sel.problems == [] and sel.plans[0].action == "provision"
    assert sel.plans[0].target.provisioning_mac == "88:e9:a4:5b:10:21"
    # A rule that names no recorded port is refused with what was recorded.
    inv = write_inventory(tmp_path, host_extra={"gpu002": "provisioning_nic: 'slot:3'"})
    assert selection(inv, store, only=["gpu002"]).problems == [
        "gpu002: provisioning_nic slot:3 matches none of the NICs discovery recorded (1, 2)"
    ]


def test_a_discovered_onboard_nic_is_provisioned_without_a_flag(env):
    _, inv, store = env
    discover(store)
    hw = discover_from_fixture(store, "gpu001", "cisco-ucs-c240m5")
    assert "provisioning_nic_flag" not in hw
    sel = selection(inv, store, only=["gpu001"])
    assert sel.problems == [] and sel.plans[0].target.provisioning_mac == "70:0f:6a:d2:3b:14"  # L.1


def test_cli_warns_about_plain_http_bmcs(env, monkeypatch):
    tmp_path, inv, store = env
    discover(store)
    backend = FakeBackend(
        problems=["the boot server cannot listen on 10.20.0.1:8080: Address already in use"]
    )
    monkeypatch.setattr(provision_library, "make_backend", lambda *a, **k: backend)
    result = bringup(tmp_path, inv)
    warning = [line for line in result.output.splitlines() if line.startswith("warning: plain HTTP")]
    assert len(warning) == 1 and "cleartext" in warning[0], result.output
    assert all(name in warning[0] for name in NODES)


def test_a_report_with_no_serial_and_no_mac_fails_the_node_and_its_ip_is_not_taken(env):
    # Such a report reconciled as a match and its ip became the node's address.
    _, inv, store = env
    discover(store)

    def empty(t: ProvisionTarget) -> ProvisionOutcome:
        return ProvisionOutcome(t.key, True, "provisioned", ip="10.9.9.9", report={"ip": "10.9.9.9"})

    orch = Orchestrator(store, FakeBackend(empty), rack="r01")
    (result,) = orch.run(selection(inv, store, only=["gpu001"]).targets, {})
    assert not result.ok and result.after == "failed"
    node = store.get_node("SN1")
    assert node.state == "failed" and node.ip != "10.9.9.9"
    kinds = [f["kind"] for f in node.hardware["provision_flag"]["findings"]]
    assert kinds == ["serial-missing", "macs-missing"]
    assert "serial_flag" not in node.hardware  # nothing says the box was swapped: no serial flag
    assert "provision-mismatch" in [e.kind for e in store.history("SN1")]


def test_calls_the_boot_server_refused_are_events_on_the_node(env):
    _, inv, store = env
    discover(store)
    attempt = {"what": "phone-home", "peer": "10.20.0.99", "mac": mac(1), "reason": "not its address"}

    def refused_then_ok(t: ProvisionTarget) -> ProvisionOutcome:
        out = good_outcome(t)
        out.details["rejected"] = [attempt]
        return out

    orch = Orchestrator(store, FakeBackend(refused_then_ok), rack="r01")
    (result,) = orch.run(selection(inv, store, only=["gpu001"]).targets, {})
    assert result.ok
    (event,) = [e for e in store.history("SN1") if e.kind == "provision-rejected"]
    assert "10.20.0.99" in event.reason and "phone-home" in event.reason
    assert event.details["peer"] == "10.20.0.99"
