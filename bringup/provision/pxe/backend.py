"""The built-in PXE backend: dnsmasq + the boot server + Redfish one-time PXE, per node.

Per node, concurrently within a batch:

1. reserve its IP for its provisioning MAC (a file in dnsmasq's hosts dir: live, no restart)
   and tell the boot server what to serve it (agent ramdisk or installer);
2. set a one-time PXE boot through Redfish and power-cycle it (off, then on);
3. the watchdog: wait for its first DHCP request (dnsmasq's log); none within
   ``pxe_dhcp_timeout`` s -> power-cycle again, up to ``pxe_dhcp_retries`` times -> failed;
4. wait for its phone-home (the agent's report: MACs, serial, UUID, disks);
5. install mode: wait until it answers SSH on its reserved address, running a command there.

Rack variables (inventory ``all.vars``; ``pxe_dhcp_timeout``, ``pxe_dhcp_retries`` and
``install_disk`` may also be set per host): see docs/provision.md.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bringup.inventory.provision_vars import setting_problems
from bringup.provision.backend import Progress, ProvisionOutcome, ProvisionTarget
from bringup.provision.pxe import preflight, scripts, tokens
from bringup.provision.pxe.bootserver import BootServer, NodeBoot
from bringup.provision.pxe.dnsmasq import (
    DhcpLog,
    Dnsmasq,
    DnsmasqConfig,
    DnsmasqError,
    Reservation,
    check_reservation,
)
from bringup.provision.pxe.ramdisk import AGENT_SCRIPT
from bringup.provision.pxe.watchdog import Step, Watchdog, WatchdogPolicy
from bringup.redfish.endpoint import TransportOptions
from bringup.redfish.errors import RedfishError

TRUE = (True, "true", "yes", "1", 1)


def default_state_dir(rack: str) -> Path:
    """Where dnsmasq's configuration, TFTP root, reservations, leases and log live."""
    return Path("/var/lib/bringup/pxe") / rack


@dataclass(frozen=True)
class PxeSettings:
    interface: str
    server_ip: str
    subnet: str
    state_dir: Path
    http_port: int = 8080
    mode: str = "install"  # install | agent
    proxy: bool = False
    enable_ra: bool = False
    agent_dir: Path | None = None
    install_kernel: str | None = None
    install_initrd: str | None = None
    install_iso: str | None = None
    clock_reference: str | None = None
    max_clock_skew: float = 5.0
    check_other_dhcp: bool = True
    dhcp_timeout: float = 180.0
    dhcp_retries: int = 2
    phone_home_timeout: float | None = None  # default: 300 s (agent), 3600 s (install)
    ssh_timeout: float = 600.0
    power_timeout: float = 120.0
    power_poll: float = 2.0
    router: str | None = None
    dns_servers: tuple[str, ...] = ()
    ntp_servers: tuple[str, ...] = ()
    domain: str | None = None
    ssh_keys: tuple[str, ...] = ()
    admin_user: str = "root"
    dnsmasq_binary: str = "dnsmasq"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def phone_home_wait(self) -> float:
        if self.phone_home_timeout is not None:
            return self.phone_home_timeout
        return 300.0 if self.mode == "agent" else 3600.0


def _list(value: Any) -> tuple[str, ...]:
    if value in (None, ""):
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(str(v) for v in value)


def _public_keys(text: str) -> tuple[list[str], list[int]]:
    """The key lines of a .pub file, and the numbers of the lines that are not SSH public keys
    (never their text: a private key put there by mistake must not reach a message)."""
    keys, bad = [], []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if setting_problems({"pxe_ssh_authorized_keys": [line]}):
            bad.append(n)
        else:
            keys.append(line.strip())
    return keys, bad


