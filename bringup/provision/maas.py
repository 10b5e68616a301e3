"""The MAAS backend: provision a rack through a MAAS region's REST API 2.0.

Per node, driven by the machine's MAAS status so that a second run resumes where the first
stopped: find the machine by MAC (or create it with its MACs and Redfish power parameters),
commission it, wait for Ready, allocate it, deploy it with the distro series and the node's
own cloud-init user data, wait for Deployed, tag it. MAAS's own message (``status_message``,
a 409 or 400 body) becomes the node's failure reason.

The API key (``consumer:token:secret``) comes from a credentials reference (``maas_api_key``),
BMC passwords from each node's ``bmc_password`` reference. Neither ever goes into a log line,
a progress line, an outcome or an exception: every message passes through a redactor.

Rack vars: ``provisioner: maas``, ``maas_url``, ``maas_api_key``, ``maas_distro_series``
(jammy), ``maas_tags`` (list), ``maas_poll_interval_s``, ``maas_commission_timeout_s``,
``maas_deploy_timeout_s``, ``maas_user_data`` (a Jinja2 template path), ``maas_architecture``
(amd64/generic); the user data also reads ``ssh_authorized_keys`` and ``ntp_servers``.
"""

from __future__ import annotations

import base64
import logging
import queue
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any
from urllib.parse import quote

import requests
import yaml

from bringup.credentials import CredentialError, CredentialRef, parse_ref, resolve
from bringup.fleet.lifecycle import State
from bringup.provision.backend import Progress, ProvisionOutcome, ProvisionTarget

log = logging.getLogger("bringup.provision.maas")

DEFAULTS: dict[str, Any] = {
    "maas_distro_series": "jammy",
    "maas_tags": [],
    "maas_poll_interval_s": 10.0,
    # A GPU server's POST alone takes minutes; commissioning boots it twice (enlist + tests).
    "maas_commission_timeout_s": 1800.0,
    "maas_deploy_timeout_s": 2700.0,
    "maas_architecture": "amd64/generic",
}
TAG_NAME = re.compile(r"^[\w-]+$")  # what MAAS accepts as a tag name
_MAX_TRANSPORT_ERRORS = 3  # consecutive failed polls before a node is given up


# -- MAAS machine statuses -------------------------------------------------------------------


class MaasStatus(IntEnum):
    """``status`` of a MAAS machine (maasserver.enum.NODE_STATUS)."""

    NEW = 0
    COMMISSIONING = 1
    FAILED_COMMISSIONING = 2
    MISSING = 3
    READY = 4
    RESERVED = 5
    DEPLOYED = 6
    RETIRED = 7
    BROKEN = 8
    DEPLOYING = 9
    ALLOCATED = 10
    FAILED_DEPLOYMENT = 11
    RELEASING = 12
    FAILED_RELEASING = 13
    DISK_ERASING = 14
    FAILED_DISK_ERASING = 15
    RESCUE_MODE = 16
    ENTERING_RESCUE_MODE = 17
    FAILED_ENTERING_RESCUE_MODE = 18
    EXITING_RESCUE_MODE = 19
    FAILED_EXITING_RESCUE_MODE = 20
    TESTING = 21
    FAILED_TESTING = 22


M = MaasStatus
STATUS_NAMES: dict[int, str] = {
    M.NEW: "New",
    M.COMMISSIONING: "Commissioning",
    M.FAILED_COMMISSIONING: "Failed commissioning",
    M.MISSING: "Missing",
    M.READY: "Ready",
    M.RESERVED: "Reserved",
    M.DEPLOYED: "Deployed",
    M.RETIRED: "Retired",
    M.BROKEN: "Broken",
    M.DEPLOYING: "Deploying",
    M.ALLOCATED: "Allocated",
    M.FAILED_DEPLOYMENT: "Failed deployment",
    M.RELEASING: "Releasing",
    M.FAILED_RELEASING: "Releasing failed",
    M.DISK_ERASING: "Disk erasing",
    M.FAILED_DISK_ERASING: "Failed disk erasing",
    M.RESCUE_MODE: "Rescue mode",
    M.ENTERING_RESCUE_MODE: "Entering rescue mode",
    M.FAILED_ENTERING_RESCUE_MODE: "Failed to enter rescue mode",
    M.EXITING_RESCUE_MODE: "Exiting rescue mode",
    M.FAILED_EXITING_RESCUE_MODE: "Failed to exit rescue mode",
    M.TESTING: "Testing",
    M.FAILED_TESTING: "Failed testing",
}
_FAILED = frozenset(
    {
        M.FAILED_COMMISSIONING,
        M.FAILED_DEPLOYMENT,
        M.FAILED_TESTING,
        M.BROKEN,
        M.MISSING,
        M.FAILED_RELEASING,
        M.FAILED_DISK_ERASING,
        M.FAILED_ENTERING_RESCUE_MODE,
        M.FAILED_EXITING_RESCUE_MODE,
    }
)
COMMISSION_PHASE = frozenset({M.NEW, M.COMMISSIONING, M.TESTING})
DEPLOY_PHASE = frozenset({M.READY, M.ALLOCATED, M.DEPLOYING, M.RELEASING})
OWNED = frozenset({M.ALLOCATED, M.DEPLOYING, M.DEPLOYED, M.FAILED_DEPLOYMENT})


