"""SSH host keys from the node's phone-home into the fleet store (a fake backend, a real store)."""

from __future__ import annotations

import paramiko

from bringup.provision.backend import ProvisionOutcome, ProvisionTarget
from bringup.provision.orchestrator import Orchestrator
from bringup.ssh.hostkeys import fingerprint, pinned
from tests.unit.bringup.provision import test_orchestrator as base
from tests.unit.bringup.provision.test_orchestrator import FakeBackend, discover, good_outcome, selection

env = base.env  # the fixture: an inventory and a store


def key_line() -> str:
    key = paramiko.ECDSAKey.generate()
    return f"{key.get_name()} {key.get_base64()}"


def reporting(keys, mode: str = "install"):
    def outcome(t: ProvisionTarget) -> ProvisionOutcome:
        out = good_outcome(t)
        out.report["ssh_host_keys"] = list(keys)
        out.details["mode"] = mode
        return out

    return outcome


def provision(store, inv, outcome, force: bool = False):
    orch = Orchestrator(store, FakeBackend(outcome), rack="r01")
    (result,) = orch.run(selection(inv, store, only=["gpu001"], force=force).targets, {})
    return orch, result


def key_events(store) -> list[str]:
    return [e.reason for e in store.history("SN1") if e.kind == "ssh-host-keys"]


def test_the_reported_keys_are_recorded_then_replaced_by_a_reinstall(env):
    _, inv, store = env
    discover(store)
    first = key_line()
    orch, result = provision(store, inv, reporting([first + " root@gpu001"]))
    assert result.ok
    node = store.get_node("SN1")
    assert node.ssh_host_keys == [first]  # the comment dropped
    keys = pinned(node)
    assert keys.keys == (first,) and keys.source == f"provision run {orch.run_id} (fake)"
    assert key_events(store) == [
        f"SSH host keys recorded by provision run {orch.run_id} (fake): {fingerprint(first)}"
    ]
    # Re-imaged: the new system's keys replace the old ones, and the event says so.
    second = key_line()
    orch2, result = provision(store, inv, reporting([second]), force=True)
    assert result.ok and store.get_node("SN1").ssh_host_keys == [second]
    last = key_events(store)[-1]
    assert last.startswith(
        f"SSH host keys replaced by provision run {orch2.run_id} (fake): {fingerprint(second)}"
    )
    assert f"by provision run {orch.run_id} (fake) are forgotten" in last


def test_an_install_that_reports_no_keys_voids_the_old_ones(env):
    _, inv, store = env
    discover(store)
    provision(store, inv, reporting([key_line()]))
    provision(store, inv, reporting([]), force=True)
    assert store.get_node("SN1").ssh_host_keys == []
    assert "replaced by" in key_events(store)[-1] and "none reported" in key_events(store)[-1]


def test_the_agent_ramdisk_installs_nothing_so_the_keys_stay(env):
    _, inv, store = env
    discover(store)
    kept = key_line()
    provision(store, inv, reporting([kept]))
    provision(store, inv, reporting([], mode="agent"), force=True)
    assert store.get_node("SN1").ssh_host_keys == [kept] and len(key_events(store)) == 1


def test_a_malformed_key_is_refused_with_a_note(env):
    _, inv, store = env
    discover(store)
    good = key_line()
    bad = ["ssh-ed25519 not*base64", "ssh-dss AAAA", "ssh-ed25519 " + good.split()[1]]  # last: wrong type
    _, result = provision(store, inv, reporting([*bad, good]))
    assert result.ok and store.get_node("SN1").ssh_host_keys == [good]
    notes = [n for n in result.notes if n.startswith("SSH host key refused")]
    assert len(notes) == 3 and "is not base64" in notes[0] and "unknown key type 'ssh-dss'" in notes[1]
    assert "data does not say ssh-ed25519" in notes[2]


def test_a_report_that_does_not_match_records_no_keys(env):
    _, inv, store = env
    discover(store)

    def swapped(t: ProvisionTarget) -> ProvisionOutcome:
        out = reporting([key_line()])(t)
        out.report["serial"] = out.report["chassis_serial"] = "SOMEONE-ELSE"
        return out

    _, result = provision(store, inv, swapped)
    assert not result.ok and store.get_node("SN1").ssh_host_keys == [] and key_events(store) == []