def settings_from_vars(
    rack: str, rack_vars: Mapping[str, Any], inventory_dir: Path
) -> tuple[PxeSettings | None, list[str]]:
    """The backend's settings from the rack's variables (pure but for reading key files)."""
    # Typed first: a value that would inject a line into dnsmasq.conf or iPXE stops here.
    problems = [f"{key}: {why}" for key, why in setting_problems(rack_vars)]
    if problems:
        return None, problems
    for key in ("pxe_interface", "pxe_server_ip", "pxe_subnet"):
        if rack_vars.get(key) in (None, ""):
            problems.append(f"{key} is not set (rack variable of the pxe provisioner)")
    mode = str(rack_vars.get("pxe_mode", "install"))
    if mode not in ("install", "agent"):
        problems.append(f"pxe_mode must be install or agent, got {mode!r}")
    if problems:
        return None, problems
    subnet = str(rack_vars["pxe_subnet"])
    try:
        net = ipaddress.IPv4Network(subnet, strict=False)
        subnet = net.with_prefixlen
        if ipaddress.IPv4Address(str(rack_vars["pxe_server_ip"])) not in net:
            problems.append(f"pxe_server_ip {rack_vars['pxe_server_ip']} is outside pxe_subnet {subnet}")
    except ValueError as exc:
        problems.append(f"pxe_subnet / pxe_server_ip: {exc}")

    def num(key: str, default: float) -> float:
        value = rack_vars.get(key, default)
        try:
            return float(value)
        except (TypeError, ValueError):
            problems.append(f"{key} must be a number, got {value!r}")
            return default

    keys = list(_list(rack_vars.get("pxe_ssh_authorized_keys")))
    key_file = rack_vars.get("ansible_ssh_private_key_file")
    if not keys and key_file:
        pub = Path(str(key_file).replace("{{ inventory_dir }}", str(inventory_dir)) + ".pub").expanduser()
        if pub.exists():
            keys, bad = _public_keys(pub.read_text(errors="replace"))
            if bad and mode == "install":  # only install mode writes them into user-data
                problems.append(
                    f"ansible_ssh_private_key_file: {pub} line {', '.join(map(str, bad))} is not an SSH "
                    "public key line (the installed nodes' authorized keys are read from there)"
                )
    admin_user = str(rack_vars.get("pxe_admin_user") or rack_vars.get("ansible_user") or "root")
    if mode == "install" and not rack_vars.get("pxe_admin_user") and rack_vars.get("ansible_user"):
        # ansible_user becomes the admin user in cloud-init: typed like pxe_admin_user.
        problems += [
            f"ansible_user: {why} (the installed nodes' admin user, as pxe_admin_user is not set)"
            for _, why in setting_problems({"pxe_admin_user": rack_vars["ansible_user"]})
        ]
    if mode == "install":
        for key in ("pxe_install_kernel", "pxe_install_initrd", "pxe_install_iso"):
            if not rack_vars.get(key):
                problems.append(
                    f"{key} is not set (pxe_mode install boots the Ubuntu installer from these URLs)"
                )
        if not keys:
            problems.append(
                "no SSH key for the installed nodes: set pxe_ssh_authorized_keys, or ansible_ssh_private_key_file "
                "with its .pub beside it"
            )
    settings = PxeSettings(
        interface=str(rack_vars["pxe_interface"]),
        server_ip=str(rack_vars["pxe_server_ip"]),
        subnet=subnet,
        state_dir=Path(str(rack_vars.get("pxe_state_dir") or default_state_dir(rack))),
        http_port=int(num("pxe_http_port", 8080)),
        mode=mode,
        proxy=rack_vars.get("pxe_proxy_dhcp") in TRUE,
        enable_ra=rack_vars.get("pxe_enable_ra") in TRUE,
        agent_dir=Path(str(rack_vars["pxe_agent_dir"])) if rack_vars.get("pxe_agent_dir") else None,
        install_kernel=rack_vars.get("pxe_install_kernel"),
        install_initrd=rack_vars.get("pxe_install_initrd"),
        install_iso=rack_vars.get("pxe_install_iso"),
        clock_reference=rack_vars.get("pxe_clock_reference"),
        max_clock_skew=num("pxe_max_clock_skew", 5.0),
        check_other_dhcp=rack_vars.get("pxe_check_other_dhcp", True) in TRUE,
        dhcp_timeout=num("pxe_dhcp_timeout", 180.0),
        dhcp_retries=int(num("pxe_dhcp_retries", 2)),
        phone_home_timeout=num("pxe_phone_home_timeout", 0) or None,
        ssh_timeout=num("pxe_ssh_timeout", 600.0),
        power_timeout=num("pxe_power_timeout", 120.0),
        power_poll=num("pxe_power_poll", 2.0),
        router=rack_vars.get("pxe_router"),
        dns_servers=_list(rack_vars.get("pxe_dns_servers")),
        ntp_servers=_list(rack_vars.get("ntp_servers")),
        domain=rack_vars.get("pxe_domain"),
        ssh_keys=tuple(keys),
        admin_user=admin_user,
        dnsmasq_binary=str(rack_vars.get("pxe_dnsmasq", "dnsmasq")),
    )
    return (None if problems else settings), problems


