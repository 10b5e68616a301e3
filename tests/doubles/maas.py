"""A MAAS region API 2.0 test double: a real HTTP server on 127.0.0.1 for the tests.

MAAS itself cannot run on the development machines (a snap, needs systemd), so the backend is
tested against this double. It speaks real HTTP and enforces what the backend must get right:

- OAuth 1.0 PLAINTEXT on every call but ``version/``: a wrong key answers 401 with MAAS's own
  text ("Authorization Error: Invalid API key.").
- ``op=`` is read from the query string only; parameters only from a form-encoded body.
- The machine status machine (0 New, 1 Commissioning, 2 Failed commissioning, 4 Ready,
  6 Deployed, 9 Deploying, 10 Allocated, 11 Failed deployment, 12 Releasing): an op the status
  does not allow answers 409 with MAAS's wording ("Invalid transition: Deployed ->
  Commissioning.", "No machine with system ID x available.", "Can't deploy a machine that is
  in the 'New' state").
- A MAC already known (on a machine or a device) is refused on create: 400
  ``{"mac_addresses": ["MAC address ... already in use on HOST."]}``.
- Response shapes as MAAS documents them (system_id, hostname, status, status_name,
  status_message, interface_set[].mac_address, power_type, tag_names, owner, ip_addresses, ...).
- Power goes through Redfish as MAAS's redfish driver does it: on commission and deploy the
  double finds the BMC's system, sets a one-time PXE boot and POSTs ComputerSystem.Reset (On,
  or ForceRestart when already on) to ``power_address`` with the machine's user and password;
  at the end of commissioning the machine powers itself off (ForceOff). When Redfish fails the
  machine goes to Failed commissioning / Failed deployment with a message saying why.

Knobs: ``polls_per_step`` (a Commissioning/Deploying/Releasing machine moves on at the Nth GET
of it), ``fail_commissioning`` / ``fail_deployment`` (MAC -> MAAS's status message),
``add_device`` (a MAC MAAS knows on a non-machine), ``add_machine`` (a machine already there,
to adopt), ``before_op`` (a callback run before an op, e.g. another user taking the machine),
``lose_answer`` (ops that are carried out but whose answer never arrives, once each).
Every request is recorded in ``requests``; every Redfish call in ``redfish_calls``.
"""

from __future__ import annotations

import base64
import json
import random
import re
import secrets
import string
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import requests

API = "/MAAS/api/2.0/"
NEW, COMMISSIONING, FAILED_COMMISSIONING, READY = 0, 1, 2, 4
DEPLOYED, DEPLOYING, ALLOCATED, FAILED_DEPLOYMENT, RELEASING = 6, 9, 10, 11, 12
STATUS_NAMES = {
    NEW: "New",
    COMMISSIONING: "Commissioning",
    FAILED_COMMISSIONING: "Failed commissioning",
    READY: "Ready",
    DEPLOYED: "Deployed",
    DEPLOYING: "Deploying",
    ALLOCATED: "Allocated",
    FAILED_DEPLOYMENT: "Failed deployment",
    RELEASING: "Releasing",
}
# Which statuses each op may start from (a subset of MAAS's NODE_TRANSITIONS).
COMMISSION_FROM = frozenset({NEW, FAILED_COMMISSIONING, READY})
DEPLOY_FROM = frozenset({ALLOCATED})
RELEASE_FROM = frozenset({ALLOCATED, DEPLOYED, FAILED_DEPLOYMENT})
MAC_RE = re.compile(r"^[0-9a-f]{2}([:-][0-9a-f]{2}){5}$")
DEFAULT_COMMISSION_FAILURE = "Commissioning failed: 1 of 14 scripts failed (50-maas-01-commissioning)"
DEFAULT_DEPLOY_FAILURE = "Installation failed (refer to the installation log for more information)."


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    form: dict[str, list[str]]
    content_type: str
    status: int = 0


