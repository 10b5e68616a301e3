"""`bringup provision` for real: QEMU VMs PXE-boot from the project's dnsmasq and boot server.

One PXE lab (bringup.lab.pxe): vm01 (BIOS), vm02 (UEFI) and vm03, which hangs in POST and so
never asks for DHCP. Their BMCs are the lab's sushy-tools emulator, whose notifier starts a VM
when it is powered on with PXE set. `bringup` runs in the provisioning server's namespace.

One test function, in steps, because every step builds on the one before and the lab is
expensive (pytest-xdist would otherwise start one per worker).

The provisioning channel is authenticated throughout: each VM's agent gets its attempt's token
on its kernel command line and sends it back (busybox wget), and a phone-home forged by another
host on the provisioning network during the run is refused and recorded on the node.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from bringup.fleet.store import FleetStore
from tests.lab.conftest import pxe_lab_up

pytestmark = pytest.mark.lab

DHCP_TIMEOUT = 15  # the hanging VM's watchdog; the others get the rack's 120 s
RETRIES = 2


@pytest.fixture(scope="module")
def pxe_lab(tmp_path_factory):
    from bringup.lab.pxe import PxeVmSpec

    vms = [
        PxeVmSpec("vm01", "bios"),
        PxeVmSpec("vm02", "uefi"),
        PxeVmSpec("vm03", "bios", fault="hang", dhcp_timeout=DHCP_TIMEOUT),
    ]
    with pxe_lab_up(tmp_path_factory.mktemp("pxe"), "p", vms) as up:
        yield up


def run(lab, db, *args: str):
    result = lab.bringup(*args, db=db)
    sys.stderr.write(f"$ bringup {' '.join(args)} -> {result.returncode}\n{result.stderr[-4000:]}\n")
    return result


def snapshot(db: Path) -> dict:
    store = FleetStore.open(str(db))
    try:
        return {
            n.name: {
                "state": n.state,
                "ip": n.ip,
                "hostname": n.hostname,
                "hardware": n.hardware,
                "events": [(e.kind, e.reason) for e in store.history(n.name)],
            }
            for n in store.list_nodes()
        }
    finally:
        store.close()


def power_states(lab, state, db) -> dict[str, str]:
    result = run(lab, db, "power", "status", "--rack", state.name, "--json")
    assert result.returncode == 0, result.stderr
    return {r["name"]: r["before"] for r in json.loads(result.stdout)}


def vm_boots(state) -> dict[str, int]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(state.notifier_url, timeout=5) as resp:
        return json.loads(resp.read())["boots"]


def in_server(state, *args: str) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", state.server_netns, *args], stdout=subprocess.DEVNULL)


FORGER = """
import json, sys, time, urllib.error, urllib.request
url, report, until = sys.argv[1], sys.argv[2].encode(), time.monotonic() + float(sys.argv[3])
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
while time.monotonic() < until:
    req = urllib.request.Request(url, data=report, headers={"Content-Type": "application/json"})
    try:
        opener.open(req, timeout=3)
        print("ACCEPTED"); break
    except urllib.error.HTTPError as exc:
        body = exc.read().decode()
        if "came from" in body:  # the node is being provisioned: refused for what it is
            print(exc.code, body.strip()); break
    except OSError:
        pass  # the boot server is not up yet
    time.sleep(0.5)