def dnsmasq_config(s: PxeSettings, boot_url: str) -> DnsmasqConfig:
    """The dnsmasq configuration these settings ask for, iPXE chaining to ``boot_url``."""
    return DnsmasqConfig(
        interface=s.interface,
        server_ip=s.server_ip,
        subnet=s.subnet,
        boot_url=boot_url,
        state_dir=s.state_dir,
        proxy=s.proxy,
        enable_ra=s.enable_ra,
        router=s.router,
        dns_servers=s.dns_servers,
        ntp_servers=s.ntp_servers,
        domain=s.domain,
    )


def node_policy(settings: PxeSettings, hostvars: Mapping[str, Any]) -> WatchdogPolicy:
    """The watchdog for one node: host variables win over the rack's."""
    timeout = hostvars.get("pxe_dhcp_timeout", settings.dhcp_timeout)
    retries = hostvars.get("pxe_dhcp_retries", settings.dhcp_retries)
    return WatchdogPolicy(float(timeout), int(retries))


class NodeFailed(Exception):
    """One node's provisioning failed; the message is the reason for the operator."""

    def __init__(self, reason: str, details: dict[str, Any] | None = None):
        super().__init__(reason)
        self.details = details or {}


class PxeBackend:
    name = "pxe"

    def __init__(
        self,
        rack: str,
        rack_vars: Mapping[str, Any],
        *,
        inventory_dir: Path,
        transport: TransportOptions | None = None,
        clock: Callable[[], float] = time.monotonic,
        dhcp_probe: Callable[[str, set[str]], str | None] | None = None,
        clock_check: Callable[[str | None, float], preflight.ClockCheck] | None = None,
    ):
        self.rack = rack
        self.settings, self._setting_problems = settings_from_vars(rack, rack_vars, inventory_dir)
        self.inventory_dir = inventory_dir
        self.transport = transport or TransportOptions()
        self._clock = clock
        self._probe = dhcp_probe or preflight.dhcp_problem
        self._clock_check = clock_check or preflight.check_clock
        self.server: BootServer | None = None
        self.dnsmasq: Dnsmasq | None = None
        self.dhcp: DhcpLog | None = None
        self._cancel = threading.Event()
        self._listeners: dict[str, Callable[[str], None]] = {}  # MAC -> the worker's progress line
        self.checked: list[str] = []  # what preflight verified, in words

    # -- preflight ---------------------------------------------------------------------------

    def _target_problems(self, targets: Sequence[ProvisionTarget]) -> list[str]:
        s = self.settings
        assert s is not None
        net = ipaddress.IPv4Network(s.subnet, strict=False)
        problems = []
        ips: dict[str, str] = {}
        for t in targets:
            if not t.provisioning_mac:
                problems.append(f"{t.name}: no provisioning MAC (discovery found no NIC to PXE from)")
                continue
            if t.ip is None and not s.proxy:
                problems.append(f"{t.name}: no address to reserve (set provision_ip or ansible_host)")
                continue
            why = check_reservation(Reservation(t.provisioning_mac, t.ip, t.name), None if s.proxy else net)
            if why:
                problems.append(f"{t.name}: {why}")
            if t.ip and t.ip in ips:
                problems.append(f"{t.name}: address {t.ip} is also reserved for {ips[t.ip]}")
            if t.ip:
                ips.setdefault(t.ip, t.name)
            if t.bmc is None:
                problems.append(f"{t.name}: no usable BMC endpoint (its password reference cannot be read?)")
            try:
                node_policy(s, t.hostvars)
            except (TypeError, ValueError) as exc:
                problems.append(f"{t.name}: pxe_dhcp_timeout / pxe_dhcp_retries: {exc}")
            if s.mode == "install":
                try:
                    scripts.parse_disk_rule(t.hostvars.get("install_disk"))
                except ValueError as exc:
                    problems.append(f"{t.name}: {exc}")
        return problems

    def preflight(self, targets: Sequence[ProvisionTarget]) -> list[str]:
        """Check everything, then bind the boot server and start dnsmasq (no node touched)."""
        if self.settings is None:
            return list(self._setting_problems)
        s = self.settings
        problems = self._target_problems(targets)
        if s.mode == "agent" and (
            s.agent_dir is None
            or not (s.agent_dir / "vmlinuz").exists()
            or not (s.agent_dir / "initrd.gz").exists()
        ):
            problems.append(
                f"pxe_agent_dir {s.agent_dir} holds no vmlinuz + initrd.gz "
                "(build one with: python -m bringup.provision.pxe.ramdisk)"
            )
        clock = self._clock_check(s.clock_reference, s.max_clock_skew)
        (self.checked if clock.ok else problems).append(clock.how)
        if why := preflight.interface_problem(s.interface, s.server_ip):
            problems.append(why)
        else:
            self.checked.append(f"PXE interface {s.interface} is up with {s.server_ip}")
            if s.proxy:
                self.checked.append("proxy-DHCP mode: the site's DHCP server hands out addresses")
            elif s.check_other_dhcp:
                if why := self._probe(s.interface, {s.server_ip}):
                    problems.append(why)
                else:
                    self.checked.append(f"no other DHCP server answered on {s.interface}")
        if problems:
            return problems
        return self._start_servers()

    def _start_servers(self) -> list[str]:
        s = self.settings
        assert s is not None
        try:
            self.server = BootServer(s.server_ip, s.http_port, files_dir=s.agent_dir, on_progress=self._relay)
        except OSError as exc:
            return [f"the boot server cannot listen on {s.server_ip}:{s.http_port}: {exc.strerror or exc}"]
        self.server.start()
        cfg = dnsmasq_config(s, f"{self.server.base_url}/boot.ipxe")
        self.dnsmasq = Dnsmasq(cfg, binary=s.dnsmasq_binary)
        try:
            self.dnsmasq.start()
        except (DnsmasqError, OSError) as exc:
            self.close()
            return [str(exc)]
        self.dhcp = DhcpLog(cfg.log_file, clock=self._clock)
        self.dhcp.start()
        self.checked.append(f"boot server on {self.server.base_url}; dnsmasq on {s.interface}")
        return []

    # -- plan ------------------------------------------------------------------------------------

    def plan_problems(self) -> list[str]:
        """What keeps the dry run from planning any node (the run would stop on the same)."""
        return list(self._setting_problems) if self.settings is None else []

    def plan(self, targets: Sequence[ProvisionTarget]) -> list[str]:
        s = self.settings
        if s is None:  # one line per target, as promised; the run itself would stop on these
            why = "; ".join(self._setting_problems)
            return [f"{t.name}: cannot plan: {why}" for t in targets]
        lines = []
        for t in targets:
            policy = node_policy(s, t.hostvars)
            what = "boot the agent ramdisk, wait for its report" if s.mode == "agent" else "install Ubuntu"
            if s.mode == "install":
                rule = scripts.parse_disk_rule(t.hostvars.get("install_disk"))
                what += f" on the disk matching {rule}, then SSH"
            lines.append(
                f"{t.name}: reserve {t.ip or '(site DHCP)'} for {t.provisioning_mac}, one-time PXE "
                f"({t.boot_mode}) and power-cycle via {t.bmc_address}, {what}; "
                f"watchdog {policy.timeout_s:g} s x {policy.retries + 1} power-ons"
            )
        return lines

    # -- provision --------------------------------------------------------------------------------

    def provision(self, batch: Sequence[ProvisionTarget], progress: Progress) -> Iterator[ProvisionOutcome]:
        if self.server is None or self.dnsmasq is None or self.dhcp is None:
            raise RuntimeError("PxeBackend.provision() before a successful preflight()")
        pool = ThreadPoolExecutor(max_workers=max(1, len(batch)), thread_name_prefix="pxe")
        try:
            pending: dict[Future[ProvisionOutcome], ProvisionTarget] = {
                pool.submit(self._one, t, progress): t for t in batch
            }
            while pending:
                done, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for fut in done:
                    t = pending.pop(fut)
                    try:
                        yield fut.result()
                    except Exception as exc:  # noqa: BLE001 - a bug stays with its node
                        yield ProvisionOutcome(t.key, False, f"internal error: {type(exc).__name__}: {exc}")
        finally:
            if pending:  # an abandoned batch (an interrupt): stop the workers' waits
                self._cancel.set()
            pool.shutdown(wait=True, cancel_futures=True)

    def _node_boot(self, t: ProvisionTarget, mac: str) -> NodeBoot:
        s = self.settings
        assert s is not None and self.server is not None
        base = self.server.base_url
        # The boot server hears this node only from its reserved address (not known in proxy mode).
        address = None if s.proxy else t.ip
        token = tokens.new_token()  # this attempt's; void when _one ends
        if s.mode == "agent":
            script = scripts.agent_script(base, mac, token)
            return NodeBoot(t.key, t.name, mac, "agent", script, address=address, token=token)
        spec = scripts.InstallSpec(
            hostname=t.name,
            mac=mac,
            base_url=base,
            disk_rule=scripts.parse_disk_rule(t.hostvars.get("install_disk")),
            ssh_keys=s.ssh_keys,
            ntp_servers=s.ntp_servers,
            admin_user=s.admin_user,
            agent_script=AGENT_SCRIPT.read_text(),
            token=token,
        )
        return NodeBoot(
            t.key,
            t.name,
            mac,
            "install",
            scripts.install_script(
                base, mac, token, s.install_kernel or "", s.install_initrd or "", s.install_iso or ""
            ),
            user_data=scripts.user_data(spec),
            meta_data=scripts.meta_data(t.name, f"bringup-{t.key}-{int(time.time())}"),
            address=address,
            token=token,
        )

    def _one(self, t: ProvisionTarget, progress: Progress) -> ProvisionOutcome:
        s = self.settings
        assert s is not None and self.server is not None and self.dnsmasq is not None
        mac = t.provisioning_mac or ""
        details: dict[str, Any] = {"backend": "pxe", "mode": s.mode, "mac": mac}

        def say(line: str) -> None:
            progress(t.key, line)

        self.dnsmasq.reserve(Reservation(mac, t.ip, t.name), t.name)
        self.server.set_node(self._node_boot(t, mac))
        self._listeners[mac] = say
        set_at = self._clock()
        try:
            return self._drive(t, mac, details, say)
        except NodeFailed as exc:
            details.update(exc.details)
            return ProvisionOutcome(t.key, False, str(exc), hostname=t.name, details=details)
        except RedfishError as exc:
            redact = t.bmc.redact if t.bmc else (lambda x: x)
            return ProvisionOutcome(t.key, False, f"BMC {exc.kind}: {redact(str(exc))}", details=details)
        finally:
            self._listeners.pop(mac, None)
            self.server.end_attempt(mac)  # its token dies with the attempt
            # Calls the boot server refused for this node; ``details`` is the outcome's own dict,
            # so the orchestrator records each as an event, whichever way the node ended.
            refused = [r for r in self.server.seen(mac).rejected if r["at"] >= set_at]
            if refused:
                details["rejected"] = [{k: v for k, v in r.items() if k != "at"} for r in refused]

    def _drive(
        self, t: ProvisionTarget, mac: str, details: dict[str, Any], say: Callable[[str], None]
    ) -> ProvisionOutcome:
        from bringup.redfish.boot import set_boot_once
        from bringup.redfish.client import RedfishClient
        from bringup.redfish.context import locate
        from bringup.redfish.power import PowerControl, PowerOptions

        s = self.settings
        assert s is not None and self.server is not None and self.dhcp is not None and t.bmc is not None
        policy = node_policy(s, t.hostvars)
        watchdog = Watchdog(policy)
        t0 = self._clock()
        with RedfishClient(t.bmc, self.transport) as client:
            ctx = locate(client)
            power = PowerControl(
                ctx, PowerOptions(graceful_timeout=0, timeout=s.power_timeout, poll=s.power_poll)
            )
            while True:
                boot = set_boot_once(ctx, "Pxe", t.boot_mode)
                if watchdog.attempts == 0:
                    note = f" ({'; '.join(boot.warnings)})" if boot.warnings else ""
                    say(f"one-time PXE boot set ({boot.mode}){note}")
                power.off()
                since = self._clock()
                power.on()
                powered = self._clock()
                watchdog.powered_on(powered)
                say(f"powered on (attempt {watchdog.attempts} of {policy.retries + 1}); waiting for DHCP")
                deadline = watchdog.deadline or 0
                seen = self.dhcp.wait_for(
                    mac, ("DISCOVER", "REQUEST"), since, max(0.0, deadline - self._clock()), self._cancel
                )
                if seen is not None:
                    watchdog.dhcp_seen(max(seen[0], powered))
                if self._cancel.is_set():
                    raise NodeFailed("interrupted while waiting for DHCP")
                step = watchdog.step(self._clock())
                if step is Step.DONE:
                    break
                if step is Step.FAIL:
                    details["power_ons"] = watchdog.attempts
                    raise NodeFailed(watchdog.reason(), details)
                say(f"no DHCP request within {policy.timeout_s:g} s: power-cycling again")
        details["power_ons"] = watchdog.attempts
        details["dhcp_after_s"] = round(watchdog.waited() or 0.0, 1)
        say(f"DHCP request after {details['dhcp_after_s']} s")
        ack = self.dhcp.wait_for(mac, ("ACK",), since, 60, self._cancel)
        if ack is not None:
            details["lease_ip"] = ack[1].ip
            say(f"DHCP lease {ack[1].ip}")
        got = self.server.wait_report(mac, since, s.phone_home_wait, self._cancel)
        seen_node = self.server.seen(mac)
        details["ipxe"] = seen_node.ipxe[-1][1] if seen_node.ipxe else None
        if got is None:
            last = seen_node.progress[-1][1] if seen_node.progress else "nothing after DHCP"
            raise NodeFailed(
                f"no phone-home within {s.phone_home_wait:g} s of the DHCP request (last heard: {last})",
                details,
            )
        when, report = got
        details["phone_home_after_s"] = round(when - since, 1)
        # Which disk the install_disk rule picks among the disks the node itself reported.
        try:
            rule = scripts.parse_disk_rule(t.hostvars.get("install_disk"))
        except ValueError as exc:  # refused at pre-flight in install mode; only noted in agent mode
            details["install_disk"] = {"error": str(exc)}
        else:
            disk = scripts.pick_disk(rule, report.get("disks") or [])
            details["install_disk"] = {
                "rule": rule,
                "name": disk.get("name") if disk else None,
                "serial": disk.get("serial") if disk else None,
            }
        say(f"phone-home after {details['phone_home_after_s']} s")
        ip = report.get("ip") or (ack[1].ip if ack else None) or t.ip
        if s.mode == "install":
            details["ssh"] = self._wait_ssh(t, ip, report, say)
        details["seconds"] = round(self._clock() - t0, 1)
        return ProvisionOutcome(
            t.key, True, "provisioned", ip=ip, hostname=t.name, report=report, details=details
        )

    def _wait_ssh(
        self, t: ProvisionTarget, ip: str | None, report: Mapping[str, Any], say: Callable[[str], None]
    ) -> str:
        from bringup.ssh.fanout import run_script, target_from_vars
        from bringup.ssh.hostkeys import PinnedKeys, clean_keys

        s = self.settings
        assert s is not None
        # Only the system that phoned home (with its token) is the node: its own keys, pinned.
        keys, _ = clean_keys(report.get("ssh_host_keys"))
        now = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        pinned = PinnedKeys(tuple(keys), now, "provision: its phone-home in this run")
        target = target_from_vars(t.name, t.hostvars, self.inventory_dir, ip, pinned=pinned)
        deadline = self._clock() + s.ssh_timeout
        last = ""
        while self._clock() < deadline and not self._cancel.is_set():
            result = run_script(
                target, "hostname; cat /sys/class/dmi/id/product_serial 2>/dev/null || true", 30
            )
            if not result.error and result.rc == 0:
                say(f"SSH answers on {ip}")
                return result.stdout.decode(errors="replace").strip()
            last = result.error or f"exit status {result.rc}"
            time.sleep(5)
        raise NodeFailed(
            f"the installed node does not answer SSH on {ip} within {s.ssh_timeout:g} s ({last})"
        )

    def _relay(self, mac: str, line: str) -> None:
        say = self._listeners.get(mac)
        if say is not None:
            say(line)

    def close(self) -> None:
        self._cancel.set()
        if self.dhcp is not None:
            self.dhcp.stop()
            self.dhcp = None
        if self.dnsmasq is not None:
            self.dnsmasq.stop()
            self.dnsmasq = None
        if self.server is not None:
            self.server.stop()
            self.server = None