@dataclass
class Machine:
    system_id: str
    hostname: str
    architecture: str
    macs: list[str]
    power_type: str = "manual"
    power: dict[str, str] = field(default_factory=dict)  # power_address, power_user, power_pass
    status: int = NEW
    status_message: str = ""
    owner: str | None = None
    tags: set[str] = field(default_factory=set)
    polls: int = 0
    power_state: str = "unknown"
    osystem: str = ""
    distro_series: str = ""
    user_data: str = ""
    ip_addresses: list[str] = field(default_factory=list)
    serial: str = "Unknown"
    hardware_uuid: str | None = None

    def view(self) -> dict[str, Any]:
        """The machine as MAAS's API renders it (the fields bringup and most clients read)."""
        interfaces = [
            {
                "id": i + 1,
                "name": f"eth{i}",
                "type": "physical",
                "mac_address": mac,
                "enabled": True,
                "system_id": self.system_id,
                "resource_uri": f"{API}nodes/{self.system_id}/interfaces/{i + 1}/",
            }
            for i, mac in enumerate(self.macs)
        ]
        return {
            "system_id": self.system_id,
            "hostname": self.hostname,
            "fqdn": f"{self.hostname}.maas",
            "domain": {"name": "maas", "id": 0},
            "architecture": self.architecture,
            "status": self.status,
            "status_name": STATUS_NAMES.get(self.status, str(self.status)),
            "status_message": self.status_message or None,
            "node_type": 0,
            "node_type_name": "Machine",
            "owner": self.owner,
            "power_type": self.power_type,
            "power_state": self.power_state,
            "interface_set": interfaces,
            "boot_interface": interfaces[0] if interfaces else None,
            "tag_names": sorted(self.tags),
            "osystem": self.osystem,
            "distro_series": self.distro_series,
            "ip_addresses": list(self.ip_addresses),
            "hardware_uuid": self.hardware_uuid,
            "hardware_info": {"system_serial": self.serial, "system_vendor": "Unknown"},
            "netboot": self.status != DEPLOYED,
            "resource_uri": f"{API}machines/{self.system_id}/",
        }


class ApiError(Exception):
    def __init__(self, status: int, body: Any):
        super().__init__(status)
        self.status, self.body = status, body


def _system_id() -> str:
    return "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(6))


def _key_part(n: int) -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(n))


def parse_oauth(header: str) -> dict[str, str] | None:
    if not header.startswith("OAuth "):
        return None
    return {k: unquote(v) for k, v in re.findall(r'(\w+)="([^"]*)"', header[6:])}


