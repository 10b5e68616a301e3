"""Fixtures that start the virtual rack for integration tests (root + network namespaces).

One lab per xdist worker per session, with its own name (so its own prefix and subnets),
state dir and inventory dir; torn down at the end of the session whatever happened.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import unavailable

REPO = Path(__file__).resolve().parents[2]


def require_root() -> None:
    if os.geteuid() != 0:
        unavailable("the virtual rack needs root")
    if shutil.which("debootstrap") is None or shutil.which("sshd", path="/usr/sbin:/usr/bin") is None:
        unavailable("debootstrap and openssh-server are needed (make test installs them)")


def lab_inventory_dir(base: Path) -> Path:
    """An inventory dir holding the shipped profiles, for a lab to write its inventory into."""
    base.mkdir(parents=True, exist_ok=True)
    if not (base / "profiles").exists():
        shutil.copytree(REPO / "inventories" / "profiles", base / "profiles")
    return base


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A running 4-node virtual rack; yields (VirtualRack, LabState)."""
    require_root()
    from bringup.lab.rack import VirtualRack
    from bringup.lab.services import lab_services

    root = tmp_path_factory.mktemp("lab")
    rack = VirtualRack(
        f"t{uuid.uuid4().hex[:8]}",
        root / "state",
        lab_inventory_dir(root / "inventories"),
        services=lab_services,
    )
    fault_spec = root / "faults.yml"
    fault_spec.write_text("nodes:\n  node02: [gpu-hw-slowdown]\n  node03: [pcie-nic-downtrained]\n")
    try:
        state = rack.up(4, fault_spec)
        yield rack, state
    finally:
        rack.down()


def node_ssh(state, name: str, command: str, timeout: float = 30) -> tuple[int, str, str]:
    """Run a command on lab node NAME over real SSH with the lab's key: (rc, stdout, stderr)."""
    import paramiko

    node = next(n for n in state.nodes if n.name == name)
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    client.connect(
        node.ip,
        username="root",
        key_filename=state.ssh_key,
        timeout=10,
        allow_agent=False,
        look_for_keys=False,
    )
    try:
        _, out, err = client.exec_command(command, timeout=timeout)
        text, errors = out.read().decode(), err.read().decode()
        return out.channel.recv_exit_status(), text, errors
    finally:
        client.close()


@contextmanager
def faulted_rack(
    root: Path, prefix: str, node_fault: dict[str, str | None]
) -> Iterator[tuple[str, list[str], object]]:
    """A lab rack whose nodes carry one stand-in fault each (None: healthy), enrolled and ready
    for burn-in; yields (rack name, the CLI's store options, the store) and takes it down after."""
    require_root()
    from bringup.lab.rack import VirtualRack
    from bringup.lab.services import lab_services

    inv = lab_inventory_dir(root / "inventories")
    name = f"{prefix}{uuid.uuid4().hex[:7]}"
    spec = root / "faults.yml"
    spec.write_text("nodes:\n" + "".join(f"  {n}: [{f}]\n" for n, f in node_fault.items() if f))
    lab = VirtualRack(name, root / "state", inv, services=lab_services)
    try:
        lab.up(len(node_fault), spec)
        base, store = ready_for_burnin(name, inv, root / "fleet.db", node_fault)
        yield name, base, store
    finally:
        lab.down()


@contextmanager
def pxe_lab_up(root: Path, prefix: str, vms: Sequence, **up: object) -> Iterator[tuple[object, object, Path]]:
    """A PXE lab (the boot server, dnsmasq and QEMU VMs) with ``vms`` (PxeVmSpec) booted; yields
    (the lab, its state, the fleet store's path) and takes it down after."""
    require_root()
    if shutil.which("qemu-system-x86_64") is None or shutil.which("dnsmasq") is None:
        unavailable("qemu-system-x86 and dnsmasq-base are needed (make test installs them)")
    from bringup.lab.pxe import PxeLab

    lab = PxeLab(f"{prefix}{uuid.uuid4().hex[:8]}", root / "state", lab_inventory_dir(root / "inventories"))
    try:
        yield lab, lab.up(list(vms), **up), root / "fleet.db"
    finally:
        lab.down()


