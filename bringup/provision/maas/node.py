"""One node's way through MAAS: find or create, commission, allocate, deploy, wait, tag."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from bringup.provision.backend import ProvisionOutcome, ProvisionTarget
from bringup.provision.maas.client import MaasClient, MaasError
from bringup.provision.maas.context import RunContext
from bringup.provision.maas.status import (
    COMMISSION_PHASE,
    OWNED,
    M,
    lifecycle_state,
    next_step,
    status_name,
)
from bringup.provision.maas.userdata import render_user_data

_MAX_TRANSPORT_ERRORS = 3  # consecutive failed polls before a node is given up


class NodeFailed(Exception):
    """Ends one node's run with this reason (already redacted by the raiser or by the caller)."""


def target_macs(target: ProvisionTarget) -> list[str]:
    """The target's MACs, lower case, the provisioning MAC first, each once."""
    ordered = [target.provisioning_mac, *target.macs]
    seen: list[str] = []
    for mac in ordered:
        if mac and mac.lower() not in seen:
            seen.append(mac.lower())
    return seen


def _machine_macs(machine: Mapping[str, Any]) -> list[str]:
    return [str(i["mac_address"]).lower() for i in machine.get("interface_set") or [] if i.get("mac_address")]


class MachineRun:
    """One node's way through MAAS, driven by the machine's status (so a rerun resumes)."""

    def __init__(
        self, backend: RunContext, target: ProvisionTarget, say: Callable[[str], None], stop: threading.Event
    ):
        self.backend = backend
        self.stop = stop
        self.settings = backend.valid_settings()
        self.target = target
        self.say = say
        self.system_id: str | None = None
        self.adopted = False
        self.actions: list[str] = []
        self.machine: dict[str, Any] = {}

    def details(self) -> dict[str, Any]:
        status = self.machine.get("status")
        out: dict[str, Any] = {
            "maas_url": self.settings.url,
            "adopted": self.adopted,
            "actions": list(self.actions),
        }
        if self.system_id:
            out["system_id"] = self.system_id
        if status is not None:
            out.update(
                maas_status=status,
                maas_status_name=status_name(status),
                lifecycle=lifecycle_state(status).value,
            )
            if self.machine.get("status_message"):
                out["maas_status_message"] = self.backend.redact(str(self.machine["status_message"]))
        return out

    def explain(self, exc: MaasError) -> str:
        what = f"MAAS refused {exc.op}" if exc.op else "MAAS call failed"
        if exc.status is None:
            return str(exc)
        return f"{what} ({exc.status}): {exc}"

    # -- the steps ------------------------------------------------------------------------------

    def execute(self) -> ProvisionOutcome:
        client = self.backend.client()
        power = self.backend.power_form(self.target)  # resolves the BMC password up front
        self.machine = self._find_or_create(client, power)
        phase_deadline: tuple[str, float] | None = None
        transport_errors = 0
        lost: set[str] = set()  # ops whose answer never came
        while True:
            status = int(self.machine["status"])
            step = next_step(status, frozenset(self.actions))
            phase = "commissioning" if status in COMMISSION_PHASE else "deployment"
            owner = self.machine.get("owner")
            if status in OWNED and owner and owner != self.backend.username():
                raise NodeFailed(
                    f"MAAS machine {self.system_id} is {status_name(status)} for MAAS user {owner!r}; "
                    "bringup does not take over another user's machine"
                )
            if step == "done":
                return self._finish(client)
            if step == "fail":
                raise NodeFailed(self._status_failure(status))
            if step == "wait":
                if phase_deadline is None or phase_deadline[0] != phase:
                    phase_deadline = (phase, self._deadline(phase))
                if self.backend.clock() > phase_deadline[1]:
                    raise NodeFailed(self._timeout(phase))
                if self.stop.wait(self.settings.poll_interval_s):
                    raise NodeFailed("stopped before MAAS finished")
                try:
                    self.machine = client.machine(self.system_id or "")
                    transport_errors = 0
                except MaasError as exc:
                    if exc.status is not None or transport_errors + 1 >= _MAX_TRANSPORT_ERRORS:
                        raise
                    transport_errors += 1
                    self.say(f"MAAS did not answer ({exc}); polling again")
                continue
            try:
                self._act(client, step)
            except MaasError as exc:
                # No answer: the op may or may not have reached MAAS. The machine's status
                # decides; the op is sent once more only if the status shows it did not land.
                if exc.status is not None or step in lost:
                    raise
                lost.add(step)
                self.actions.remove(step)
                self.say(f"MAAS did not answer {step} ({exc}); reading the machine again")
                self.machine = client.machine(self.system_id or "")
                if int(self.machine["status"]) != status:  # it landed: what follows is its outcome
                    self.actions.append(step)
            phase_deadline = None

    def _phase_timeout(self, phase: str) -> float:
        return (
            self.settings.commission_timeout_s if phase == "commissioning" else self.settings.deploy_timeout_s
        )

    def _deadline(self, phase: str) -> float:
        return self.backend.clock() + self._phase_timeout(phase)

    def _timeout(self, phase: str) -> str:
        timeout = self._phase_timeout(phase)
        name = status_name(int(self.machine["status"]))
        message = self.machine.get("status_message")
        tail = f" ({message})" if message else ""
        return (
            f"MAAS {phase} did not finish within {timeout:g} s: machine {self.system_id} still {name}{tail}"
        )

    def _status_failure(self, status: int) -> str:
        message = self.machine.get("status_message") or "no message from MAAS"
        if status in (M.FAILED_COMMISSIONING, M.FAILED_DEPLOYMENT, M.FAILED_TESTING):
            return f"MAAS: {status_name(status)}: {message}"
        return (
            f"MAAS machine {self.system_id} is {status_name(status)} ({message}); "
            "bringup does not take machines in that state"
        )

    def _find_or_create(self, client: MaasClient, power: list[tuple[str, str]]) -> dict[str, Any]:
        macs = target_macs(self.target)
        if not macs:
            raise NodeFailed("no MAC known for this node; run discover first")
        found = client.machines_by_mac(macs)
        if len(found) > 1:
            names = ", ".join(f"{m['system_id']} ({m.get('hostname')})" for m in found)
            raise NodeFailed(f"the node's MACs belong to several MAAS machines: {names}")
        if found:
            machine = found[0]
            self.system_id, self.adopted = machine["system_id"], True
            self.say(f"adopting MAAS machine {self.system_id} ({status_name(machine['status'])})")
            if machine["status"] in (M.NEW, M.READY, M.FAILED_COMMISSIONING, M.FAILED_TESTING):
                # Converge name and power to the inventory before anything powers it.
                form = [("hostname", self.target.name), *power]
                machine = client.update_machine(self.system_id, form)
                self.actions.append("update")
            return machine
        form = [
            ("hostname", self.target.name),
            ("architecture", self.settings.architecture),
            *[("mac_addresses", mac) for mac in macs],
            *power,
            ("commission", "false"),  # commission explicitly, with skip_bmc_config
        ]
        try:
            machine = client.create_machine(form)
        except MaasError as exc:
            exc.op = "to add the machine"
            raise
        self.system_id = machine["system_id"]
        self.actions.append("create")
        self.say(f"added MAAS machine {self.system_id} with MACs {', '.join(macs)}")
        return machine

    def _act(self, client: MaasClient, step: str) -> None:
        sid = self.system_id or ""
        self.actions.append(step)
        if step == "commission":
            self.say("commissioning")
            self.machine = client.commission(sid)
        elif step == "allocate":
            self.say("Ready; allocating")
            self.machine = client.allocate(sid)
        elif step == "deploy":
            user_data = render_user_data(
                self.target,
                self.backend.node_vars(self.target),
                self.settings.user_data_template,
                self.backend.inventory_dir,
            )
            self.say(f"deploying {self.settings.distro_series}")
            self.machine = client.deploy(sid, self.settings.distro_series, user_data)
        elif step == "release":
            self.say("Failed deployment found; releasing to deploy again")
            self.machine = client.release(sid)
        else:  # pragma: no cover - next_step returns only the above
            raise AssertionError(step)

    def _finish(self, client: MaasClient) -> ProvisionOutcome:
        sid = self.system_id or ""
        for tag in self.settings.tags:
            if tag in (self.machine.get("tag_names") or []):
                continue
            try:
                client.ensure_tag(tag)
                client.tag_machine(tag, sid)
            except MaasError as exc:
                raise NodeFailed(f"deployed, but tagging it {tag!r} failed: {self.explain(exc)}") from None
        if self.settings.tags:
            self.machine = client.machine(sid)
        m = self.machine
        ips = [str(ip) for ip in m.get("ip_addresses") or []]
        ip = self.target.ip if self.target.ip in ips else (ips[0] if ips else None)
        info = m.get("hardware_info") or {}
        serial = info.get("system_serial")
        report = {
            "source": "maas",
            "macs": _machine_macs(m),
            "serial": serial if serial and serial != "Unknown" else None,
            "uuid": m.get("hardware_uuid"),
            "hostname": m.get("hostname"),
            "fqdn": m.get("fqdn"),
            "ip_addresses": ips,
            "osystem": m.get("osystem"),
            "distro_series": m.get("distro_series"),
            "architecture": m.get("architecture"),
        }
        details = self.details()
        details["tags"] = list(m.get("tag_names") or [])
        self.say("Deployed")
        return ProvisionOutcome(
            key=self.target.key,
            ok=True,
            reason="provisioned",
            ip=ip,
            hostname=m.get("hostname") or self.target.name,
            report=report,
            details=details,
        )
