"""One process, many fake BMCs: sushy-tools' Redfish emulator served on every system's own IP.

Run as ``python -m bringup.lab.bmc_server --config FILE`` (BmcEmulator does this). FILE is
JSON written by bringup.lab.bmc:

    {"port": 8000, "auth_file": ".../htpasswd", "sushy_state_dir": "...",
     "ready_file": ".../bmc.ready", "external_notification_url": null,
     "lab_state_dir": null,  # the namespace lab's: a power cycle reboots the node (reboot.py)
     "systems": [{"name", "uuid", "serial", "macs", "address", "power_state",
                  "manufacturer", "model"}, ...]}

sushy-tools' Flask app is imported in-process (fake driver, one system per node) and served by
one werkzeug server thread per address, all on the same port. A WSGI filter, placed inside
sushy's basic-auth middleware (so a wrong password is a 401 before anything else), gives every
address the view of a single real BMC: the Systems/Managers/Chassis collections list only its
own member, other systems' URLs answer 404, and the serial number, manufacturer and model we
were given are injected (the fake driver carries none; its chassis template hard-codes a
DMTF mockup serial). Plain HTTP: the lab never leaves loopback/lab subnets.

Where sushy lacks what an iDRAC has and discovery reads, the filter adds it from the system's
config (``lab_resource``, ``_rewrite``): BiosVersion, CPU and memory summaries, the Manager's
firmware version, ``UpdateService/FirmwareInventory``, a system event log at
``Managers/<id>/LogServices/Sel/Entries``, and the hardware inventory of bmc_inventory.py
(Memory, Processors, Storage, BIOS attributes, Chassis Power, with the BMC-side faults).

A system given ``"tree"`` (a captured BMC tree) with ``"user"`` and ``"password"`` is served
from that file by bmc_captured.py instead of sushy: an HGX baseboard system, an AMI BMC,
several managers, a blade with two nodes, as the public captures show them.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from bringup.lab.bmc_captured import captured_app, load_tree
from bringup.lab.bmc_inventory import inventory_resource

ENV_KEY = "bringup.bmc.system"  # WSGI environ key: the system the request's address belongs to
_COLLECTIONS = ("Systems", "Managers", "Chassis")
# Routes under those collections that are not instances (sushy's BIOS registry).
_NOT_INSTANCES = frozenset({("Systems", "Bios")})

StartResponse = Callable[..., Any]
Wsgi = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def _odata(collection: str, ident: str) -> dict[str, str]:
    return {"@odata.id": f"/redfish/v1/{collection}/{ident}"}


class BmcView:
    """WSGI filter: show each address only its own system, with its serial number.

    Given ``power_of`` (a system's power state, by UUID) and ``on_boot``, it also watches each
    system's power after every request to its address, and calls ``on_boot(system)`` when it
    lands On after Off (a power on, an Off+On cycle, a ForceRestart), before the request that
    saw it is answered: a client that reads On finds the node booted (reboot.py)."""

    def __init__(
        self,
        app: Wsgi,
        systems: list[dict[str, Any]],
        power_of: Callable[[str], str] | None = None,
        on_boot: Callable[[dict[str, Any]], None] | None = None,
    ):
        self.app = app
        # Any identity of any lab system, to drop cross-links (e.g. the first chassis links all).
        self._foreign_ids = {s["uuid"] for s in systems} | {s["name"] for s in systems}
        self._power_of, self._on_boot = power_of, on_boot
        self._power = {s["uuid"]: s.get("power_state", "Off") for s in systems}
        self._power_locks = {s["uuid"]: threading.Lock() for s in systems}

    def _watch_power(self, system: dict[str, Any]) -> None:
        if self._power_of is None or self._on_boot is None:
            return
        uuid = system["uuid"]
        with self._power_locks[uuid]:  # one boot at a time per node
            try:
                now = self._power_of(uuid)  # sushy lands a due power change on this read
            except Exception:  # noqa: BLE001 - a failed read must not fail the request
                logging.getLogger("bringup.lab.bmc").exception("%s: power state unreadable", system["name"])
                return
            before, self._power[uuid] = self._power.get(uuid), now
            if before == "Off" and now == "On":
                try:
                    self._on_boot(system)
                except Exception:  # noqa: BLE001 - the BMC answers whatever the node does
                    logging.getLogger("bringup.lab.bmc").exception("%s: boot hook failed", system["name"])

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        system = environ.get(ENV_KEY)
        if system is None:  # not reached through a per-address server: serve sushy as is
            return self.app(environ, start_response)
        own = {system["uuid"], system["name"]}
        parts = environ.get("PATH_INFO", "").strip("/").split("/")
        if (
            len(parts) >= 4
            and parts[:2] == ["redfish", "v1"]
            and parts[2] in _COLLECTIONS
            and (parts[2], parts[3]) not in _NOT_INSTANCES
            and parts[3] not in own
        ):
            return _not_found(environ, start_response)

        if environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
            extra = lab_resource(parts, system)
            if extra is not None:
                return _json(start_response, "200 OK", extra)

        captured: dict[str, Any] = {}

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            captured["status"], captured["headers"] = status, headers
            return lambda data: None  # the legacy write() callable; sushy never uses it

        result = self.app(environ, capture)
        try:
            body = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close:
                close()
        self._watch_power(system)
        status, headers = captured["status"], captured["headers"]
        ctype = next((v for k, v in headers if k.lower() == "content-type"), "")
        if environ.get("REQUEST_METHOD") == "GET" and status.startswith("200") and "json" in ctype:
            try:
                doc = json.loads(body)
            except ValueError:
                doc = None
            if isinstance(doc, dict):
                body = json.dumps(self._rewrite(parts, doc, system), indent=4).encode()
                headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
                headers.append(("Content-Length", str(len(body))))
        start_response(status, headers)
        return [body]

    def _rewrite(self, parts: list[str], doc: dict[str, Any], system: dict[str, Any]) -> dict[str, Any]:
        uuid = system["uuid"]
        doc = self._drop_foreign(doc, {uuid, system["name"]})
        tail = parts[2:]
        if len(tail) == 1 and tail[0] in _COLLECTIONS:
            doc["Members"] = [_odata(tail[0], uuid)]
            doc["Members@odata.count"] = 1
        elif tail in (["Systems", uuid], ["Systems", system["name"]], ["Chassis", uuid]):
            doc["SerialNumber"] = system["serial"]
            doc["Manufacturer"] = system["manufacturer"]
            doc["Model"] = system["model"]
            links = doc.setdefault("Links", {})
            links["ManagedBy"] = [_odata("Managers", uuid)]
            if tail[0] == "Systems":
                links["Chassis"] = [_odata("Chassis", uuid)]
                doc["BiosVersion"] = system.get("bios_version")
                cpu = doc.setdefault("ProcessorSummary", {})
                cpu.update({"Count": system.get("cpu_count"), "Model": system.get("cpu_model")})
                mem = doc.setdefault("MemorySummary", {})
                mem["TotalSystemMemoryGiB"] = system.get("memory_gib")
                # sushy links these only in its "full" feature set; the lab serves them (bmc_inventory.py).
                for key, sub in (
                    ("Memory", "Memory"),
                    ("Processors", "Processors"),
                    ("Storage", "Storage"),
                    ("Bios", "BIOS"),
                ):
                    doc.setdefault(key, {"@odata.id": f"/redfish/v1/Systems/{uuid}/{sub}"})
            else:
                links["ComputerSystems"] = [_odata("Systems", uuid)]
                doc["Power"] = {"@odata.id": f"/redfish/v1/Chassis/{uuid}/Power"}  # bmc_inventory.py
        elif tail == ["Managers", uuid]:
            doc.setdefault("Links", {})["ManagerForChassis"] = [_odata("Chassis", uuid)]
            doc["FirmwareVersion"] = system.get("bmc_firmware", doc.get("FirmwareVersion"))
            doc["LogServices"] = {"@odata.id": f"/redfish/v1/Managers/{uuid}/LogServices"}
        return doc

    def _drop_foreign(self, node: Any, own: set[str]) -> Any:
        """Remove list items that link to another lab system's Systems/Managers/Chassis."""
        if isinstance(node, dict):
            return {k: self._drop_foreign(v, own) for k, v in node.items()}
        if isinstance(node, list):
            return [self._drop_foreign(v, own) for v in node if not self._is_foreign(v, own)]
        return node

    def _is_foreign(self, item: Any, own: set[str]) -> bool:
        if not isinstance(item, dict) or not isinstance(item.get("@odata.id"), str):
            return False
        parts = item["@odata.id"].strip("/").split("/")
        return (
            len(parts) >= 4
            and parts[2] in _COLLECTIONS
            and parts[3] in self._foreign_ids
            and parts[3] not in own
        )


def _collection(path: str, name: str, members: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "@odata.id": path,
        "@odata.type": f"#{name}Collection.{name}Collection",
        "Name": f"{name} Collection",
        "Members": members,
        "Members@odata.count": len(members),
    }


def _firmware(system: dict[str, Any]) -> list[dict[str, Any]]:
    base = "/redfish/v1/UpdateService/FirmwareInventory"
    items = [
        {"id": "BIOS", "name": "BIOS", "version": system.get("bios_version"), "updateable": True},
        {"id": "BMC", "name": "BMC firmware", "version": system.get("bmc_firmware"), "updateable": True},
        *system.get("firmware", []),
    ]
    return [
        {
            "@odata.id": f"{base}/{f['id']}",
            "@odata.type": "#SoftwareInventory.v1_2_0.SoftwareInventory",
            "Id": f["id"],
            "Name": f.get("name", f["id"]),
            "Version": f.get("version"),
            "Updateable": f.get("updateable", True),
            "Status": {"State": "Enabled", "Health": "OK"},
        }
        for f in items
    ]


def _log_entries(system: dict[str, Any], base: str) -> list[dict[str, Any]]:
    return [
        {
            "@odata.id": f"{base}/{e['id']}",
            "@odata.type": "#LogEntry.v1_6_1.LogEntry",
            "Id": str(e["id"]),
            "Name": f"Log Entry {e['id']}",
            "EntryType": "SEL",
            "Severity": e.get("severity", "OK"),
            "Created": e.get("created"),
            "Message": e.get("message", ""),
            "MessageId": e.get("message_id"),
        }
        for e in system.get("event_log", [])
    ]


def lab_resource(parts: list[str], system: dict[str, Any]) -> dict[str, Any] | None:
    """Resources the lab adds to sushy's tree for ``system`` (URL path split on /), or None."""
    tail = parts[2:] if parts[:2] == ["redfish", "v1"] else []
    if (part := inventory_resource(tail, system)) is not None:  # Memory, Processors, Storage, BIOS, Power
        return part
    fw_base = "/redfish/v1/UpdateService/FirmwareInventory"
    if tail == ["UpdateService", "FirmwareInventory"]:
        return _collection(
            fw_base, "SoftwareInventory", [{"@odata.id": f["@odata.id"]} for f in _firmware(system)]
        )
    if len(tail) == 3 and tail[:2] == ["UpdateService", "FirmwareInventory"]:
        return next((f for f in _firmware(system) if f["Id"] == tail[2]), None)
    if len(tail) < 3 or tail[0] != "Managers" or tail[1] != system["uuid"] or tail[2] != "LogServices":
        return None
    services = f"/redfish/v1/Managers/{system['uuid']}/LogServices"
    sel, entries = f"{services}/Sel", f"{services}/Sel/Entries"
    rest = tail[3:]
    if rest == []:
        return _collection(services, "LogService", [{"@odata.id": sel}])
    if rest == ["Sel"]:
        return {
            "@odata.id": sel,
            "@odata.type": "#LogService.v1_2_0.LogService",
            "Id": "Sel",
            "Name": "System Event Log",
            "LogEntryType": "SEL",
            "Entries": {"@odata.id": entries},
        }
    if rest == ["Sel", "Entries"]:
        return _collection(
            entries, "LogEntry", _log_entries(system, entries)
        )  # members inline, as iDRAC does
    if len(rest) == 3 and rest[:2] == ["Sel", "Entries"]:
        return next((e for e in _log_entries(system, entries) if e["Id"] == rest[2]), None)
    return None


def _json(start_response: StartResponse, status: str, doc: dict[str, Any]) -> Iterable[bytes]:
    body = json.dumps(doc, indent=4).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def _not_found(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    body = json.dumps(
        {
            "error": {
                "code": "Base.1.0.ResourceMissingAtURI",
                "message": f"The resource at the URI {environ.get('PATH_INFO', '')} was not found.",
            }
        }
    ).encode()
    start_response(
        "404 NOT FOUND", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    )
    return [body]


def _tagged(app: Wsgi, system: dict[str, Any]) -> Wsgi:
    def tagged(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        environ[ENV_KEY] = system
        return app(environ, start_response)

    return tagged


def _app_for(app: Wsgi, system: dict[str, Any]) -> Wsgi:
    if system.get("tree"):
        return captured_app(load_tree(system["tree"]), system["user"], system["password"])
    return _tagged(app, system)


def build_app(config: dict[str, Any]) -> Wsgi:
    """sushy-tools' Flask app, configured for our systems and wrapped in BmcView (inside auth)."""
    # sushy builds its app at import time from SUSHY_EMULATOR_CONFIG: never let a stray one in.
    os.environ.pop("SUSHY_EMULATOR_CONFIG", None)
    from sushy_tools.emulator import main as sushy_main

    app = sushy_main.app
    systems = config["systems"]
    extra: dict[str, Any] = {
        "SUSHY_EMULATOR_FAKE_DRIVER": True,
        "SUSHY_EMULATOR_STATE_DIR": config["sushy_state_dir"],
        "SUSHY_EMULATOR_FAKE_SYSTEMS": [
            {
                "uuid": s["uuid"],
                "name": s["name"],
                "power_state": s["power_state"],
                "external_notifier": bool(config.get("external_notification_url")),
                "nics": [{"mac": mac} for mac in s["macs"]],
            }
            for s in systems
        ],
        # One chassis per system, sharing its UUID, so each BMC can show its own.
        "SUSHY_EMULATOR_CHASSIS": [{"Id": s["name"], "Name": s["name"], "UUID": s["uuid"]} for s in systems],
    }
    if config.get("external_notification_url"):
        extra["EXTERNAL_NOTIFICATION_URL"] = config["external_notification_url"]
    if config.get("auth_file"):
        extra["SUSHY_EMULATOR_AUTH_FILE"] = config["auth_file"]
    # Order matters: configure() wraps whatever wsgi_app is in basic auth, so auth ends up outside.
    on_boot = boot_hook(config.get("lab_state_dir"))
    app.wsgi_app = BmcView(  # type: ignore[method-assign]
        app.wsgi_app,
        systems,
        power_of=(lambda uuid: app.systems.get_power_state(uuid)) if on_boot else None,
        on_boot=on_boot,
    )
    app.configure(extra_config=extra)
    return app  # type: ignore[no-any-return]


def boot_hook(lab_state_dir: str | None) -> Callable[[dict[str, Any]], None] | None:
    """For the namespace lab's BMCs (``lab_state_dir`` given): a power cycle reboots the node
    (reboot.py), the faults it was started with (``faults`` in its config) kept."""
    if not lab_state_dir:
        return None

    def on_boot(system: dict[str, Any]) -> None:
        from pathlib import Path

        from bringup.lab.reboot import reboot_node

        for line in reboot_node(Path(lab_state_dir), system["name"], system.get("faults", [])):
            logging.getLogger("bringup.lab.bmc").warning("boot: %s", line)

    return on_boot


def warm_up(app: Any, systems: list[dict[str, Any]]) -> None:
    """Build sushy's drivers and write its first-read state before any request arrives.

    sushy builds each driver lazily, unlocked, on the first request that needs it, and the
    first GET of a system or chassis writes its indicator LED into an sqlite file. Served
    cold, the concurrent first GETs of a discovery (one per BMC) race on both: the likeliest
    cause of the one 500 GeneralError CI saw on a loaded machine. Done here, in one thread
    before the sockets open, nothing is left to race.
    """
    for driver in ("systems", "managers", "chassis", "indicators", "vmedia", "storage", "drives", "volumes"):
        getattr(app, driver)
    for system in systems:
        app.indicators.get_indicator_state(system["uuid"])


def serve(config: dict[str, Any]) -> None:
    """Bind every address first (fail fast on a clash), then serve until SIGTERM/SIGINT."""
    from werkzeug.serving import make_server

    # A system with "tree" is a captured BMC served as it is (bmc_captured.py), not by sushy.
    emulated = [s for s in config["systems"] if not s.get("tree")]
    app = build_app({**config, "systems": emulated})
    warm_up(app, emulated)
    port = int(config["port"])
    servers = [make_server(s["address"], port, _app_for(app, s), threaded=True) for s in config["systems"]]
    if config.get("ready_file"):
        # Tells the launcher that THIS process holds every socket: an HTTP answer alone could
        # come from a leftover server on the same address and port.
        with open(config["ready_file"], "w", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    threads = [
        threading.Thread(target=srv.serve_forever, name=f"bmc-{s['name']}", daemon=True)
        for srv, s in zip(servers, config["systems"], strict=True)
    ]
    for t in threads:
        t.start()
    logging.getLogger("bringup.lab.bmc").warning(
        "serving %d BMCs on port %d: %s",
        len(servers),
        port,
        ", ".join(f"{s['name']}@{s['address']}" for s in config["systems"]),
    )
    while not stop.wait(0.5):
        if not all(t.is_alive() for t in threads):
            break
    # shutdown() waits up to a poll interval (0.5 s) per server: do them all at once.
    stoppers = [threading.Thread(target=srv.shutdown) for srv in servers]
    for t in stoppers:
        t.start()
    for t in stoppers:
        t.join(5)
    for srv in servers:
        srv.server_close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bringup.lab.bmc_server", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--config", required=True, help="JSON config written by bringup.lab.bmc")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    with open(args.config, encoding="utf-8") as f:
        config = json.load(f)
    try:
        serve(config)
    except OSError as exc:  # typically "Address already in use" / "Cannot assign requested address"
        print(f"bmc_server: cannot serve: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
