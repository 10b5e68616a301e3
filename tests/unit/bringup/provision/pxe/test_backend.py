"""The PXE backend's settings, plan and pre-flight (no root: nothing reaches dnsmasq here),
and the lab's VM notifier decisions and QEMU command lines."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from bringup.lab.vms import VmSpec, decide, qemu_command
from bringup.provision.backend import ProvisionTarget
from bringup.provision.pxe.backend import PxeBackend, node_policy, settings_from_vars
from bringup.provision.pxe.preflight import ClockCheck
from bringup.redfish.endpoint import BmcEndpoint

RACK = {
    "pxe_interface": "lo",
    "pxe_server_ip": "127.0.0.1",
    "pxe_subnet": "127.0.0.0/8",
    "pxe_mode": "agent",
    "pxe_check_other_dhcp": False,
}


def target(
    name: str = "gpu001", ip: str | None = "127.0.0.11", mac: str | None = "02:00:00:00:00:01", **hostvars
):
    return ProvisionTarget(
        key=f"SN-{name}",
        name=name,
        serial=f"SN-{name}",
        macs=(mac,) if mac else (),
        provisioning_mac=mac,
        ip=ip,
        bmc_address="http://10.10.0.11:8000",
        hostvars=hostvars,
        profile="h100-sxm-8x400g",
        bmc=BmcEndpoint(name, "http://10.10.0.11:8000", "root", "pw"),
    )


def backend(tmp_path: Path, clock_ok: bool = True, **extra) -> PxeBackend:
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    (agent / "vmlinuz").write_bytes(b"k")
    (agent / "initrd.gz").write_bytes(b"i")
    vars_ = {**RACK, "pxe_agent_dir": str(agent), "pxe_state_dir": str(tmp_path / "state"), **extra}
    return PxeBackend(
        "r01",
        vars_,
        inventory_dir=tmp_path,
        clock_check=lambda ref, skew: ClockCheck(clock_ok, "clock checked (test)"),
        dhcp_probe=lambda iface, own: None,
    )


def test_settings_from_rack_vars(tmp_path):
    s, problems = settings_from_vars(
        "r01", {**RACK, "pxe_dhcp_timeout": "30", "ntp_servers": "a, b"}, tmp_path
    )
    assert problems == [] and s is not None
    assert (s.dhcp_timeout, s.dhcp_retries, s.ntp_servers, s.phone_home_wait) == (30.0, 2, ("a", "b"), 300.0)
    assert s.state_dir == Path("/var/lib/bringup/pxe/r01")


def test_settings_problems_name_the_variable(tmp_path):
    _, problems = settings_from_vars("r01", {"pxe_interface": "eth1"}, tmp_path)
    assert problems == [
        "pxe_server_ip is not set (rack variable of the pxe provisioner)",
        "pxe_subnet is not set (rack variable of the pxe provisioner)",
    ]
    _, problems = settings_from_vars("r01", {**RACK, "pxe_server_ip": "10.9.9.9"}, tmp_path)
    assert problems == ["pxe_server_ip 10.9.9.9 is outside pxe_subnet 127.0.0.0/8"]
    _, problems = settings_from_vars("r01", {**RACK, "pxe_mode": "install"}, tmp_path)
    assert any("pxe_install_kernel is not set" in p for p in problems)
    assert any(p.startswith("no SSH key for the installed nodes") for p in problems)


def test_install_mode_takes_the_key_beside_the_private_one(tmp_path):
    (tmp_path / "id").write_text("private")
    (tmp_path / "id.pub").write_text("ssh-ed25519 AAAA lab\n")
    vars_ = {
        **RACK,
        "pxe_mode": "install",
        "pxe_install_kernel": "http://m/k",
        "pxe_install_initrd": "http://m/i",
        "pxe_install_iso": "http://m/x.iso",
        "ansible_ssh_private_key_file": "{{ inventory_dir }}/id",
    }
    s, problems = settings_from_vars("r01", vars_, tmp_path)
    assert problems == [] and s.ssh_keys == ("ssh-ed25519 AAAA lab",)


def test_host_vars_win_for_the_watchdog(tmp_path):
    s, _ = settings_from_vars("r01", {**RACK, "pxe_dhcp_timeout": 120}, tmp_path)
    assert node_policy(s, {}).timeout_s == 120
    policy = node_policy(s, {"pxe_dhcp_timeout": 15, "pxe_dhcp_retries": 0})
    assert (policy.timeout_s, policy.retries) == (15, 0)


def test_plan_says_what_happens_to_each_node(tmp_path):
    lines = backend(tmp_path).plan([target(), target("gpu002", "127.0.0.12", "02:00:00:00:00:02")])
    assert lines[0] == (
        "gpu001: reserve 127.0.0.11 for 02:00:00:00:00:01, one-time PXE (uefi) and power-cycle via "
        "http://10.10.0.11:8000, boot the agent ramdisk, wait for its report; watchdog 180 s x 3 power-ons"
    )
    assert lines[1].startswith("gpu002: reserve 127.0.0.12")


def test_preflight_target_problems(tmp_path):
    b = backend(tmp_path)
    problems = b.preflight(
        [
            target(),
            target("gpu002", ip=None),
            target("gpu003", ip="127.0.0.11", mac="02:00:00:00:00:03"),
            target("gpu004", mac=None),
        ]
    )
    assert problems == [
        "gpu002: no address to reserve (set provision_ip or ansible_host)",
        "gpu003: address 127.0.0.11 is also reserved for gpu001",
        "gpu004: no provisioning MAC (discovery found no NIC to PXE from)",
    ]
    assert b.server is None and b.dnsmasq is None  # nothing started


def test_preflight_clock_interface_and_agent(tmp_path):
    b = backend(tmp_path, clock_ok=False, pxe_interface="nosuch0", pxe_agent_dir=str(tmp_path / "none"))
    problems = b.preflight([target()])
    assert problems[0].startswith(f"pxe_agent_dir {tmp_path / 'none'} holds no vmlinuz")
    assert problems[1] == "clock checked (test)"
    assert problems[2].startswith("PXE interface nosuch0 does not exist on this server")


def test_install_disk_by_device_path_is_refused(tmp_path):
    b = backend(tmp_path)
    b.settings = type(b.settings)(**{**b.settings.__dict__, "mode": "install"})
    problems = b._target_problems([target(install_disk="/dev/sda")])
    assert len(problems) == 1 and problems[0].startswith(
        "gpu001: install_disk '/dev/sda' names a device path"
    )


def test_a_taken_boot_server_port_is_one_line(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        b = backend(tmp_path, pxe_http_port=port)
        problems = b.preflight([target()])
    b.close()
    assert problems == [f"the boot server cannot listen on 127.0.0.1:{port}: Address already in use"]
    assert b.dnsmasq is None


# -- the lab's VMs ---------------------------------------------------------------------------------


def vm(**kw) -> VmSpec:
    base = {
        "name": "vm01",
        "uuid": "u-1",
        "serial": "PXE1",
        "mac": "02:00:00:00:01:00",
        "firmware": "bios",
        "tap": "tap0",
    }
    return VmSpec(**{**base, **kw})


def test_qemu_command_for_bios_and_uefi(tmp_path):
    bios = qemu_command(vm(), tmp_path, "ns-cli")
    assert bios[:4] == ["ip", "netns", "exec", "ns-cli"] and "-accel" in bios and "tcg" in bios
    joined = " ".join(bios)
    assert "type=1,manufacturer=Dell Inc.,product=PowerEdge XE9680,serial=PXE1" in joined
    assert "virtio-net-pci,netdev=n0,mac=02:00:00:00:01:00,bootindex=1" in joined
    assert "serial=PXE1-D0" in joined and "pflash" not in joined and "-S" not in bios
    uefi = " ".join(qemu_command(vm(firmware="uefi"), tmp_path, None))
    assert "OVMF_CODE_4M.fd" in uefi and str(tmp_path / "vm01" / "OVMF_VARS.fd") in uefi
    assert "-S" in qemu_command(vm(fault="hang"), tmp_path, None)
    with pytest.raises(ValueError, match="firmware"):
        qemu_command(vm(firmware="coreboot"), tmp_path, None)
    with pytest.raises(ValueError, match="unknown fault"):
        qemu_command(vm(fault="melted"), tmp_path, None)


@pytest.mark.parametrize(
    ("system", "running", "action"),
    [
        ({"power_state": "On", "boot_device": "Pxe"}, False, "start"),
        ({"power_state": "On", "boot_device": "Pxe"}, True, "none"),
        ({"power_state": "On", "boot_device": "Hdd"}, False, "none"),  # no disk to boot in the lab
        ({"power_state": "Off", "pending_power": {"power_state": "On"}, "boot_device": "Pxe"}, False, "none"),
        ({"power_state": "Off"}, True, "stop"),
        # ForceRestart: sushy shows Off with the restart pending, then On once it lands.
        ({"power_state": "Off", "pending_power": {"power_state": "ForceRestart"}}, True, "stop"),
        ({"power_state": "On", "pending_power": {"power_state": "Off"}, "boot_device": "Pxe"}, True, "none"),
    ],
)
def test_notifier_decisions(system, running, action):
    assert decide(system, running) == action


@pytest.mark.parametrize("proxy", [False, True])
def test_the_boot_server_hears_a_node_only_from_its_reservation(tmp_path, proxy):
    # The reservation's address is the only peer the boot server accepts for the node; in
    # proxy-DHCP mode the site's DHCP server chooses it, so there is none to check.
    from bringup.provision.pxe.bootserver import BootServer

    b = backend(tmp_path, **({"pxe_proxy_dhcp": True} if proxy else {}))
    b.server = BootServer("127.0.0.1", 0)
    try:
        boot = b._node_boot(target(), "02:00:00:00:00:01")
    finally:
        b.server.stop()
    assert boot.address == (None if proxy else "127.0.0.11")


def test_each_attempt_gets_its_own_token_in_its_script_and_seed(tmp_path):
    from bringup.provision.pxe.bootserver import BootServer

    b = backend(tmp_path)
    b.server = BootServer("127.0.0.1", 0)
    try:
        first = b._node_boot(target(), "02:00:00:00:00:01")
        again = b._node_boot(target(), "02:00:00:00:00:01")
        other = b._node_boot(target("gpu002", "127.0.0.12", "02:00:00:00:00:02"), "02:00:00:00:00:02")
        b.server.set_node(first)
        b.server.end_attempt("02:00:00:00:00:01")
        ended = b.server.node("02:00:00:00:00:01")
    finally:
        b.server.stop()
    assert len({first.token, again.token, other.token}) == 3 and len(first.token) >= 32
    assert f"bringup.token={first.token}" in first.script  # the agent's kernel command line
    assert first.token not in repr(first)  # never printed
    assert ended is not None and ended.token == ""  # void once the attempt ends
