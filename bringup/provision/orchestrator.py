"""Provisioning, whatever the backend: which nodes, in what order, and what is recorded.

    discovered | repair  ->  provisioning  ->  provisioned | failed

- The plan: every node of the rack (or the named ones). ``discovered`` (and ``repair``) nodes
  are provisioned; nodes left in ``provisioning`` by an interrupted run are resumed; nodes
  already ``provisioned`` or beyond are skipped (re-imaged with ``--force``); ``golden`` nodes
  are never touched without ``--force``; ``failed`` ones wait for ``nodes mark-repaired``.
  Which states may start is the lifecycle's gate (``Step.PROVISION``); this module adds what
  the gate does not know: resume versus provision, skip versus refuse, the messages.
- Pre-flight, before any power action: an undiscovered node, a node without a provisioning
  MAC, a serial flagged by discovery, a provisioning NIC discovery could not choose (unless a
  ``provisioning_nic`` rule set since names one of the recorded NICs), or any backend problem
  stops the run with one line each.
- Batches of ``--batch`` nodes (the mirror and the boot server are not flooded); each batch
  moves to ``provisioning`` only when it starts, so an interrupted run leaves later batches
  untouched, and its own nodes in ``provisioning`` to be resumed.
- Recording: the IP, the hostname, the node's own report (``hardware.provision_report``), the
  backend's details (``hardware.provision``). The report is reconciled with Redfish: a MAC or
  serial mismatch fails the node with a ``provision-mismatch`` event and a flag
  (``hardware.provision_flag``; a serial mismatch also sets ``hardware.serial_flag``, which
  stops later runs until discovery is re-run after a person checked). A report without a
  usable serial or without MACs is such a mismatch too (``reconcile``), never a pass. Each call
  the boot server refused for the node (another address, a forged report, a body cut short)
  is a ``provision-rejected`` event naming the caller's address.
- SSH host keys: the installed system reports them in its phone-home; they replace the node's
  (``Node.ssh_host_keys``, an ``ssh-host-keys`` event), and configure and burn-in then connect
  only to a host showing one of them (``bringup.ssh.hostkeys``).
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bringup.core.errors import BadInput
from bringup.fleet.lifecycle import State, Step, may_start
from bringup.fleet.models import Node, utcnow
from bringup.fleet.runs import run_ledger
from bringup.fleet.store import FleetStore
from bringup.inventory.rack import InventoryHost, Rack
from bringup.provision.backend import ProvisionBackend, ProvisionOutcome, ProvisionTarget
from bringup.provision.reconcile import reconcile
from bringup.redfish import nics as nic_mod
from bringup.redfish.endpoint import TransportOptions
from bringup.redfish.targets import Target
from bringup.ssh.hostkey_records import record as record_host_keys
from bringup.ssh.hostkeys import clean_keys
from bringup.ssh.hostkeys import pinned as pinned_keys

BACKENDS = ("pxe", "maas", "preinstalled")
DEFAULT_BATCH = 32
# Rack-level settings: they must agree between every host of the rack.
RACK_KEY_PREFIXES = ("provisioner", "pxe_", "maas_")
PER_HOST_KEYS = frozenset({"pxe_dhcp_timeout", "pxe_dhcp_retries"})

PROVISION = "provision"
RESUME = "resume"
SKIP = "skip"
REFUSE = "refuse"


@dataclass
class NodePlan:
    name: str
    state: str
    action: str  # provision | resume | skip | refuse
    reason: str
    target: ProvisionTarget | None = None
    counts_as_failed: bool = False  # a skipped node that keeps the rack from being done
    ip: str | None = None  # what the fleet store has now


@dataclass
class RackPlan:
    """What provisioning would do with each node, and what stops the whole run."""

    plans: list[NodePlan] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def targets(self) -> list[ProvisionTarget]:
        return [p.target for p in self.plans if p.action in (PROVISION, RESUME) and p.target is not None]


# -- pure helpers -----------------------------------------------------------------------------


def rack_vars(hosts: Sequence[InventoryHost]) -> tuple[dict[str, Any], list[str]]:
    """Variables every host of the rack shares, and a problem per rack setting that differs."""
    if not hosts:
        return {}, []
    first = hosts[0].vars
    common = {k: v for k, v in first.items() if all(h.vars.get(k) == v for h in hosts[1:])}
    problems = []
    keys = sorted({k for h in hosts for k in h.vars})
    for key in keys:
        if key in common or key in PER_HOST_KEYS or not key.startswith(RACK_KEY_PREFIXES):
            continue
        values = sorted({repr(h.vars.get(key)) for h in hosts})
        problems.append(
            f"rack setting {key} differs between hosts ({', '.join(values)}): set it once, for the rack"
        )
    return common, problems


def _ipv4(value: Any) -> str | None:
    try:
        return str(ipaddress.IPv4Address(str(value)))
    except ValueError:
        return None


def provisioning_mac(node: Node) -> str | None:
    nic = (node.hardware or {}).get("provisioning_nic") or {}
    mac = nic.get("mac") or (node.macs[0] if node.macs else None)
    return str(mac).lower() if mac else None


def build_target(node: Node, host: InventoryHost, target: Target | None) -> ProvisionTarget:
    hw = node.hardware or {}
    return ProvisionTarget(
        key=node.key,
        name=node.name,
        serial=node.serial,
        macs=tuple(str(m).lower() for m in node.macs or ()),
        provisioning_mac=provisioning_mac(node),
        ip=_ipv4(host.vars.get("provision_ip")) or _ipv4(host.vars.get("ansible_host")),
        bmc_address=host.bmc_address,
        hostvars=dict(host.vars),
        profile=host.profile,
        uuid=(hw.get("system") or {}).get("uuid"),
        boot_mode=target.boot_mode if target else str(host.vars.get("boot_mode", "uefi")),
        bmc=target.endpoint if target else None,
        pinned=pinned_keys(node) if node.ssh_host_keys else None,
    )


def plan_node(
    node: Node | None,
    host: InventoryHost,
    target: Target | None,
    *,
    rack: str,
    force: bool,
    named: bool,
) -> tuple[NodePlan, list[str]]:
    """What to do with one node, and the problems that must stop the whole run (pure)."""
    name = host.name
    if node is None:
        return NodePlan(name, "-", REFUSE, "not in the fleet store"), [
            f"{name}: not in the fleet store: run `bringup discover --rack {rack}` first"
        ]
    state = State(node.state)
    flag = (node.hardware or {}).get("serial_flag")
    if state is State.RETIRED:
        return NodePlan(name, state.value, SKIP, "retired"), []
    if state is State.ENROLLED:
        return NodePlan(name, state.value, REFUSE, "not discovered"), [
            f"{name}: not discovered yet (state enrolled): run `bringup discover --rack {rack}` first, "
            "or leave it out with --nodes"
        ]
    if flag:
        return NodePlan(name, state.value, REFUSE, "serial flagged"), [
            f"{name}: its serial is flagged ({flag.get('kind')}: recorded {flag.get('recorded')}, reported "
            f"{flag.get('reported')}): check the node, then `bringup discover --accept-new-serial`"
        ]
    t = build_target(node, host, target)
    problems = []
    if target is not None and target.problem:
        problems.append(f"{name}: {target.problem}")
    if may_start(Step.PROVISION, state, force):  # the gate: lifecycle.STARTS_FROM / FORCE_ALSO
        if state is State.PROVISIONING:
            plan = NodePlan(name, state.value, RESUME, "left in provisioning by an earlier run: resumed", t)
        elif state in (State.DISCOVERED, State.REPAIR):
            why = "discovered" if state is State.DISCOVERED else "repaired"
            plan = NodePlan(name, state.value, PROVISION, why, t)
        else:
            plan = NodePlan(name, state.value, PROVISION, f"{state.value}: re-imaged (--force)", t)
    # Refused by the gate. A named node that cannot be provisioned is refused (it keeps the
    # run from being done); one the rack-wide run comes across is skipped.
    elif state is State.FAILED:
        plan = NodePlan(
            name,
            state.value,
            REFUSE if named else SKIP,
            f"failed: fix it, `bringup nodes mark-repaired {name}`, then provision again",
            counts_as_failed=True,
        )
        return plan, []
    elif state is State.GOLDEN:
        plan = NodePlan(
            name, state.value, REFUSE if named else SKIP, "golden (in service): not re-imaged without --force"
        )
        plan.counts_as_failed = named
        return plan, []
    elif state is State.BURNIN:
        return NodePlan(name, state.value, SKIP, "in burn-in: let it finish (or fail) first"), []
    else:
        return NodePlan(name, state.value, SKIP, f"already provisioned ({state.value})"), []
    if (nic_flag := (node.hardware or {}).get("provisioning_nic_flag")) is not None:
        mac, problem = settle_nic_flag(node, nic_flag, target)
        if problem is not None:
            plan.action, plan.reason, plan.target = REFUSE, "provisioning NIC ambiguous", None
            return plan, problems + [f"{name}: {problem}"]
        plan.target = t = replace(t, provisioning_mac=mac)
        plan.reason += f" (provisioning NIC by provisioning_nic {target.rule if target else '?'})"
    if not t.provisioning_mac:
        problems.append(f"{name}: no provisioning MAC recorded (discovery found no NIC): re-run discovery")
    return plan, problems


def settle_nic_flag(
    node: Node, flag: Mapping[str, Any], target: Target | None
) -> tuple[str | None, str | None]:
    """(the MAC to provision from, or the line that refuses the node) for a node whose
    discovery could not choose its provisioning NIC (``hardware.provisioning_nic_flag``).

    Never the first MAC: an explicit ``provisioning_nic`` set since settles it, applied to
    the NICs discovery recorded; until then the node is refused with the flag's line."""
    rule = target.rule if target is not None else None
    if rule is None or rule.kind == "onboard" or str(rule) == flag.get("rule"):
        return None, str(flag.get("message") or "provisioning NIC ambiguous")
    recorded = [nic_mod.from_record(r) for r in (node.hardware or {}).get("nics") or []]
    choice = nic_mod.decide(recorded, rule)
    if choice.nic is None:
        ids = ", ".join(n.id for n in recorded) or "none"
        return None, f"provisioning_nic {rule} matches none of the NICs discovery recorded ({ids})"
    return choice.nic.mac, None