"""


def forge_phone_home(state, vm, seconds: float) -> tuple[threading.Thread, list[str]]:
    """Another host on the provisioning network (the client namespace, at the rogue address)
    posts a phone-home for ``vm`` with the right serial and MAC, no token, while the run goes on."""
    report = json.dumps({"boot_mac": vm.mac, "macs": [vm.mac], "serial": vm.serial, "ip": vm.provision_ip})
    url = f"http://{state.server_ip}:8080/phone-home/{vm.mac}"
    out: list[str] = []

    def run() -> None:
        cmd = [
            "ip",
            "netns",
            "exec",
            state.client_netns,
            sys.executable,
            "-c",
            FORGER,
            url,
            report,
            str(seconds),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30)
        out.append(proc.stdout.strip())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_provision_two_vms_through_real_pxe(pxe_lab):
    lab, state, db = pxe_lab
    vms = {vm.name: vm for vm in state.vms}

    # Discovery through the emulator: the MACs and serials the VMs will be judged against.
    result = run(lab, db, "discover", "--rack", state.name, "--json")
    assert result.returncode == 0, result.stderr
    discovered = {r["name"]: r for r in json.loads(result.stdout)}
    for name, vm in vms.items():
        assert discovered[name]["serial"] == vm.serial and discovered[name]["macs"] == [vm.mac]
    before = snapshot(db)
    assert {n["state"] for n in before.values()} == {"discovered"}

    # --dry-run: every node and its action; no power action, no state change.
    result = run(lab, db, "provision", "--rack", state.name, "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    plan = {r["name"]: r for r in json.loads(result.stdout)["nodes"]}
    assert set(plan) == set(vms)
    for name, row in plan.items():
        assert row["action"] == "provision"
        assert vms[name].mac in row["would"] and vms[name].provision_ip in row["would"]
    assert "legacy" in plan["vm01"]["would"] and "uefi" in plan["vm02"]["would"]
    assert power_states(lab, state, db) == dict.fromkeys(vms, "Off")
    assert snapshot(db) == before

    # Bad input: the boot server's port is taken -> one line, exit 1, nothing touched.
    holder = in_server(
        state,
        sys.executable,
        "-c",
        f"import socket,time; s=socket.socket(); s.bind(('{state.server_ip}', 8080)); s.listen(); time.sleep(120)",
    )
    try:
        time.sleep(1.0)
        result = run(lab, db, "provision", "--rack", state.name)
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"cannot listen on {state.server_ip}:8080" in errors[0], result.stderr

    # Bad input: another DHCP server answers on the provisioning network.
    rogue_ip = str(__import__("ipaddress").IPv4Network(state.pxe_subnet).network_address + 250)
    subprocess.run(
        ["ip", "netns", "exec", state.client_netns, "ip", "addr", "add", f"{rogue_ip}/24", "dev", "br0"],
        check=True,
    )
    # Its own pid file: dnsmasq replaces the file it is given (as root, even /dev/null).
    rogue = subprocess.Popen(
        [
            "ip", "netns", "exec", state.client_netns, "dnsmasq", "--keep-in-foreground", "--port=0",
            "--interface=br0", "--bind-interfaces", f"--dhcp-range={rogue_ip[:-3]}100,{rogue_ip[:-3]}200,5m",
            f"--dhcp-leasefile={Path(state.state_dir) / 'rogue.leases'}", f"--pid-file={Path(state.state_dir) / 'rogue.pid'}", "--log-facility=-",
        ],
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(1.0)
        result = run(lab, db, "provision", "--rack", state.name)
    finally:
        rogue.terminate()
        rogue.wait()
    assert result.returncode == 1
    assert f"another DHCP server answers on pxe0 ({rogue_ip} offered" in result.stderr
    assert power_states(lab, state, db) == dict.fromkeys(vms, "Off")
    assert snapshot(db) == before

    # The real run: vm01 (BIOS) and vm02 (UEFI) concurrently, vm03 never boots. Meanwhile a
    # host that is not vm01 posts a phone-home in its name.
    forger, forged = forge_phone_home(state, vms["vm01"], 240)
    t0 = time.monotonic()
    result = run(lab, db, "provision", "--rack", state.name, "--dhcp-retries", str(RETRIES), "--json")
    took = time.monotonic() - t0
    forger.join(60)
    assert forged and forged[0].startswith("403 refused: it came from " + rogue_ip), forged
    sys.stderr.write(f"provision of 3 VMs took {took:.0f} s\n")
    assert result.returncode == 1, result.stderr  # vm03 failed
    rows = {r["name"]: r for r in json.loads(result.stdout)["nodes"]}
    store = FleetStore.open(str(db))
    try:
        for name in ("vm01", "vm02"):
            vm = vms[name]
            assert rows[name]["state"] == "provisioned", rows[name]
            node = store.get_node(vm.serial)
            assert (node.state, node.ip, node.hostname) == ("provisioned", vm.provision_ip, name)
            report = node.hardware["provision_report"]
            # What the VM itself says matches what discovery recorded from its BMC.
            assert report["macs"] == node.macs == [vm.mac]
            assert report["serial"] == report["chassis_serial"] == node.serial == vm.serial
            assert report["uuid"].lower() == vm.uuid
            assert report["disks"][0]["serial"] == f"{vm.serial}-D0"
            # The default install_disk rule (smallest) picks that disk by what the node reported.
            assert node.hardware["provision"]["install_disk"]["serial"] == f"{vm.serial}-D0"
            assert node.hardware["provision"]["ipxe"]["mac"] == vm.mac  # iPXE's own view, before any OS
            sys.stderr.write(f"{name} ({vm.firmware}): provisioned in {rows[name]['seconds']} s\n")
        # The forged phone-home: refused, and on vm01's record with the caller's address.
        (rejected,) = [e for e in store.history(vms["vm01"].serial) if e.kind == "provision-rejected"]
        assert rejected.details["peer"] == rogue_ip and rejected.details["what"] == "phone-home"
        assert f"not from {vms['vm01'].provision_ip}" in rejected.reason
        # The agent ramdisk installs nothing and has no sshd: no host keys are recorded.
        assert store.get_node(vms["vm01"].serial).ssh_host_keys == []
        assert store.get_node(vms["vm01"].serial).hardware["provision"]["ipxe"]["platform"] == "pcbios"
        assert store.get_node(vms["vm02"].serial).hardware["provision"]["ipxe"]["platform"] == "efi"
        dead = store.get_node(vms["vm03"].serial)
        assert dead.state == "failed"
        assert f"no DHCP request within {DHCP_TIMEOUT} s" in rows["vm03"]["reason"]
        assert dead.hardware["provision"]["power_ons"] == RETRIES + 1
        last = store.history(dead.name)[-1]
        assert (last.from_state, last.to_state) == ("provisioning", "failed")
    finally:
        store.close()
    assert vm_boots(state)["vm03"] == RETRIES + 1  # really power-cycled that often
    # The VMs' tokens went to them alone: never into the store (not even a refused call's).
    assert b"bringup.token=" not in db.read_bytes() and b"?token=" not in db.read_bytes()

    # Running it again changes nothing: no power action, no record touched.
    after = snapshot(db)
    powers = power_states(lab, state, db)
    boots = vm_boots(state)
    result = run(lab, db, "provision", "--rack", state.name, "--json")
    assert result.returncode == 1  # vm03 is still failed
    again = {r["name"]: r for r in json.loads(result.stdout)["nodes"]}
    assert {n: r["action"] for n, r in again.items()} == dict.fromkeys(vms, "skip")
    assert snapshot(db) == after
    assert power_states(lab, state, db) == powers and vm_boots(state) == boots
