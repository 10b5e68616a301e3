"""Provisioning records the host key a PXE-booted VM reports; burn-in is then pinned to it.

One PXE lab (bringup.lab.pxe) whose VM boots the agent ramdisk with an SSH server
(bringup.lab.pxe_ssh: dropbear, a host key made at boot). The real agent reports that key in
its authenticated phone-home, `bringup provision` records it, and `burnin run` (in the
provisioning server's namespace, where the VM is reached) connects with paramiko's
RejectPolicy to exactly that key. The VM's key then changes without a re-provisioning
(`lab-rekey` over SSH): the next burn-in is refused with one line naming the node and when its
key was recorded. A re-provisioning (a real PXE boot, a fresh key) replaces the recorded key,
and burn-in connects again.

One test function, in steps: each builds on the one before, and the lab is expensive.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from bringup.fleet.store import FleetStore
from bringup.ssh.hostkeys import fingerprint
from tests.lab.conftest import pxe_lab_up

pytestmark = pytest.mark.lab

KEY_LINE = re.compile(r"bringup-lab: dropbear on port 22 with host key (ssh-ed25519 [A-Za-z0-9+/=]+)")

# In the server namespace: the product's own SSH path for a fleet node (the store's address and
# recorded keys, the inventory's user and key), running one command; prints what came back.
REMOTE = """
import json, sys
from pathlib import Path
from bringup.fleet.store import FleetStore
from bringup.ssh.fanout import run_script, target_for_node
from bringup.fleet.select import load_valid_rack, pick_hosts
db, rack, inventory_dir, name, command = sys.argv[1:6]
store = FleetStore.open(db)
loaded, _ = load_valid_rack(rack, Path(inventory_dir))
(host,) = pick_hosts(loaded, [name])
target = target_for_node(name, host.vars, loaded.path.parent, store.get_node(name))
r = run_script(target, command, 60)
print(json.dumps({"rc": r.rc, "error": r.error, "stdout": r.stdout.decode(errors="replace")}))
"""


@pytest.fixture(scope="module")
def pxe_ssh_lab(tmp_path_factory):
    from bringup.lab.pxe import PxeVmSpec

    with pxe_lab_up(tmp_path_factory.mktemp("pxessh"), "k", [PxeVmSpec("vm01", "bios")], ssh=True) as up:
        yield up


def _log(what: str, result) -> None:
    sys.stderr.write(f"$ {what} -> {result.returncode}\n{result.stderr[-3000:]}\n")


def bringup(lab, db, *args: str):
    result = lab.bringup(*args, db=db)
    _log(f"bringup {' '.join(args)}", result)
    return result


def burnin_preflight(lab, state, db) -> dict:
    """`burnin run --stages preflight` on vm01 (its node recorded as configured first: the agent
    ramdisk has nothing to configure); returns its outcome."""
    walk(db, {"provisioned": ["configured"], "failed": ["repair", "configured"]})
    result = lab.burnin(
        "run", "--rack", state.name, "--nodes", "vm01", "--stages", "preflight", "--json", db=db
    )
    _log("burnin run --stages preflight", result)
    (outcome,) = json.loads(result.stdout)
    return outcome


def walk(db, paths: dict[str, list[str]]) -> None:
    """Move vm01 along the path given for the state it is in (none: leave it)."""
    store = FleetStore.open(str(db))
    try:
        for target in paths.get(store.get_node("vm01").state, []):
            store.transition("vm01", target, "the test moves it on")
    finally:
        store.close()


def ssh_results(outcome: dict) -> list[dict]:
    """Every result of a check that runs on the node over SSH (bmc_event_log reads the BMC)."""
    return [r for s in outcome["stages"] for r in s["results"] if r["check"] != "bmc_event_log"]


def boot_keys(lab) -> list[str]:
    """The host keys the VM made, in order, as its console printed them (all its boots)."""
    return KEY_LINE.findall(lab.vm_log("vm01"))


def remote(lab, state, db, command: str) -> dict:
    result = lab.in_server(
        [
            sys.executable,
            "-c",
            REMOTE,
            str(db),
            state.name,
            str(Path(state.inventory).parent),
            "vm01",
            command,
        ]
    )
    _log(f"remote {command}", result)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def recorded(db) -> tuple[list[str], dict, list]:
    store = FleetStore.open(str(db))
    try:
        node = store.get_node("vm01")
        events = [e for e in store.history("vm01") if e.kind == "ssh-host-keys"]
        return list(node.ssh_host_keys), dict(node.hardware), events
    finally:
        store.close()


def test_burnin_is_pinned_to_the_key_the_vm_reported_when_provisioned(pxe_ssh_lab):
    lab, state, db = pxe_ssh_lab
    result = bringup(lab, db, "discover", "--rack", state.name, "--json")
    assert result.returncode == 0, result.stderr

    # 1. Provisioning: the agent reports the key dropbear was started with; it is recorded.
    result = bringup(lab, db, "provision", "--rack", state.name, "--json")
    assert result.returncode == 0, result.stderr
    (first,) = boot_keys(lab)
    keys, hardware, events = recorded(db)
    assert keys == [first]
    assert hardware["provision_report"]["ssh_host_keys"] == [first]  # the phone-home's own words
    source = hardware["ssh_host_keys_recorded"]["source"]
    assert re.fullmatch(r"provision run \d+ \(pxe\)", source), source
    assert [e.reason for e in events] == [f"SSH host keys recorded by {source}: {fingerprint(first)}"]

    # 2. Burn-in connects pinned to that key and its scripts run on the VM: what the checks say
    # is the VM's shell (no GPU tools in an agent ramdisk), never a refusal.
    outcome = burnin_preflight(lab, state, db)
    results = ssh_results(outcome)
    assert results
    for r in results:
        assert "SSH host key" not in r["reason"] and "unreachable" not in r["reason"], r
        assert "SSH authentication" not in r["reason"], r
    by_check = {r["check"]: r for r in results}
    assert "nvidia-smi: not found" in by_check["gpu_inventory"]["reason"], by_check["gpu_inventory"]
    sys.stderr.write(
        json.dumps({c: (r["verdict"], r["reason"]) for c, r in by_check.items()}, indent=1) + "\n"
    )

    # 3. The VM's host key changes, not by a re-provisioning (over the same pinned SSH path).
    rekey = remote(lab, state, db, "lab-rekey")
    assert rekey["error"] == "" and rekey["rc"] == 0, rekey
    (second,) = KEY_LINE.findall(rekey["stdout"])
    assert second != first

    # 4. The next burn-in is refused: every SSH check UNKNOWN, with one line naming the node, the
    # date the key was recorded, by which provisioning run, and the key it shows now.
    outcome = burnin_preflight(lab, state, db)
    assert outcome["verdict"] != "PASS"
    today = hardware["ssh_host_keys_recorded"]["at"][:10]
    vm = state.vms[0]
    line = (
        f"SSH host key of vm01 ({vm.provision_ip}) does not match the key recorded when it was "
        f"provisioned on {today} ({source}) (it shows {fingerprint(second)}): re-imaged or "
        "impersonated? re-provision it"
    )
    results = ssh_results(outcome)
    assert results and all(r["verdict"] == "UNKNOWN" for r in results), results
    assert all(line in r["reason"] and "\n" not in r["reason"] for r in results), results
    assert recorded(db)[0] == [first]  # what the network shows never replaces a recorded key

    # 5. Re-provisioning (a real PXE boot, a fresh key) replaces the recorded key; burn-in
    # connects again.
    walk(db, {"failed": ["repair"], "burnin": ["failed", "repair"], "configured": ["failed", "repair"]})
    result = bringup(lab, db, "provision", "--rack", state.name, "--json")
    assert result.returncode == 0, result.stderr
    third = boot_keys(lab)[-1]
    assert third not in (first, second)
    keys, hardware, events = recorded(db)
    assert keys == [third]
    again = hardware["ssh_host_keys_recorded"]["source"]
    assert again != source and events[-1].reason.startswith(
        f"SSH host keys replaced by {again}: {fingerprint(third)}"
    )
    results = ssh_results(burnin_preflight(lab, state, db))
    assert results and not any("SSH host key" in r["reason"] for r in results), results
