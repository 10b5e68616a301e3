"""The preinstalled backend: nodes that already run their OS, checked over SSH and recorded.

``provisioner: preinstalled`` is for nodes whose OS was put there before bringup saw them: a
vendor's factory image, an install by hand, the virtual rack's namespace nodes (docs/lab.md).
Nothing is powered, booted or installed. For each node the backend logs in over SSH as
configure and burn-in will (``ansible_host``/``provision_ip``, ``ansible_user``, the key file),
its host key checked, never accepted on first sight (``bringup/ssh/connect.py``): against the
keys the store recorded for it, else the inventory's ``UserKnownHostsFile``. On the node a short
script reads what the agent ramdisk would report: the SMBIOS serials and UUID, the MACs of its
physical NICs (every non-loopback NIC on a host that has none with a device behind it, as in a
VM or a network namespace) and its SSH host keys. The orchestrator compares that report with
discovery as for any backend (``reconcile.py``: the serial and a MAC must match) and records
the host keys, so the address SSH answers on is tied to the box its BMC describes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from bringup.provision.backend import Progress, ProvisionOutcome, ProvisionTarget
from bringup.ssh.fanout import SshTarget, fan_out, target_from_vars
from bringup.ssh.hostkeys import clean_keys

NAME = "preinstalled"
PROBE_TIME_LIMIT_S = 60.0

# Prints key=value lines (a value never holds a newline: `tr`), read by parse_probe. DMI under
# /sys/class/dmi/id, or its device directory where the class link is missing.
PROBE_SCRIPT = r"""
set -u
dmi=/sys/class/dmi/id
[ -d "$dmi" ] || dmi=/sys/devices/virtual/dmi/id
for f in product_serial chassis_serial product_uuid; do
    v=$(tr -d '\r\n' < "$dmi/$f" 2>/dev/null || true)
    echo "$f=$v"
done
echo "hostname=$(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)"
for d in /sys/class/net/*; do
    n=${d##*/}
    [ "$n" = lo ] && continue
    kind=virtual
    [ -e "$d/device" ] && kind=physical
    echo "nic=$kind $n $(tr -d '\r\n' < "$d/address" 2>/dev/null)"
done
for k in /etc/ssh/ssh_host_*_key.pub; do
    [ -r "$k" ] && echo "hostkey=$(tr -d '\r\n' < "$k")"
done
exit 0
"""


def parse_probe(text: str) -> dict[str, Any]:
    """The node's report, in the agent's shape (serial, chassis_serial, uuid, macs,
    ssh_host_keys, hostname), from PROBE_SCRIPT's lines (pure)."""
    fields: dict[str, str] = {}
    nics: list[tuple[str, str]] = []
    keys: list[str] = []
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if not sep:
            continue
        value = value.strip()
        if name == "nic":
            kind, _, rest = value.partition(" ")
            mac = rest.partition(" ")[2].strip().lower()
            if mac and mac != "00:00:00:00:00:00":
                nics.append((kind, mac))
        elif name == "hostkey":
            keys.append(value)
        elif name in ("product_serial", "chassis_serial", "product_uuid", "hostname"):
            fields[name] = value
    physical = [mac for kind, mac in nics if kind == "physical"]
    macs = physical or [mac for _, mac in nics]
    clean, _ = clean_keys(keys)
    report: dict[str, Any] = {"macs": sorted(set(macs)), "ssh_host_keys": clean}
    for key, field in (("serial", "product_serial"), ("chassis_serial", "chassis_serial")):
        if fields.get(field):
            report[key] = fields[field]
    if fields.get("product_uuid"):
        report["uuid"] = fields["product_uuid"]
    if fields.get("hostname"):
        report["hostname"] = fields["hostname"]
    return report


class PreinstalledBackend:
    name = NAME

    def __init__(self, vars_: Mapping[str, Any], inventory_dir: Path):
        self.vars = dict(vars_)
        self.inventory_dir = Path(inventory_dir)
        self.checked: list[str] = []

    def _ssh(self, t: ProvisionTarget) -> SshTarget:
        return target_from_vars(t.name, t.hostvars, self.inventory_dir, ip=t.ip, pinned=t.pinned)

    def _key_source(self, ssh: SshTarget) -> str:
        if ssh.pinned is not None:
            return f"the {len(ssh.pinned.keys)} key(s) recorded for it"
        if ssh.host_key_policy == "off":
            return "not checked (StrictHostKeyChecking=no in the inventory)"
        return ssh.known_hosts_file or "~/.ssh/known_hosts"

    def preflight(self, targets: Sequence[ProvisionTarget]) -> list[str]:
        problems = []
        for t in targets:
            ssh = self._ssh(t)
            known = ssh.known_hosts_file
            if ssh.pinned is None and ssh.host_key_policy != "off" and known and not Path(known).is_file():
                problems.append(
                    f"{t.name}: UserKnownHostsFile {known} (ansible_ssh_common_args) does not exist: its SSH "
                    "host key cannot be checked; write it, or record the key with `bringup hostkeys scan`"
                )
        return problems

    def plan(self, targets: Sequence[ProvisionTarget]) -> list[str]:
        lines = []
        for t in targets:
            ssh = self._ssh(t)
            lines.append(
                f"preinstalled: log in to {ssh.user}@{ssh.host}:{ssh.port} (host key: {self._key_source(ssh)}), "
                "compare its serial and MACs with discovery, record it provisioned; nothing is powered or installed"
            )
        return lines

    def provision(self, batch: Sequence[ProvisionTarget], progress: Progress) -> Iterator[ProvisionOutcome]:
        by_name = {t.name: t for t in batch}
        targets = [self._ssh(t) for t in batch]
        for t in batch:
            progress(t.key, "preinstalled: checking it over SSH")
        for res in fan_out(targets, PROBE_SCRIPT, PROBE_TIME_LIMIT_S):
            t = by_name[res.name]
            ssh = next(s for s in targets if s.name == res.name)
            details = {"mode": NAME, "address": f"{ssh.user}@{ssh.host}:{ssh.port}"}
            if res.error or res.rc != 0:
                why = (
                    res.error
                    or f"the check exited {res.rc}: {res.stderr.decode(errors='replace').strip()[:200]}"
                )
                yield ProvisionOutcome(
                    t.key, False, f"preinstalled: no answer over SSH: {why}", details=details
                )
                continue
            report = parse_probe(res.stdout.decode(errors="replace"))
            yield ProvisionOutcome(
                t.key,
                True,
                "provisioned (preinstalled: it answers over SSH)",
                ip=t.ip,
                hostname=report.get("hostname") or t.name,
                report=report,
                details=details,
            )

    def close(self) -> None:
        pass
