"""The fleet store's side of pinned SSH host keys: record, forget, scan (trust on first use).

Every change is an ``ssh-host-keys`` event naming the keys' fingerprints and who made it.
Provisioning records what the installed system reported (``provision/orchestrator.py``);
``bringup hostkeys scan`` records what a node shows on the network, for a node bringup did not
install (MAAS, by hand), and only where nothing is recorded: a recorded key is never replaced
by what the network says (that is what an impostor would want); ``forget`` first.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bringup.fleet.models import utcnow
from bringup.fleet.select import load_valid_rack, pick_hosts
from bringup.fleet.store import FleetStore, NodeNotFound, default_actor
from bringup.ssh.hostkeys import RECORDED, clean_keys, fingerprint

SCAN_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "rsa-sha2-512")  # one connection each
SCAN_TIMEOUT = 10.0
SCAN_CONCURRENCY = 16


def record(
    store: FleetStore,
    key: str,
    keys: Sequence[str],
    source: str,
    *,
    actor: str | None = None,
    run_id: int | None = None,
) -> str:
    """Set the node's keys to ``keys`` (clean lines), replacing any, with an event; returns its line."""
    node = store.get_node(key)
    old = list(node.ssh_host_keys or [])
    before = (node.hardware or {}).get(RECORDED) or {}
    hw = dict(node.hardware or {})
    hw[RECORDED] = {"at": utcnow().isoformat(timespec="seconds"), "source": source}
    store.update_node(key, ssh_host_keys=list(keys), hardware=hw)
    prints = [fingerprint(k) for k in keys]
    shown = ", ".join(prints) or "none reported"
    if old and set(old) == set(keys):
        line = f"SSH host keys confirmed by {source}: unchanged ({shown})"
    elif old:
        line = (
            f"SSH host keys replaced by {source}: {shown} (the {len(old)} recorded "
            f"{str(before.get('at', '?'))[:10]} by {before.get('source', '?')} are forgotten)"
        )
    else:
        line = f"SSH host keys recorded by {source}: {shown}"
    details = {"fingerprints": prints, "replaced": [fingerprint(k) for k in old if k not in keys]}
    store.record_event(key, "ssh-host-keys", line, actor=actor, run_id=run_id, details=details)
    return line


def forget(store: FleetStore, key: str, *, actor: str | None = None) -> str:
    """Drop the node's recorded keys (re-imaged outside bringup): SSH to it is refused until
    they are recorded again (provisioning, or ``scan``)."""
    node = store.get_node(key)
    old = list(node.ssh_host_keys or [])
    hw = dict(node.hardware or {})
    hw.pop(RECORDED, None)
    store.update_node(key, ssh_host_keys=[], hardware=hw)
    prints = [fingerprint(k) for k in old]
    line = f"SSH host keys forgotten: {', '.join(prints) or 'none were recorded'}"
    store.record_event(key, "ssh-host-keys", line, actor=actor, details={"forgotten": prints})
    return line


# -- scan: what a node shows on the network --------------------------------------------------------


def shown_keys(host: str, port: int = 22, timeout: float = SCAN_TIMEOUT) -> list[str]:
    """The host keys ``host`` offers, one key exchange per key type (no login)."""
    import paramiko  # here: `bringup --help` must not import it (nor bcrypt, which it pulls in)

    found: list[str] = []
    errors: list[str] = []
    for kind in SCAN_TYPES:
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise OSError(f"cannot connect to {host}:{port}: {exc.strerror or exc}") from None
        transport = paramiko.Transport(sock)
        transport.banner_timeout = timeout
        try:
            transport.get_security_options().key_types = [kind]
            transport.start_client(timeout=timeout)
            key = transport.get_remote_server_key()
            found.append(f"{key.get_name()} {key.get_base64()}")
        except (paramiko.SSHException, EOFError, OSError) as exc:
            errors.append(f"{kind}: {exc}")  # the host has no key of this type
        finally:
            transport.close()
    keys, _ = clean_keys(found)
    if not keys:
        raise OSError(f"{host}:{port} showed no host key ({'; '.join(errors)})")
    return keys


@dataclass(frozen=True)
class ScanRow:
    name: str
    address: str
    status: str  # recorded | unchanged | refused | unreachable
    line: str


def _scan_one(store: FleetStore, name: str, address: str, port: int, actor: str | None) -> ScanRow:
    try:
        keys = shown_keys(address, port)
    except OSError as exc:
        return ScanRow(name, address, "unreachable", str(exc))
    node = store.get_node(name)
    recorded = list(node.ssh_host_keys or [])
    if recorded:
        if set(keys) & set(recorded):
            return ScanRow(name, address, "unchanged", "shows a recorded key: nothing to do")
        shown = ", ".join(fingerprint(k) for k in keys)
        return ScanRow(
            name,
            address,
            "refused",
            f"shows {shown}, not the keys recorded: re-imaged or impersonated? re-provision it, or "
            f"`bringup hostkeys forget {name}` first if you know why",
        )
    source = f"hostkeys scan by {actor or default_actor()} (trust on first use, {address}:{port})"
    return ScanRow(name, address, "recorded", record(store, name, keys, source, actor=actor))


def scan_rack(
    store: FleetStore,
    rack: str,
    inventory_dir: Path | None,
    nodes: Sequence[str] = (),
    *,
    actor: str | None = None,
) -> list[ScanRow]:
    """Record, for each node of the rack (or ``nodes``) with no recorded keys, the keys it shows
    (trust on first use). Rows in rack order; an unreachable node is one row, the others carry on."""
    loaded, _ = load_valid_rack(rack, inventory_dir)
    hosts = pick_hosts(loaded, list(nodes))
    plan = []
    rows: dict[str, ScanRow] = {}
    for host in hosts:
        try:
            node = store.get_node(host.name)
        except NodeNotFound:
            rows[host.name] = ScanRow(host.name, "-", "refused", "not in the fleet store: enroll it first")
            continue
        address = node.ip or str(host.vars.get("ansible_host") or host.name)
        plan.append((host.name, address, int(host.vars.get("ansible_port") or 22)))
    with ThreadPoolExecutor(max_workers=max(1, min(SCAN_CONCURRENCY, len(plan)))) as pool:
        for row in pool.map(lambda p: _scan_one(store, *p, actor), plan):
            rows[row.name] = row
    return [rows[h.name] for h in hosts]