class MaasDouble:
    def __init__(self, *, polls_per_step: int = 1, username: str = "admin", redfish_timeout: float = 10.0):
        self.polls_per_step = polls_per_step
        self.redfish_timeout = redfish_timeout
        self.fail_commissioning: dict[str, str] = {}
        self.fail_deployment: dict[str, str] = {}
        self.before_op: dict[str, Callable[[Machine], None]] = {}
        self.lose_answer: set[str] = set()  # ops carried out whose answer is then lost (once each)
        self.machines: dict[str, Machine] = {}
        self.devices: dict[str, str] = {}  # MAC -> hostname of a non-machine node
        self.tags: dict[str, str] = {}  # name -> comment
        self.requests: list[Recorded] = []
        self.redfish_calls: list[tuple[str, str, str, int | str]] = []  # (system_id, method, url, status)
        self.lock = threading.RLock()
        self._users: dict[str, tuple[str, str, str, bool]] = {}  # consumer -> (token, secret, user, admin)
        self.api_key = self.add_user(username, superuser=True)
        self._ip_counter = 10
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle of the server -------------------------------------------------------------

    def add_user(self, username: str, *, superuser: bool = False) -> str:
        consumer, token, secret = _key_part(18), _key_part(18), _key_part(32)
        self._users[consumer] = (token, secret, username, superuser)
        return f"{consumer}:{token}:{secret}"

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/MAAS"

    def start(self) -> MaasDouble:
        double = self

        class Handler(_Handler):
            pass

        Handler.double = double
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="maas-double", daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> MaasDouble:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- knobs -------------------------------------------------------------------------------

    def add_device(self, hostname: str, macs: list[str]) -> None:
        with self.lock:
            for mac in macs:
                self.devices[mac.lower()] = hostname

    def add_machine(self, hostname: str, macs: list[str], *, status: int = NEW, **fields: Any) -> Machine:
        with self.lock:
            machine = Machine(
                _system_id(), hostname, "amd64/generic", [m.lower() for m in macs], status=status, **fields
            )
            self.machines[machine.system_id] = machine
            return machine

    def machine_by_mac(self, mac: str) -> Machine | None:
        with self.lock:
            return next((m for m in self.machines.values() if mac.lower() in m.macs), None)

    def ops(self, op: str | None = None) -> list[Recorded]:
        """Recorded requests that carried an ``op`` (optionally only that op)."""
        return [r for r in self.requests if "op" in r.query and (op is None or r.query["op"] == [op])]

    # -- authentication ------------------------------------------------------------------------

    def authenticate(self, header: str) -> tuple[str, bool]:
        """(username, is_superuser) or ApiError(401) with MAAS's text."""
        fields = parse_oauth(header or "")
        if fields is None:
            raise ApiError(401, "Authorization Required")
        if fields.get("oauth_signature_method") != "PLAINTEXT" or fields.get("oauth_version", "1.0") != "1.0":
            raise ApiError(401, "Authorization Error: 'Invalid signature method.'")
        if not fields.get("oauth_nonce") or not fields.get("oauth_timestamp", "").isdigit():
            raise ApiError(
                401, "Authorization Error: 'Missing OAuth parameters: oauth_nonce, oauth_timestamp'"
            )
        user = self._users.get(fields.get("oauth_consumer_key", ""))
        if user is None:
            raise ApiError(401, "Authorization Error: Invalid API key.")
        token, secret, username, admin = user
        if fields.get("oauth_token") != token:
            raise ApiError(401, f"Authorization Error: 'Invalid access token: {fields.get('oauth_token')}'")
        if fields.get("oauth_signature") != f"&{secret}":
            raise ApiError(401, "Authorization Error: 'Invalid signature.'")
        return username, admin

    # -- the API ---------------------------------------------------------------------------------

    def handle(
        self, method: str, path: str, query: dict[str, list[str]], form: dict[str, list[str]], auth: str
    ):
        """(status, body) for one request; body is JSON-able or text."""
        if not path.startswith(API):
            raise ApiError(404, "Not Found")
        rest = path[len(API) :]
        if rest == "version/" and method == "GET":
            return 200, {"capabilities": ["networks-management", "static-ipaddresses"], "version": "3.4.2"}
        username, admin = self.authenticate(auth)
        op = (query.get("op") or [None])[0]
        parts = [p for p in rest.split("/") if p]
        if parts == ["users"] and method == "GET" and op == "whoami":
            return 200, {"username": username, "email": f"{username}@example.com", "is_superuser": admin}
        if parts and parts[0] == "machines":
            return self._machines(method, parts[1:], op, query, form, username, admin)
        if parts and parts[0] == "tags":
            return self._tags(method, parts[1:], op, form, admin)
        raise ApiError(404, "Not Found")

    def _machines(self, method, parts, op, query, form, username, admin):
        if not parts:
            if method == "GET" and op is None:
                return 200, self._list(query)
            if method == "POST" and op is None:
                self._need_admin(admin)
                return 200, self._create(form, username)
            if method == "POST" and op == "allocate":
                return 200, self._allocate(form, username)
            raise ApiError(400, f"Unrecognised signature: method={method} op={op}")
        machine = self._get_machine(parts[0])
        if method == "GET" and op is None:
            return 200, self._poll(machine)
        if method == "PUT" and op is None:
            self._need_admin(admin)
            return 200, self._update(machine, form)
        if method == "POST" and op in ("commission", "deploy", "release"):
            callback = self.before_op.get(op)
            if callback:
                with self.lock:
                    callback(machine)
            return 200, getattr(self, f"_{op}")(machine, form, username)
        if method == "DELETE" and op is None:
            self._need_admin(admin)
            with self.lock:
                del self.machines[machine.system_id]
            return 204, None
        raise ApiError(400, f"Unrecognised signature: method={method} op={op}")

    @staticmethod
    def _need_admin(admin: bool) -> None:
        if not admin:
            raise ApiError(403, "You do not have permission to perform this action.")

    def _get_machine(self, system_id: str) -> Machine:
        with self.lock:
            machine = self.machines.get(system_id)
        if machine is None:
            raise ApiError(404, "No Machine matches the given query.")
        return machine

    def _list(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        macs = {m.lower().replace("-", ":") for m in query.get("mac_address", [])}
        hostnames = set(query.get("hostname", []))
        with self.lock:
            return [
                m.view()
                for m in self.machines.values()
                if (not macs or macs & set(m.macs)) and (not hostnames or m.hostname in hostnames)
            ]

    def _create(self, form: dict[str, list[str]], username: str) -> dict[str, Any]:
        errors: dict[str, list[str]] = {}
        arch = (form.get("architecture") or [""])[0]
        if not arch:
            errors["architecture"] = ["This field is required."]
        macs = [m.lower().replace("-", ":") for m in form.get("mac_addresses", [])]
        if not macs:
            errors["mac_addresses"] = ["This field is required."]
        hostname = (form.get("hostname") or [""])[0] or f"machine-{_system_id()}"
        with self.lock:
            for mac in macs:
                if not MAC_RE.match(mac):
                    errors.setdefault("mac_addresses", []).append(f"'{mac}' is not a valid MAC address.")
                    continue
                owner = self.devices.get(mac) or next(
                    (m.hostname for m in self.machines.values() if mac in m.macs), None
                )
                if owner:
                    errors.setdefault("mac_addresses", []).append(
                        f"MAC address {mac} already in use on {owner}."
                    )
            if any(m.hostname == hostname for m in self.machines.values()):
                errors["hostname"] = ["Node with this Hostname already exists."]
            power_type = (form.get("power_type") or ["manual"])[0]
            power = {
                k[len("power_parameters_") :]: v[0]
                for k, v in form.items()
                if k.startswith("power_parameters_")
            }
            if power_type == "redfish" and not power.get("power_address"):
                errors["power_parameters"] = ["power_address: This field is required."]
            if errors:
                raise ApiError(400, errors)
            machine = Machine(_system_id(), hostname, arch, macs, power_type=power_type, power=power)
            self.machines[machine.system_id] = machine
            commission = (form.get("commission") or ["true"])[0].lower() not in ("false", "0")
        if commission:  # what MAAS does for an administrator's new machine
            self._commission(machine, {}, username)
        return machine.view()

    def _update(self, machine: Machine, form: dict[str, list[str]]) -> dict[str, Any]:
        with self.lock:
            if "hostname" in form:
                name = form["hostname"][0]
                if any(m.hostname == name and m is not machine for m in self.machines.values()):
                    raise ApiError(400, {"hostname": ["Node with this Hostname already exists."]})
                machine.hostname = name
            if "power_type" in form:
                machine.power_type = form["power_type"][0]
            for key, values in form.items():
                if key.startswith("power_parameters_"):
                    machine.power[key[len("power_parameters_") :]] = values[0]
            return machine.view()

    def _move(self, machine: Machine, allowed: frozenset[int], target: int) -> None:
        if machine.status not in allowed:
            raise ApiError(
                409, f"Invalid transition: {STATUS_NAMES[machine.status]} -> {STATUS_NAMES[target]}."
            )
        machine.status, machine.polls, machine.status_message = target, 0, ""

    def _commission(self, machine: Machine, form: dict[str, list[str]], username: str) -> dict[str, Any]:
        with self.lock:
            self._move(machine, COMMISSION_FROM, COMMISSIONING)
            machine.status_message = "Commissioning"
        error = self._power_on(machine)
        with self.lock:
            if error:
                machine.status = FAILED_COMMISSIONING
                machine.status_message = f"Failed to power on node - Power on for the node failed: {error}"
            return machine.view()

    def _allocate(self, form: dict[str, list[str]], username: str) -> dict[str, Any]:
        system_id = (form.get("system_id") or [""])[0]
        with self.lock:
            machine = self.machines.get(system_id)
        callback = self.before_op.get("allocate")
        if callback and machine is not None:
            with self.lock:
                callback(machine)
        with self.lock:
            if machine is None or machine.status != READY or machine.owner:
                raise ApiError(409, f"No machine with system ID {system_id} available.")
            machine.status, machine.owner, machine.polls = ALLOCATED, username, 0
            return machine.view()

    def _deploy(self, machine: Machine, form: dict[str, list[str]], username: str) -> dict[str, Any]:
        with self.lock:
            if machine.status not in DEPLOY_FROM:
                raise ApiError(
                    409, f"Can't deploy a machine that is in the '{STATUS_NAMES[machine.status]}' state"
                )
            raw = (form.get("user_data") or [""])[0]
            try:
                user_data = base64.b64decode(raw, validate=True).decode() if raw else ""
            except ValueError:
                raise ApiError(400, {"user_data": ["Enter a valid base64-encoded value."]}) from None
            self._move(machine, DEPLOY_FROM, DEPLOYING)
            machine.osystem = "ubuntu"
            machine.distro_series = (form.get("distro_series") or ["jammy"])[0]
            machine.user_data = user_data
            machine.status_message = "Deploying"
        error = self._power_on(machine)
        with self.lock:
            if error:
                machine.status = FAILED_DEPLOYMENT
                machine.status_message = f"Failed to power on node - Power on for the node failed: {error}"
            return machine.view()

    def _release(self, machine: Machine, form: dict[str, list[str]], username: str) -> dict[str, Any]:
        with self.lock:
            self._move(machine, RELEASE_FROM, RELEASING)
        self._power_off(machine)
        with self.lock:
            return machine.view()

    def _poll(self, machine: Machine) -> dict[str, Any]:
        """A GET of the machine: in-progress steps move on at the Nth poll."""
        power_off = False
        with self.lock:
            if machine.status in (COMMISSIONING, DEPLOYING, RELEASING):
                machine.polls += 1
                if machine.polls >= self.polls_per_step:
                    power_off = self._complete(machine)
        if power_off:  # the ephemeral commissioning OS shuts the machine down
            self._power_off(machine)
        with self.lock:
            return machine.view()

    def _complete(self, machine: Machine) -> bool:
        """Finish the machine's step; True if it should power off now."""
        failing = {
            COMMISSIONING: self.fail_commissioning,
            DEPLOYING: self.fail_deployment,
        }.get(machine.status, {})
        message = next((failing[m] for m in machine.macs if m in failing), None)
        if machine.status == COMMISSIONING:
            if message is not None:
                machine.status, machine.status_message = (
                    FAILED_COMMISSIONING,
                    message or DEFAULT_COMMISSION_FAILURE,
                )
                return False
            machine.status, machine.status_message = READY, ""
            return True
        if machine.status == DEPLOYING:
            if message is not None:
                machine.status, machine.status_message = FAILED_DEPLOYMENT, message or DEFAULT_DEPLOY_FAILURE
            else:
                machine.status, machine.status_message = DEPLOYED, ""
                machine.ip_addresses = [f"10.200.0.{self._ip_counter}"]
                self._ip_counter += 1
            return False
        machine.status, machine.owner, machine.status_message = READY, None, ""  # released
        machine.osystem = machine.distro_series = ""
        return False

    # -- power through Redfish, as MAAS's redfish driver does ---------------------------------------

    def _redfish(self, machine: Machine, method: str, url: str, body: Any = None) -> requests.Response:
        auth = (machine.power.get("power_user", ""), machine.power.get("power_pass", ""))
        try:
            response = requests.request(
                method, url, json=body, auth=auth, timeout=self.redfish_timeout, verify=False
            )
        except requests.RequestException as exc:
            with self.lock:
                self.redfish_calls.append((machine.system_id, method, url, type(exc).__name__))
            raise RuntimeError(f"Redfish request to {url} failed: {type(exc).__name__}") from None
        with self.lock:
            self.redfish_calls.append((machine.system_id, method, url, response.status_code))
        if response.status_code >= 400:
            raise RuntimeError(f"Redfish request failed with response status code: {response.status_code}.")
        return response

    def _system_url(self, machine: Machine) -> tuple[str, dict[str, Any]]:
        address = machine.power.get("power_address", "")
        base = address if address.startswith(("http://", "https://")) else f"https://{address}"
        base = base.rstrip("/")
        members = self._redfish(machine, "GET", f"{base}/redfish/v1/Systems").json().get("Members") or []
        if not members:
            raise RuntimeError("Redfish lists no system")
        url = base + members[0]["@odata.id"]
        return url, self._redfish(machine, "GET", url).json()

    def _power_on(self, machine: Machine) -> str | None:
        """Set a one-time PXE boot and power on (restart if on); the failure text, or None."""
        if machine.power_type != "redfish":
            return None  # manual: the operator powers it
        try:
            url, system = self._system_url(machine)
            self._redfish(
                machine,
                "PATCH",
                url,
                {"Boot": {"BootSourceOverrideEnabled": "Once", "BootSourceOverrideTarget": "Pxe"}},
            )
            reset = (system.get("Actions") or {}).get("#ComputerSystem.Reset", {}).get("target") or (
                f"{urlsplit(url).path}/Actions/ComputerSystem.Reset"
            )
            base = f"{urlsplit(url).scheme}://{urlsplit(url).netloc}"
            kind = "ForceRestart" if system.get("PowerState") == "On" else "On"
            self._redfish(machine, "POST", base + reset, {"ResetType": kind})
        except (RuntimeError, ValueError, KeyError) as exc:
            return str(exc)
        with self.lock:
            machine.power_state = "on"
            machine.serial = system.get("SerialNumber") or machine.serial
            machine.hardware_uuid = system.get("UUID") or machine.hardware_uuid
        return None

    def _power_off(self, machine: Machine) -> None:
        if machine.power_type != "redfish":
            return
        try:
            url, system = self._system_url(machine)
            reset = (system.get("Actions") or {}).get("#ComputerSystem.Reset", {}).get("target") or (
                f"{urlsplit(url).path}/Actions/ComputerSystem.Reset"
            )
            base = f"{urlsplit(url).scheme}://{urlsplit(url).netloc}"
            self._redfish(machine, "POST", base + reset, {"ResetType": "ForceOff"})
        except (RuntimeError, ValueError, KeyError):
            return
        with self.lock:
            machine.power_state = "off"

    # -- tags -------------------------------------------------------------------------------------

    def _tags(self, method, parts, op, form, admin):
        if not parts:
            if method == "GET":
                with self.lock:
                    return 200, [{"name": n, "comment": c, "definition": ""} for n, c in self.tags.items()]
            if method == "POST" and op is None:
                self._need_admin(admin)
                name = (form.get("name") or [""])[0]
                if not re.fullmatch(r"[\w-]+", name):
                    raise ApiError(400, {"name": ["Invalid character in tag name."]})
                with self.lock:
                    if name in self.tags:
                        raise ApiError(400, {"name": ["Tag with this Name already exists."]})
                    self.tags[name] = (form.get("comment") or [""])[0]
                    return 200, {"name": name, "comment": self.tags[name], "definition": ""}
            raise ApiError(400, f"Unrecognised signature: method={method} op={op}")
        name = parts[0]
        with self.lock:
            if name not in self.tags:
                raise ApiError(404, "No Tag matches the given query.")
            if method == "GET" and op is None:
                return 200, {"name": name, "comment": self.tags[name], "definition": ""}
            if method == "POST" and op == "update_nodes":
                self._need_admin(admin)
                added = removed = 0
                for sid in form.get("add", []):
                    if sid in self.machines and name not in self.machines[sid].tags:
                        self.machines[sid].tags.add(name)
                        added += 1
                for sid in form.get("remove", []):
                    if sid in self.machines and name in self.machines[sid].tags:
                        self.machines[sid].tags.discard(name)
                        removed += 1
                return 200, {"added": added, "removed": removed}
        raise ApiError(400, f"Unrecognised signature: method={method} op={op}")


class _Handler(BaseHTTPRequestHandler):
    double: MaasDouble
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _serve(self) -> None:
        split = urlsplit(self.path)
        query = parse_qs(split.query, keep_blank_values=True)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        # Django fills request.POST from form-encoded bodies only; a JSON body carries no parameters.
        form = (
            parse_qs(body.decode(), keep_blank_values=True)
            if content_type == "application/x-www-form-urlencoded"
            else {}
        )
        record = Recorded(self.command, split.path, query, form, content_type)
        with self.double.lock:
            self.double.requests.append(record)
        try:
            status, answer = self.double.handle(
                self.command, split.path, query, form, self.headers.get("Authorization", "")
            )
        except ApiError as exc:
            status, answer = exc.status, exc.body
        record.status = status
        op = (query.get("op") or [None])[0]
        with self.double.lock:
            lose = op in self.double.lose_answer
            self.double.lose_answer.discard(op)
        if lose:  # done, but the connection drops before the answer
            self.close_connection = True
            return
        headers = {}
        if status == 401:
            headers["WWW-Authenticate"] = 'OAuth realm="MAAS API"'
        if answer is None:
            payload, ctype = b"", "text/plain"
        elif isinstance(answer, str):
            payload, ctype = answer.encode(), "text/plain; charset=utf-8"
        else:
            payload, ctype = json.dumps(answer).encode(), "application/json"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = _serve
