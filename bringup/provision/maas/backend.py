"""MaasBackend: the ProvisionBackend over a MAAS region (preflight, plan, concurrent provision)."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bringup.core.credentials import CredentialError, CredentialRef, parse_ref, resolve
from bringup.core.errors import BadInput
from bringup.provision.backend import Progress, ProvisionOutcome, ProvisionTarget
from bringup.provision.maas.client import ApiKey, MaasClient, MaasError
from bringup.provision.maas.node import MachineRun, NodeFailed, target_macs
from bringup.provision.maas.redact import Redactor
from bringup.provision.maas.settings import MaasSettings, settings_from_vars
from bringup.provision.maas.status import OWNED, M, status_name
from bringup.provision.maas.userdata import render_user_data

log = logging.getLogger("bringup.provision.maas")


class MaasBackend:
    """ProvisionBackend over a MAAS region (see the package docstring for the rack vars).

    ``rack_vars`` are the rack's vars (all.vars); per-node values (bmc_username, bmc_password,
    ssh_authorized_keys, ntp_servers) come from each target's hostvars. ``inventory_dir`` is
    where relative ``file:`` references and template paths are taken from.
    """

    name = "maas"

    def __init__(
        self,
        rack_vars: Mapping[str, Any],
        inventory_dir: Path,
        *,
        vault_password_file: str | None = None,
        max_workers: int = 32,
        http_timeout: tuple[float, float] = (10.0, 60.0),
        verify_tls: bool | str = True,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.inventory_dir = Path(inventory_dir)
        self.rack_vars = dict(rack_vars)
        self.settings, self._problems = settings_from_vars(rack_vars, self.inventory_dir)
        self.vault_password_file = vault_password_file
        self.max_workers = max(1, max_workers)
        self.http_timeout = http_timeout
        self.verify_tls = verify_tls
        self.clock = clock  # monotonic seconds, for the phase deadlines
        self._running: set[threading.Event] = set()  # one per provision() in progress
        self.redact = Redactor()
        self._client: MaasClient | None = None
        self._client_lock = threading.Lock()
        self._username: str | None = None

    # -- setup ------------------------------------------------------------------------------

    def valid_settings(self) -> MaasSettings:
        """The settings; BadInput (a ValueError) with every problem when the rack vars are invalid."""
        if self.settings is None:
            raise BadInput("MAAS settings are invalid: " + "; ".join(self._problems))
        return self.settings

    def client(self) -> MaasClient:
        """The API client; reads the API key (once) from its reference."""
        with self._client_lock:
            if self._client is None:
                settings = self.valid_settings()
                key = ApiKey.parse(resolve(settings.api_key, self.vault_password_file))
                self.redact.add(
                    key.consumer, key.token, key.secret, f"{key.consumer}:{key.token}:{key.secret}"
                )
                self._client = MaasClient(
                    settings.url, key, timeout=self.http_timeout, verify=self.verify_tls
                )
            return self._client

    def node_vars(self, target: ProvisionTarget) -> dict[str, Any]:
        """The target's vars, the rack's filling what the host's lack."""
        return {**self.rack_vars, **target.hostvars}

    def _bmc_password(self, target: ProvisionTarget) -> str:
        value = self.node_vars(target).get("bmc_password")
        if value in (None, ""):
            raise CredentialError("bmc_password is not set")
        ref = value if isinstance(value, CredentialRef) else parse_ref(value, self.inventory_dir)
        password = resolve(ref, self.vault_password_file)
        self.redact.add(password)
        return password

    def power_form(self, target: ProvisionTarget) -> list[tuple[str, str]]:
        """MAAS's Redfish power parameters for the target (resolves its BMC password)."""
        user = self.node_vars(target).get("bmc_username")
        if not user:
            raise CredentialError("bmc_username is not set")
        return [
            ("power_type", "redfish"),
            ("power_parameters_power_address", target.bmc_address),
            ("power_parameters_power_user", str(user)),
            ("power_parameters_power_pass", self._bmc_password(target)),
        ]

    # -- ProvisionBackend ---------------------------------------------------------------------

    def preflight(self, targets: Sequence[ProvisionTarget]) -> list[str]:
        if self.settings is None:
            return list(self._problems)
        problems: list[str] = []
        for target in targets:
            if not target_macs(target):
                problems.append(f"{target.name}: no MAC known; run discover first")
            try:
                self.power_form(target)
            except CredentialError as exc:
                problems.append(f"{target.name}: BMC credentials: {self.redact(str(exc))}")
            try:
                render_user_data(
                    target, self.node_vars(target), self.settings.user_data_template, self.inventory_dir
                )
            except Exception as exc:  # template or key file: say which node and why
                problems.append(f"{target.name}: user data: {type(exc).__name__}: {self.redact(str(exc))}")
        try:
            me = self.client().whoami()
        except CredentialError as exc:
            return [*problems, f"maas_api_key: {self.redact(str(exc))}"]
        except MaasError as exc:
            return [*problems, f"MAAS at {self.settings.url}: {self.redact(str(exc))}"]
        self._username = me.get("username")
        if not me.get("is_superuser"):
            problems.append(
                f"MAAS user {me.get('username')!r} is not an administrator; adding and deploying "
                "machines needs an administrator's API key"
            )
        return problems

    def plan(self, targets: Sequence[ProvisionTarget]) -> list[str]:
        """One line per target; looks machines up in MAAS (read-only) when MAAS answers."""
        settings = self.valid_settings()
        tags = f", tag {','.join(settings.tags)}" if settings.tags else ""
        deploy = f"deploy {settings.distro_series} with cloud-init user data{tags}"
        lines = []
        for target in targets:
            macs = target_macs(target)
            found: list[dict[str, Any]] = []
            looked = False
            if macs:
                try:
                    found = self.client().machines_by_mac(macs)
                    looked = True
                except (MaasError, CredentialError):
                    pass
            if len(found) == 1:
                m = found[0]
                steps = self._steps_from(m["status"], deploy)
                try:
                    me = self.username()
                except (MaasError, CredentialError):
                    me = None
                if m["status"] in OWNED and m.get("owner") and me and m["owner"] != me:
                    steps = f"will fail: it belongs to MAAS user {m['owner']!r}"
                lines.append(
                    f"{target.name}: adopt MAAS machine {m['system_id']} ({status_name(m['status'])}): {steps}"
                )
            elif len(found) > 1:
                ids = ", ".join(m["system_id"] for m in found)
                lines.append(f"{target.name}: its MACs belong to several MAAS machines ({ids}): will fail")
            else:
                how = "create" if looked else "find by MAC or create"
                lines.append(
                    f"{target.name}: {how} MAAS machine (MACs {', '.join(macs) or 'none'}; Redfish power "
                    f"at {target.bmc_address}): commission, allocate, {deploy}"
                )
        return lines

    @staticmethod
    def _steps_from(status: int, deploy: str) -> str:
        steps = {
            M.DEPLOYED: "already deployed; tag only",
            M.READY: f"allocate, {deploy}",
            M.ALLOCATED: deploy,
            M.DEPLOYING: "wait for Deployed, then tag",
            M.FAILED_DEPLOYMENT: f"release, allocate, {deploy}",
        }
        if status in steps:
            return steps[status]
        if status in (M.COMMISSIONING, M.TESTING):
            return f"wait for Ready, allocate, {deploy}"
        if status in (M.NEW, M.FAILED_COMMISSIONING, M.FAILED_TESTING):
            return f"commission, allocate, {deploy}"
        return f"will fail: bringup does not take machines that are {status_name(status)}"

    def provision(self, batch: Sequence[ProvisionTarget], progress: Progress) -> Iterator[ProvisionOutcome]:
        """Provision the batch concurrently; progress and outcomes arrive on the caller's thread.

        Closing the iterator early (or ``close()``) stops the nodes still polling; they end
        failed with "stopped before MAAS finished".
        """
        self.valid_settings()
        if not batch:
            return
        events: queue.Queue[tuple[str, Any]] = queue.Queue()
        stop = threading.Event()
        with self._client_lock:
            self._running.add(stop)

        def say(key: str, line: str) -> None:
            line = self.redact(line)
            log.info("%s: %s", key, line)
            events.put(("progress", (key, line)))

        def work(target: ProvisionTarget) -> None:
            try:
                outcome = self._provision_one(target, lambda line: say(target.key, line), stop)
            except Exception as exc:  # a bug must still end as this node's failure, not hang the run
                log.error("MAAS provisioning of %s crashed: %s", target.name, self.redact(repr(exc)))
                outcome = self._failed(target, f"internal error: {type(exc).__name__}: {exc}")
            events.put(("outcome", outcome))

        pool = ThreadPoolExecutor(max_workers=min(self.max_workers, len(batch)), thread_name_prefix="maas")
        try:
            for target in batch:
                pool.submit(work, target)
            remaining = len(batch)
            while remaining:
                kind, item = events.get()
                if kind == "progress":
                    progress(*item)
                else:
                    remaining -= 1
                    yield item
        finally:
            stop.set()  # no-op when every node has finished; ends the pollers of an abandoned run
            pool.shutdown(wait=True, cancel_futures=True)
            with self._client_lock:
                self._running.discard(stop)

    def close(self) -> None:
        with self._client_lock:
            for stop in self._running:
                stop.set()
            if self._client is not None:
                self._client.close()
                self._client = None

    def username(self) -> str | None:
        """The MAAS user the API key belongs to (asked once)."""
        if self._username is None:
            self._username = self.client().whoami().get("username")
        return self._username

    # -- one node -----------------------------------------------------------------------------

    def _failed(self, target: ProvisionTarget, reason: str, **details: Any) -> ProvisionOutcome:
        return ProvisionOutcome(
            key=target.key, ok=False, reason=self.redact(reason), hostname=target.name, details=details
        )

    def _provision_one(
        self, target: ProvisionTarget, say: Callable[[str], None], stop: threading.Event
    ) -> ProvisionOutcome:
        run = MachineRun(self, target, say, stop)
        try:
            return run.execute()
        except NodeFailed as exc:
            return self._failed(target, str(exc), **run.details())
        except CredentialError as exc:
            return self._failed(target, f"credentials: {exc}", **run.details())
        except MaasError as exc:
            return self._failed(target, run.explain(exc), **run.details())