def status_name(status: int) -> str:
    return STATUS_NAMES.get(status, f"status {status}")


def lifecycle_state(status: int) -> State:
    """Where a MAAS status puts the node in bringup's lifecycle."""
    if status == M.DEPLOYED:
        return State.PROVISIONED
    if status == M.RETIRED:
        return State.RETIRED
    if status in _FAILED:
        return State.FAILED
    return State.PROVISIONING


def next_step(status: int, done: frozenset[str]) -> str:
    """What to do with a machine in ``status``, given the actions this run already sent.

    One of: commission, allocate, deploy, release, wait, done, fail. A failed status is
    retried once when this run found it so (an adopted machine); after our own action it is
    the node's failure.
    """
    if status == M.DEPLOYED:
        return "done"
    if status in (M.NEW,):
        return "fail" if "commission" in done else "commission"
    if status in (M.FAILED_COMMISSIONING, M.FAILED_TESTING):
        return "fail" if "commission" in done else "commission"
    if status in (M.COMMISSIONING, M.TESTING, M.DEPLOYING, M.RELEASING):
        return "wait"
    if status == M.READY:
        return "fail" if "allocate" in done else "allocate"
    if status == M.ALLOCATED:
        return "fail" if "deploy" in done else "deploy"
    if status == M.FAILED_DEPLOYMENT:
        return "fail" if "release" in done or "deploy" in done else "release"
    return "fail"


# -- API key and OAuth 1.0 PLAINTEXT signing ------------------------------------------------


@dataclass(frozen=True)
class ApiKey:
    """A MAAS API key, ``consumer_key:token_key:token_secret`` (the consumer secret is empty)."""

    consumer: str
    token: str
    secret: str = field(repr=False)

    @classmethod
    def parse(cls, text: str) -> ApiKey:
        parts = text.strip().split(":")
        if len(parts) != 3 or not all(parts):
            # Never echo the text: it is the secret.
            raise CredentialError(
                "a MAAS API key has three parts, consumer:token:secret (maas apikey --username=USER)"
            )
        return cls(*parts)

    def __repr__(self) -> str:
        return "ApiKey(<redacted>)"


def oauth_header(key: ApiKey, *, nonce: str | None = None, timestamp: int | None = None) -> str:
    """The ``Authorization`` header MAAS expects: OAuth 1.0, PLAINTEXT, empty consumer secret."""
    fields = (
        ("oauth_version", "1.0"),
        ("oauth_signature_method", "PLAINTEXT"),
        ("oauth_consumer_key", key.consumer),
        ("oauth_token", key.token),
        ("oauth_signature", "&" + quote(key.secret, safe="")),  # consumer secret "" & token secret
        ("oauth_nonce", nonce or secrets.token_hex(16)),
        ("oauth_timestamp", str(int(time.time()) if timestamp is None else timestamp)),
    )
    return "OAuth " + ", ".join(f'{name}="{quote(value, safe="&%")}"' for name, value in fields)


def api_base(maas_url: str) -> str:
    """``http://maas:5240/MAAS`` -> ``http://maas:5240/MAAS/api/2.0/``."""
    base = maas_url.rstrip("/")
    if not base.endswith("/api/2.0"):
        base += "/api/2.0"
    return base + "/"


class Redactor:
    """Replaces every known secret in a text; shared by every thread of a run."""

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._lock = threading.Lock()

    def add(self, *values: str | None) -> None:
        with self._lock:
            self._secrets.update(v for v in values if v and len(v) >= 4)

    def __call__(self, text: str) -> str:
        with self._lock:
            found = sorted(self._secrets, key=len, reverse=True)
        for secret in found:
            text = text.replace(secret, "<redacted>")
        return text


# -- the HTTP client ---------------------------------------------------------------------------