def ready_for_burnin(rack: str, inventory_dir: Path, db: Path, nodes, state=None) -> tuple[list[str], object]:
    """Enroll and discover RACK through the real CLI, then record its nodes as configured.

    Lab nodes start with their OS and tools in place, so provisioning and configuring are
    recorded rather than run; with the lab's ``state``, so are their SSH host keys (as
    provisioning records them), and burn-in connects pinned to those. Returns the CLI's global
    options for this store and the store.
    """
    from click.testing import CliRunner

    from bringup.cli.main import main as bringup_main
    from bringup.fleet.lifecycle import State
    from bringup.fleet.store import FleetStore

    base = ["--db", str(db), "--inventory-dir", str(inventory_dir)]
    for args in (["inventory", "enroll", rack], ["discover", "--rack", rack, "--json"]):
        res = CliRunner().invoke(bringup_main, base + args)
        assert res.exit_code == 0, res.output
    store = FleetStore(f"sqlite:///{db}")
    for node in nodes:
        for target in (State.PROVISIONING, State.PROVISIONED, State.CONFIGURED):
            store.transition(node, target, "lab nodes boot provisioned and configured")
    if state is not None:
        from bringup.lab.rack import record_host_keys

        record_host_keys(store, state)
    return base, store


def configured_by_the_cli(rack: str, inventory_dir: Path, db: Path) -> tuple[list[str], object]:
    """Take a ``bringup lab up`` rack to ``configured`` with the commands docs/acceptance.md and
    docs/lab.md give an operator (enroll, discover, provision, configure), nothing recorded by
    hand: the lab's inventory says ``provisioner: preinstalled``. Returns the CLI's global
    options for this store and the store."""
    from click.testing import CliRunner

    from bringup.cli.main import main as bringup_main
    from bringup.fleet.store import FleetStore

    base = ["--db", str(db), "--inventory-dir", str(inventory_dir)]
    for args in (
        ["inventory", "enroll", rack],
        ["discover", "--rack", rack, "--json"],
        ["provision", "--rack", rack],
        ["configure", "--rack", rack],
    ):
        res = CliRunner().invoke(bringup_main, base + args)
        assert res.exit_code == 0, f"bringup {' '.join(args)}: {res.output}"
    return base, FleetStore(f"sqlite:///{db}")


@contextmanager
def golden_lab(tmp_path_factory, label: str, prefix: str, nodes: Sequence[str]) -> Iterator[dict]:
    """A healthy virtual rack (no faults: tests switch them on) whose ``nodes`` passed a real
    preflight burn-in and are golden, torn down afterwards whatever happened. Yields its
    ``state``, ``rack`` name, CLI options ``base``, ``store``, a click ``runner`` and ``root``."""
    require_root()
    from click.testing import CliRunner

    from bringup.lab.rack import VirtualRack
    from bringup.lab.services import lab_services
    from burnin.cli import main as burnin_main

    root = tmp_path_factory.mktemp(label)
    inv = lab_inventory_dir(root / "inventories")
    name = f"{prefix}{uuid.uuid4().hex[:7]}"
    rack = VirtualRack(name, root / "state", inv, services=lab_services)
    spec = root / "faults.yml"
    spec.write_text("nodes: {}\n")
    try:
        state = rack.up(len(nodes), spec)
        base, store = ready_for_burnin(name, inv, root / "fleet.db", nodes)
        runner = CliRunner()
        for args in (["run", "--stages", "preflight", "--json"], ["golden", "--stages", "preflight"]):
            res = runner.invoke(burnin_main, [*base, args[0], "--rack", name, *args[1:]])
            assert res.exit_code == 0, res.output
        assert {n: store.get_node(n).state for n in nodes} == dict.fromkeys(nodes, "golden")
        yield {"state": state, "rack": name, "base": base, "store": store, "runner": runner, "root": root}
    finally:
        rack.down()


def slurm(state, *args: str) -> str:
    """A Slurm client command against the lab's own cluster; its stdout (a failure fails the test)."""
    env = {**os.environ, "SLURM_CONF": state.inventory_vars["slurm_conf"]}
    proc = subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def slurm_nodes(state) -> dict:
    """Node name -> what Slurm says of it (burnin's own sinfo reader)."""
    from burnin.service.slurm import cluster_nodes

    return {n.name: n for n in cluster_nodes(state.inventory_vars["slurm_conf"])}


def wait_for(what: str, probe, timeout: float, poll: float = 0.2, context=None):
    """``probe()``'s first truthy answer within ``timeout`` seconds, else the test fails; its
    message then ends with what ``context()`` says (a log, a report: what a reader of a failed
    run needs to tell a slow lab from a wrong product)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(poll)
    seen = f"\n{context()}" if context is not None else ""
    pytest.fail(f"{what}: not within {timeout:.0f} s (last: {last!r}){seen}")
