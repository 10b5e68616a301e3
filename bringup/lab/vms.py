"""QEMU VMs for the lab's PXE, powered by the Redfish emulator's external notifier.

sushy-tools PUTs a system's whole record to ``EXTERNAL_NOTIFICATION_URL`` on every change
(power, boot device), synchronously, from inside the BMC request that made the change (a power
change lands on the first GET after its random 1-11 s delay). This module's notifier answers
those PUTs at once and, per system:

    power On (landed), boot device Pxe, no VM running  -> start the VM (it PXE-boots)
    power Off (or a restart passing through Off)       -> stop the VM

It runs detached (``python -m bringup.lab.vms --config FILE``), so a lab outlives the command
that started it; every VM runs in the lab's client namespace, on its own tap in the client
bridge, with the MAC and SMBIOS serial/UUID its BMC reports. ``-accel tcg``: /dev/kvm cannot run
guests on the development machines.

A VM's ``fault`` makes it fail the way delivered servers do: ``hang`` (stuck in POST: QEMU
runs with its CPU stopped, so it never asks for DHCP) or ``unplugged`` (its tap is not on the
bridge: the firmware asks, nobody hears).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bringup.local.procs import stop_child

OVMF_CODE = Path("/usr/share/OVMF/OVMF_CODE_4M.fd")
OVMF_VARS = Path("/usr/share/OVMF/OVMF_VARS_4M.fd")
FAULTS = ("hang", "unplugged")
DISK_BYTES = 64 << 20

log = logging.getLogger("bringup.lab.vms")


@dataclass(frozen=True)
class VmSpec:
    name: str
    uuid: str
    serial: str
    mac: str
    firmware: str  # bios | uefi
    tap: str  # tap interface in the client namespace
    fault: str | None = None
    memory_mb: int = 384


def qemu_command(vm: VmSpec, state_dir: Path, netns: str | None) -> list[str]:
    """The QEMU command line for ``vm`` (pure: paths are derived, not checked)."""
    if vm.firmware not in ("bios", "uefi"):
        raise ValueError(f"VM {vm.name}: firmware must be bios or uefi, got {vm.firmware!r}")
    if vm.fault is not None and vm.fault not in FAULTS:
        raise ValueError(f"VM {vm.name}: unknown fault {vm.fault!r} (known: {', '.join(FAULTS)})")
    d = state_dir / vm.name
    cmd = [
        *(["ip", "netns", "exec", netns] if netns else []),
        "qemu-system-x86_64",
        "-name",
        vm.name,
        "-machine",
        "q35",
        "-accel",
        "tcg",
        "-smp",
        "1",
        "-m",
        str(vm.memory_mb),
        "-display",
        "none",
        "-nodefaults",
        "-uuid",
        vm.uuid,
        "-smbios",
        f"type=1,manufacturer=Dell Inc.,product=PowerEdge XE9680,serial={vm.serial}",
        "-smbios",
        f"type=3,manufacturer=Dell Inc.,serial={vm.serial}",
        "-netdev",
        f"tap,id=n0,ifname={vm.tap},script=no,downscript=no",
        "-device",
        f"virtio-net-pci,netdev=n0,mac={vm.mac},bootindex=1",
        "-drive",
        f"if=none,id=d0,file={d / 'disk.img'},format=raw",
        "-device",
        f"virtio-blk-pci,drive=d0,serial={vm.serial}-D0",
        "-serial",
        f"file:{d / 'serial.log'}",
        "-pidfile",
        str(d / "qemu.pid"),
    ]
    if vm.firmware == "uefi":
        cmd += [
            "-drive",
            f"if=pflash,format=raw,unit=0,readonly=on,file={OVMF_CODE}",
            "-drive",
            f"if=pflash,format=raw,unit=1,file={d / 'OVMF_VARS.fd'}",
        ]
    if vm.fault == "hang":
        cmd.append("-S")  # the CPU never starts: a server stuck in POST
    return cmd


def decide(system: dict[str, Any], running: bool) -> str:
    """What a power notification means for the VM: start, stop or nothing (pure)."""
    power = system.get("power_state")
    pending = system.get("pending_power") or {}
    if power == "Off":
        return "stop" if running else "none"
    if power == "On" and not pending and not running:
        return "start" if system.get("boot_device") == "Pxe" else "none"
    return "none"


class VmRunner:
    """Starts and stops the lab's VMs by name; one QEMU process per running VM."""

    def __init__(self, vms: list[VmSpec], state_dir: Path, netns: str | None, bridge: str | None):
        self.vms = {vm.name: vm for vm in vms}
        self.state_dir = state_dir
        self.netns, self.bridge = netns, bridge
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()
        self.boots: dict[str, int] = {vm.name: 0 for vm in vms}

    def running(self, name: str) -> bool:
        proc = self._procs.get(name)
        return proc is not None and proc.poll() is None

    def _ip(self, *args: str) -> None:
        prefix = ["ip", "netns", "exec", self.netns] if self.netns else []
        subprocess.run([*prefix, "ip", *args], check=True, capture_output=True, timeout=30)

    def start(self, name: str) -> None:
        vm = self.vms[name]
        d = self.state_dir / vm.name
        d.mkdir(parents=True, exist_ok=True)
        disk = d / "disk.img"
        if not disk.exists():
            with disk.open("wb") as f:
                f.truncate(DISK_BYTES)
        if vm.firmware == "uefi" and not (d / "OVMF_VARS.fd").exists():
            shutil.copyfile(OVMF_VARS, d / "OVMF_VARS.fd")
        # The tap is re-created for every boot: QEMU holds it while it runs.
        self._ip("tuntap", "add", "dev", vm.tap, "mode", "tap")
        if vm.fault != "unplugged" and self.bridge:
            self._ip("link", "set", vm.tap, "master", self.bridge)
        self._ip("link", "set", vm.tap, "up")
        with (d / "qemu.log").open("ab") as out:
            self._procs[name] = subprocess.Popen(
                qemu_command(vm, self.state_dir, self.netns),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.boots[name] += 1
        log.warning(
            "started VM %s (%s%s), boot %d",
            name,
            vm.firmware,
            f", fault {vm.fault}" if vm.fault else "",
            self.boots[name],
        )

    def stop(self, name: str) -> None:
        proc = self._procs.pop(name, None)
        if proc is not None:
            stop_child(proc, grace_s=10)
        vm = self.vms[name]
        # QEMU's exit may already have removed the tap, or it never existed.
        with contextlib.suppress(subprocess.CalledProcessError):
            self._ip("link", "del", vm.tap)
        if proc is not None:
            log.warning("stopped VM %s", name)

    def handle(self, system: dict[str, Any]) -> str:
        name = system.get("name")
        if name not in self.vms:
            return "unknown"
        with self._lock:
            action = decide(system, self.running(name))
            if action == "start":
                self.start(name)
            elif action == "stop":
                self.stop(name)
        return action

    def stop_all(self) -> None:
        for name in list(self._procs):
            self.stop(name)


def _handler(runner: VmRunner) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def _answer(self, status: int, doc: dict[str, Any]) -> None:
            body = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_PUT(self) -> None:  # noqa: N802
            try:
                system = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                action = runner.handle(system)
            except Exception as exc:  # noqa: BLE001 - sushy must get its answer, whatever broke
                log.exception("notification failed")
                return self._answer(500, {"error": str(exc)})
            self._answer(200, {"action": action})

        def do_GET(self) -> None:  # noqa: N802
            # Also the lab's clock reference (the Date header) and a status page.
            self._answer(
                200,
                {"running": [n for n in runner.vms if runner.running(n)], "boots": runner.boots},
            )

    return Handler


def serve(config: dict[str, Any], on_ready: Callable[[], None] | None = None) -> None:
    vms = [VmSpec(**v) for v in config["vms"]]
    runner = VmRunner(vms, Path(config["vm_dir"]), config.get("netns"), config.get("bridge"))
    httpd = ThreadingHTTPServer((config["address"], int(config["port"])), _handler(runner))
    httpd.daemon_threads = True
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    if config.get("ready_file"):
        Path(config["ready_file"]).write_text(f"{os.getpid()}\n")
    if on_ready:
        on_ready()
    log.warning(
        "VM notifier on %s:%s for %s", config["address"], config["port"], ", ".join(v.name for v in vms)
    )
    try:
        while not stop.wait(0.5):
            pass
    finally:
        httpd.shutdown()
        httpd.server_close()
        runner.stop_all()


def write_config(
    path: Path,
    *,
    address: str,
    port: int,
    vm_dir: Path,
    netns: str,
    bridge: str,
    vms: list[VmSpec],
    ready_file: Path,
) -> None:
    doc = {
        "address": address,
        "port": port,
        "vm_dir": str(vm_dir),
        "netns": netns,
        "bridge": bridge,
        "ready_file": str(ready_file),
        "vms": [asdict(v) for v in vms],
    }
    path.write_text(json.dumps(doc, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bringup.lab.vms", description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    config = json.loads(Path(args.config).read_text())
    try:
        serve(config)
    except OSError as exc:
        print(f"vm notifier: cannot serve: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