class MaasError(RuntimeError):
    """A MAAS call that did not succeed. ``status`` is the HTTP status, None if none came back."""

    def __init__(self, message: str, status: int | None = None, op: str | None = None):
        super().__init__(message)
        self.status = status
        self.op = op


def error_text(response: requests.Response) -> str:
    """MAAS's own words from an error answer: a text body, or a form's field errors."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        parts = []
        for name, errors in body.items():
            errs = errors if isinstance(errors, list) else [errors]
            parts.append(f"{name}: {' '.join(str(e) for e in errs)}")
        text = "; ".join(parts)
    else:
        text = response.text.strip()
    text = text or response.reason or "no message"
    return text[:500]


class MaasClient:
    """The few MAAS API 2.0 calls provisioning needs. Thread-safe: one HTTP session per thread."""

    def __init__(
        self,
        url: str,
        key: ApiKey,
        *,
        timeout: tuple[float, float] = (10.0, 60.0),
        verify: bool | str = True,
    ):
        self.base = api_base(url)
        self._key = key
        self.timeout = timeout
        self.verify = verify
        self._local = threading.local()
        self._sessions: list[requests.Session] = []
        self._lock = threading.Lock()

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            self._local.session = session
            with self._lock:
                self._sessions.append(session)
        return session

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = self._sessions, []
        for session in sessions:
            session.close()

    def call(
        self,
        method: str,
        path: str,
        *,
        op: str | None = None,
        query: Sequence[tuple[str, str]] = (),
        form: Sequence[tuple[str, str]] = (),
    ) -> Any:
        """One API call: ``op`` and filters in the query string, parameters form-encoded."""
        params = ([("op", op)] if op else []) + list(query)
        headers = {"Authorization": oauth_header(self._key), "Accept": "application/json"}
        try:
            response = self._session().request(
                method,
                self.base + path,
                params=params,
                data=list(form) if method != "GET" else None,
                headers=headers,
                timeout=self.timeout,
                verify=self.verify,
            )
        except requests.RequestException as exc:
            raise MaasError(f"cannot reach MAAS at {self.base}: {type(exc).__name__}: {exc}", op=op) from None
        if response.status_code >= 400:
            raise MaasError(error_text(response), response.status_code, op)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise MaasError(f"MAAS answered {path} with something that is not JSON", op=op) from None

    # Calls by name.
    def whoami(self) -> dict[str, Any]:
        return self.call("GET", "users/", op="whoami")

    def machines_by_mac(self, macs: Sequence[str]) -> list[dict[str, Any]]:
        return self.call("GET", "machines/", query=[("mac_address", m) for m in macs])

    def machine(self, system_id: str) -> dict[str, Any]:
        return self.call("GET", f"machines/{system_id}/")

    def create_machine(self, form: Sequence[tuple[str, str]]) -> dict[str, Any]:
        return self.call("POST", "machines/", form=form)

    def update_machine(self, system_id: str, form: Sequence[tuple[str, str]]) -> dict[str, Any]:
        return self.call("PUT", f"machines/{system_id}/", form=form)

    def commission(self, system_id: str) -> dict[str, Any]:
        # skip_bmc_config: keep the Redfish account we gave MAAS; commissioning would
        # otherwise create its own BMC user and rewrite the machine's power parameters.
        return self.call("POST", f"machines/{system_id}/", op="commission", form=[("skip_bmc_config", "1")])

    def allocate(self, system_id: str) -> dict[str, Any]:
        return self.call("POST", "machines/", op="allocate", form=[("system_id", system_id)])

    def deploy(self, system_id: str, distro_series: str, user_data: str) -> dict[str, Any]:
        encoded = base64.b64encode(user_data.encode()).decode()
        form = [("distro_series", distro_series), ("user_data", encoded)]
        return self.call("POST", f"machines/{system_id}/", op="deploy", form=form)

    def release(self, system_id: str) -> dict[str, Any]:
        return self.call("POST", f"machines/{system_id}/", op="release")

    def ensure_tag(self, name: str) -> None:
        try:
            self.call("GET", f"tags/{name}/")
            return
        except MaasError as exc:
            if exc.status != 404:
                raise
        try:
            self.call("POST", "tags/", form=[("name", name), ("comment", "added by bringup")])
        except MaasError as exc:
            if exc.status != 400:  # 400: another client created it meanwhile
                raise
            self.call("GET", f"tags/{name}/")

    def tag_machine(self, name: str, system_id: str) -> None:
        self.call("POST", f"tags/{name}/", op="update_nodes", form=[("add", system_id)])


# -- settings from the rack's vars -------------------------------------------------------------


@dataclass(frozen=True)
class MaasSettings:
    url: str
    api_key: CredentialRef
    distro_series: str
    tags: tuple[str, ...]
    poll_interval_s: float
    commission_timeout_s: float
    deploy_timeout_s: float
    architecture: str
    user_data_template: Path | None


def _seconds(vars_: Mapping[str, Any], name: str, problems: list[str]) -> float:
    value = vars_.get(name, DEFAULTS[name])
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        problems.append(f"{name}: expected a number of seconds, got {value!r}")
        return float(DEFAULTS[name])
    if seconds <= 0:
        problems.append(f"{name}: must be more than 0, got {value!r}")
    return seconds


def settings_from_vars(rack_vars: Mapping[str, Any], base_dir: Path) -> tuple[MaasSettings | None, list[str]]:
    """Read and check the MAAS rack vars; every problem at once, each naming its var."""
    problems: list[str] = []
    url = rack_vars.get("maas_url")
    if not isinstance(url, str) or not re.match(r"^https?://[^/\s]+", url):
        problems.append(f"maas_url: expected the MAAS URL, e.g. http://maas.example:5240/MAAS, got {url!r}")
    key_ref: CredentialRef | None = None
    if rack_vars.get("maas_api_key") in (None, ""):
        problems.append("maas_api_key: missing (a reference: env:VARIABLE or file:/path, mode 0600)")
    else:
        try:
            key_ref = parse_ref(rack_vars["maas_api_key"], base_dir)
        except CredentialError as exc:
            problems.append(f"maas_api_key: {exc}")
    distro = rack_vars.get("maas_distro_series", DEFAULTS["maas_distro_series"])
    if not isinstance(distro, str) or not distro:
        problems.append(f"maas_distro_series: expected a series name like jammy, got {distro!r}")
    tags = rack_vars.get("maas_tags") or []
    if isinstance(tags, str) or not isinstance(tags, list):
        problems.append(f"maas_tags: expected a list of tag names, got {tags!r}")
        tags = []
    for tag in tags:
        if not isinstance(tag, str) or not TAG_NAME.match(tag):
            problems.append(f"maas_tags: {tag!r} is not a MAAS tag name (letters, digits, _ and -)")
    arch = rack_vars.get("maas_architecture", DEFAULTS["maas_architecture"])
    if not isinstance(arch, str) or "/" not in arch:
        problems.append(f"maas_architecture: expected e.g. amd64/generic, got {arch!r}")
    template: Path | None = None
    if rack_vars.get("maas_user_data"):
        template = Path(str(rack_vars["maas_user_data"])).expanduser()
        if not template.is_absolute():
            template = base_dir / template
        if not template.is_file():
            problems.append(f"maas_user_data: template {template} does not exist")
    interval = _seconds(rack_vars, "maas_poll_interval_s", problems)
    commission = _seconds(rack_vars, "maas_commission_timeout_s", problems)
    deploy = _seconds(rack_vars, "maas_deploy_timeout_s", problems)
    if problems or key_ref is None:
        return None, problems
    return (
        MaasSettings(
            url=str(url),
            api_key=key_ref,
            distro_series=str(distro),
            tags=tuple(tags),
            poll_interval_s=interval,
            commission_timeout_s=commission,
            deploy_timeout_s=deploy,
            architecture=str(arch),
            user_data_template=template,
        ),
        [],
    )


# -- per-node cloud-init user data ---------------------------------------------------------------


def _as_list(value: Any) -> list[str]:
    if value in (None, ""):
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def ssh_keys(value: Any, base_dir: Path) -> list[str]:
    """``ssh_authorized_keys`` items: a public key line, or a path to a file of them."""
    keys: list[str] = []
    for item in _as_list(value):
        if re.match(r"^(ssh-|ecdsa-|sk-)", item):
            keys.append(item.strip())
            continue
        path = Path(item).expanduser()
        path = path if path.is_absolute() else base_dir / path
        keys += [line.strip() for line in path.read_text().splitlines() if line.strip()]
    return keys


def render_user_data(
    target: ProvisionTarget, node_vars: Mapping[str, Any], template: Path | None, base_dir: Path
) -> str:
    """The node's cloud-init user data: hostname, SSH keys, NTP (or the rack's own template)."""
    keys = ssh_keys(node_vars.get("ssh_authorized_keys"), base_dir)
    ntp = _as_list(node_vars.get("ntp_servers"))
    if template is not None:
        import jinja2

        env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
        return env.from_string(template.read_text()).render(
            hostname=target.name,
            target=target,
            ssh_authorized_keys=keys,
            ntp_servers=ntp,
            vars=dict(node_vars),
        )
    config: dict[str, Any] = {"hostname": target.name, "preserve_hostname": False, "manage_etc_hosts": True}
    if keys:
        config["ssh_authorized_keys"] = keys
    if ntp:
        config["ntp"] = {"enabled": True, "servers": ntp}
    return "#cloud-config\n" + yaml.safe_dump(config, sort_keys=False)


# -- the backend -----------------------------------------------------------------------------------


class _NodeFailed(Exception):
    """Ends one node's run with this reason (already redacted by the raiser or by the caller)."""