def plan_rack(
    rack: Rack,
    nodes: Mapping[str, Node],
    targets: Mapping[str, Target],
    only: Sequence[str] | None,
    force: bool,
) -> RackPlan:
    """Plan every host of the rack (or ``only`` those), in rack order (pure)."""
    sel = RackPlan()
    hosts = rack.hosts
    if only:
        unknown = [n for n in only if n not in {h.name for h in hosts}]
        if unknown:
            sel.problems.append(f"rack {rack.name} has no host(s) {', '.join(unknown)}")
        hosts = [h for h in hosts if h.name in set(only)]
    for host in sorted(hosts, key=lambda h: (h.rack_unit, h.name)):
        plan, problems = plan_node(
            nodes.get(host.name), host, targets.get(host.name), rack=rack.name, force=force, named=bool(only)
        )
        node = nodes.get(host.name)
        plan.ip = node.ip if node is not None else None
        sel.plans.append(plan)
        sel.problems += problems
    return sel


def batches(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    if size < 1:
        raise BadInput("the batch size must be 1 or more")
    for i in range(0, len(items), size):
        yield items[i : i + size]


# -- backends ----------------------------------------------------------------------------------


def backend_name(vars_: Mapping[str, Any]) -> str:
    name = str(vars_.get("provisioner") or "pxe").lower()
    if name not in BACKENDS:
        raise BadInput(f"provisioner must be one of {', '.join(BACKENDS)}, got {name!r}")
    return name


def make_backend(
    name: str, rack: str, vars_: Mapping[str, Any], inventory_dir: Path, transport: TransportOptions
) -> ProvisionBackend:
    if name == "pxe":
        from bringup.provision.pxe.backend import PxeBackend

        return PxeBackend(rack, vars_, inventory_dir=inventory_dir, transport=transport)
    if name == "preinstalled":
        from bringup.provision.preinstalled import PreinstalledBackend

        return PreinstalledBackend(vars_, inventory_dir)
    from bringup.provision.maas import MaasBackend  # imported only when a rack uses MAAS

    verify: bool | str = transport.ca_bundle or not transport.insecure
    return MaasBackend(vars_, inventory_dir, verify_tls=verify)


# -- the run ------------------------------------------------------------------------------------


@dataclass
class ProvisionResult:
    name: str
    key: str
    ok: bool
    reason: str
    before: str
    after: str
    ip: str | None = None
    seconds: float = 0.0
    findings: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Orchestrator:
    def __init__(
        self,
        store: FleetStore,
        backend: ProvisionBackend,
        *,
        rack: str,
        batch_size: int = DEFAULT_BATCH,
        on_progress: Callable[[str, str], None] | None = None,
        on_result: Callable[[ProvisionResult], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.store = store
        self.backend = backend
        self.rack = rack
        self.batch_size = batch_size
        self.on_progress = on_progress or (lambda name, line: None)
        self.on_result = on_result or (lambda r: None)
        self._clock = clock
        self.run_id: int | None = None

    def run(self, targets: Sequence[ProvisionTarget], params: dict[str, Any]) -> list[ProvisionResult]:
        """Provision ``targets`` batch by batch (preflight already passed). An interrupt leaves the
        current batch in ``provisioning``: the next run resumes it."""
        names = {t.key: t.name for t in targets}
        results: list[ProvisionResult] = []
        # The run claims its nodes (a burn-in or configure holding one refuses it) and records how
        # it ended, whatever happens: interrupted, error, or the outcome below (bringup/fleet/runs.py).
        params = {**params, "backend": self.backend.name}
        with run_ledger(self.store, PROVISION, self.rack, nodes=list(names.values()), params=params) as run:
            self.run_id = run.id
            for batch in batches(list(targets), self.batch_size):
                started = self._start_batch(batch)

                def progress(key: str, line: str) -> None:
                    self.on_progress(names.get(key, key), line)

                for outcome in self.backend.provision(batch, progress):
                    t = next(t for t in batch if t.key == outcome.key)
                    result = self._record(t, outcome, started[t.key])
                    results.append(result)
                    self.on_result(result)
            failed = sum(not r.ok for r in results)
            run.finish("ok" if not failed else ("failed" if failed == len(results) else "partial"))
        return results

    def _start_batch(self, batch: Sequence[ProvisionTarget]) -> dict[str, tuple[str, float]]:
        started = {}
        for t in batch:
            node = self.store.get_node(t.key)
            if node.state == State.PROVISIONING.value:
                self.store.record_event(
                    t.key,
                    "provision-resumed",
                    f"resumed by run {self.run_id} ({self.backend.name}): an earlier run left it in provisioning",
                    run_id=self.run_id,
                )
            else:
                self.store.transition(
                    t.key,
                    State.PROVISIONING,
                    f"provisioning via {self.backend.name} (run {self.run_id})",
                    run_id=self.run_id,
                    details={"backend": self.backend.name, "mac": t.provisioning_mac, "ip": t.ip},
                )
            started[t.key] = (node.state, self._clock())
        return started

    def _record_host_keys(self, t: ProvisionTarget, outcome: ProvisionOutcome) -> list[str]:
        """The installed system's SSH host keys, from its own (authenticated) report, replace the
        node's; an install that reported none voids the old ones (that system is gone). The
        agent ramdisk installs nothing: the keys recorded before stay. Returns notes."""
        keys, problems = clean_keys(outcome.report.get("ssh_host_keys"))
        notes = [f"SSH host key refused: {p}" for p in problems]
        if not keys and outcome.details.get("mode") == "agent":
            return notes
        source = f"provision run {self.run_id} ({self.backend.name})"
        notes.append(record_host_keys(self.store, t.key, keys, source, run_id=self.run_id))
        return notes

    def _record(
        self, t: ProvisionTarget, outcome: ProvisionOutcome, started: tuple[str, float]
    ) -> ProvisionResult:
        before, t0 = started
        node = self.store.get_node(t.key)
        hw = dict(node.hardware or {})
        at = utcnow().isoformat(timespec="seconds")
        hw["provision"] = {
            "backend": self.backend.name,
            "run": self.run_id,
            "at": at,
            "ok": outcome.ok,
            "reason": outcome.reason,
            **outcome.details,
        }
        if outcome.report:
            hw["provision_report"] = {**outcome.report, "received_at": at}
        seconds = round(self._clock() - t0, 1)
        result = ProvisionResult(
            t.name, t.key, outcome.ok, outcome.reason, before, State.FAILED.value, seconds=seconds
        )
        details = {"backend": self.backend.name, **{k: v for k, v in outcome.details.items() if k != "ipxe"}}
        for attempt in outcome.details.get("rejected") or []:  # calls the boot server refused
            self.store.record_event(
                t.key,
                "provision-rejected",
                f"the boot server refused {attempt.get('what')} from {attempt.get('peer')}: {attempt.get('reason')}",
                run_id=self.run_id,
                details=dict(attempt),
            )

        if not outcome.ok:
            self.store.update_node(t.key, hardware=hw)
            self.store.transition(t.key, State.FAILED, outcome.reason, run_id=self.run_id, details=details)
            return result

        check = reconcile(
            outcome.report,
            serials=[
                node.serial,
                (hw.get("chassis") or {}).get("serial"),
                (hw.get("system") or {}).get("serial"),
            ],
            macs=node.macs or [],
            provisioning_mac=t.provisioning_mac,
            uuid=t.uuid,
        )
        result.notes = check.notes
        result.ip = outcome.ip
        if not check.ok:
            findings = [f.record() for f in check.findings]
            hw["provision_flag"] = {"at": at, "run": self.run_id, "findings": findings}
            serial = next((f for f in check.findings if f.kind == "serial-mismatch"), None)
            if serial is not None:
                hw["serial_flag"] = {
                    "kind": "report-mismatch",
                    "recorded": node.serial,
                    "reported": (serial.reported or [None])[0],
                    "at": at,
                }
            # The record keeps what Redfish said; the node's claims sit in provision_report.
            self.store.update_node(t.key, hardware=hw)
            reason = "the node's own report does not match Redfish: " + "; ".join(
                f.message for f in check.findings
            )
            self.store.record_event(
                t.key, "provision-mismatch", reason, run_id=self.run_id, details={"findings": findings}
            )
            self.store.transition(t.key, State.FAILED, reason, run_id=self.run_id, details=details)
            result.ok, result.reason, result.findings = False, reason, findings
            return result

        hw.pop("provision_flag", None)
        self.store.update_node(t.key, hardware=hw, ip=outcome.ip or t.ip, hostname=outcome.hostname or t.name)
        result.notes += self._record_host_keys(t, outcome)
        matched = ", ".join(check.matched) or "nothing to compare"
        reason = f"provisioned via {self.backend.name}; the node's report matches Redfish ({matched})"
        self.store.transition(
            t.key, State.PROVISIONED, reason, run_id=self.run_id, details={**details, "notes": check.notes}
        )
        result.after, result.reason = State.PROVISIONED.value, reason
        return result