def _macs(target: ProvisionTarget) -> list[str]:
    ordered = [target.provisioning_mac, *target.macs]
    seen: list[str] = []
    for mac in ordered:
        if mac and mac.lower() not in seen:
            seen.append(mac.lower())
    return seen


def _machine_macs(machine: Mapping[str, Any]) -> list[str]:
    return [str(i["mac_address"]).lower() for i in machine.get("interface_set") or [] if i.get("mac_address")]


class MaasBackend:
    """ProvisionBackend over a MAAS region (see the module docstring for the rack vars).

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
        self._clock = clock
        self._running: set[threading.Event] = set()  # one per provision() in progress
        self.redact = Redactor()
        self._client: MaasClient | None = None
        self._client_lock = threading.Lock()
        self._username: str | None = None

    # -- setup ------------------------------------------------------------------------------

    def _settings(self) -> MaasSettings:
        if self.settings is None:
            raise ValueError("MAAS settings are invalid: " + "; ".join(self._problems))
        return self.settings

    def client(self) -> MaasClient:
        """The API client; reads the API key (once) from its reference."""
        with self._client_lock:
            if self._client is None:
                settings = self._settings()
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

    def _power_form(self, target: ProvisionTarget) -> list[tuple[str, str]]:
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
            if not _macs(target):
                problems.append(f"{target.name}: no MAC known; run discover first")
            try:
                self._power_form(target)
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
        settings = self._settings()
        tags = f", tag {','.join(settings.tags)}" if settings.tags else ""
        deploy = f"deploy {settings.distro_series} with cloud-init user data{tags}"
        lines = []
        for target in targets:
            macs = _macs(target)
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
        self._settings()
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
        run = _MachineRun(self, target, say, stop)
        try:
            return run.execute()
        except _NodeFailed as exc:
            return self._failed(target, str(exc), **run.details())
        except CredentialError as exc:
            return self._failed(target, f"credentials: {exc}", **run.details())
        except MaasError as exc:
            return self._failed(target, run.explain(exc), **run.details())


class _MachineRun:
    """One node's way through MAAS, driven by the machine's status (so a rerun resumes)."""

    def __init__(
        self, backend: MaasBackend, target: ProvisionTarget, say: Callable[[str], None], stop: threading.Event
    ):
        self.backend = backend
        self.stop = stop
        self.settings = backend._settings()
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
        power = self.backend._power_form(self.target)  # resolves the BMC password up front
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
                raise _NodeFailed(
                    f"MAAS machine {self.system_id} is {status_name(status)} for MAAS user {owner!r}; "
                    "bringup does not take over another user's machine"
                )
            if step == "done":
                return self._finish(client)
            if step == "fail":
                raise _NodeFailed(self._status_failure(status))
            if step == "wait":
                if phase_deadline is None or phase_deadline[0] != phase:
                    phase_deadline = (phase, self._deadline(phase))
                if self.backend._clock() > phase_deadline[1]:
                    raise _NodeFailed(self._timeout(phase))
                if self.stop.wait(self.settings.poll_interval_s):
                    raise _NodeFailed("stopped before MAAS finished")
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
            phase_deadline = None

    def _deadline(self, phase: str) -> float:
        timeout = (
            self.settings.commission_timeout_s if phase == "commissioning" else self.settings.deploy_timeout_s
        )
        return self.backend._clock() + timeout

    def _timeout(self, phase: str) -> str:
        timeout = (
            self.settings.commission_timeout_s if phase == "commissioning" else self.settings.deploy_timeout_s
        )
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
        macs = _macs(self.target)
        if not macs:
            raise _NodeFailed("no MAC known for this node; run discover first")
        found = client.machines_by_mac(macs)
        if len(found) > 1:
            names = ", ".join(f"{m['system_id']} ({m.get('hostname')})" for m in found)
            raise _NodeFailed(f"the node's MACs belong to several MAAS machines: {names}")
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
                raise _NodeFailed(f"deployed, but tagging it {tag!r} failed: {self.explain(exc)}") from None
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
