"""Rack variables that reach dnsmasq.conf (dnsmasq runs as root), the iPXE script or
cloud-init are validated by type; a newline can no longer inject a line of its own.

Each case renders through the real renderers (dnsmasq.render_config, scripts.install_script,
scripts.user_data) whatever the settings reader lets through, so the test fails on a reader that
accepts the value AND shows the injected line it would have written."""

from __future__ import annotations

from pathlib import Path

import pytest

from bringup.provision.pxe import scripts
from bringup.provision.pxe.backend import PxeSettings, dnsmasq_config, settings_from_vars
from bringup.provision.pxe.dnsmasq import DnsmasqConfig, DnsmasqError, render_config

RACK = {
    "pxe_interface": "eth1",
    "pxe_server_ip": "10.20.0.1",
    "pxe_subnet": "10.20.0.0/24",
    "pxe_mode": "install",
    "pxe_install_kernel": "http://mirror.example/vmlinuz",
    "pxe_install_initrd": "http://mirror.example/initrd",
    "pxe_install_iso": "http://mirror.example/ubuntu.iso",
    "pxe_ssh_authorized_keys": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGJ0 ops@example",
}

# (variable, value, the line it must never produce)
INJECTIONS = [
    ("pxe_domain", "lab.example\ndhcp-script=/tmp/evil.sh", "dhcp-script=/tmp/evil.sh"),
    ("pxe_domain", "lab.example\nconf-dir=/tmp/evil", "conf-dir=/tmp/evil"),
    ("pxe_router", "10.20.0.254\ndhcp-script=/tmp/evil.sh", "dhcp-script=/tmp/evil.sh"),
    ("pxe_dns_servers", ["10.20.0.53\nconf-dir=/tmp/evil"], "conf-dir=/tmp/evil"),
    ("pxe_dns_servers", "10.20.0.53\ndhcp-script=/tmp/evil.sh", "dhcp-script=/tmp/evil.sh"),
    ("pxe_install_iso", "http://mirror.example/u.iso\nchain http://elsewhere/", "chain http://elsewhere/"),
    (
        "pxe_install_kernel",
        "http://mirror.example/vmlinuz\nchain http://elsewhere/",
        "chain http://elsewhere/",
    ),
    ("pxe_interface", "eth1\ndhcp-script=/tmp/evil.sh", "dhcp-script=/tmp/evil.sh"),
]


def _rendered(s: PxeSettings) -> list[str]:
    """Every line the real renderers write from these settings."""
    cfg = dnsmasq_config(s, f"http://{s.server_ip}:{s.http_port}/boot.ipxe")
    base = f"http://{s.server_ip}:{s.http_port}"
    mac = "02:00:00:00:00:01"
    ipxe = scripts.install_script(
        base, mac, "tok", s.install_kernel or "", s.install_initrd or "", s.install_iso or ""
    )
    spec = scripts.InstallSpec(
        "gpu001", mac, base, {"size": "smallest"}, s.ssh_keys, s.ntp_servers, s.admin_user
    )
    return [
        *render_config(cfg).splitlines(),
        *ipxe.splitlines(),
        *scripts.user_data(spec).splitlines(),
    ]


@pytest.mark.parametrize(
    ("key", "value", "line"), INJECTIONS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(INJECTIONS)]
)
def test_injection_is_refused_before_any_renderer_sees_it(tmp_path: Path, key, value, line):
    settings, problems = settings_from_vars("r01", {**RACK, key: value}, tmp_path)
    written = _rendered(settings) if settings is not None else []
    injected = [w for w in written if w.strip().startswith(line)]
    assert not injected, f"{key} injected a line of its own into a rendered file: {injected}"
    assert settings is None
    assert any(p.startswith(key) and "control character" in p for p in problems), problems


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("pxe_domain", "not a domain!"),
        ("pxe_router", "10.20.0.300"),
        ("pxe_dns_servers", "10.20.0.53, dns.example"),
        ("pxe_install_iso", "ftp://mirror.example/u.iso"),
        ("pxe_install_iso", "http://mirror.example/a b.iso"),
        ("pxe_interface", "eth1;reboot"),
        ("pxe_state_dir", "relative/dir"),
        ("pxe_admin_user", "root; rm -rf /"),
        ("ntp_servers", "ntp.example, -bad-"),
        ("pxe_http_port", 70000),
    ],
)
def test_wrong_type_is_refused_naming_the_variable(tmp_path: Path, key, value):
    settings, problems = settings_from_vars("r01", {**RACK, key: value}, tmp_path)
    assert settings is None
    assert any(p.startswith(key) for p in problems), problems


def test_good_values_still_render(tmp_path: Path):
    vars_ = {
        **RACK,
        "pxe_domain": "lab.example",
        "pxe_router": "10.20.0.254",
        "pxe_dns_servers": ["10.20.0.53", "10.20.0.54"],
        "ntp_servers": "ntp.example, 10.20.0.1",
        "pxe_state_dir": "/var/lib/bringup/pxe/r01",
        "pxe_ssh_authorized_keys": [
            'from="10.0.0.0/8" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGJ0 ops@example',
            "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTY= ",
        ],
    }
    settings, problems = settings_from_vars("r01", vars_, tmp_path)
    assert problems == [] and settings is not None
    lines = _rendered(settings)
    assert "domain=lab.example" in lines
    assert "dhcp-option=option:dns-server,10.20.0.53,10.20.0.54" in lines


@pytest.mark.parametrize(
    "change",
    [
        {"domain": "lab.example\nconf-dir=/tmp/evil"},
        {"router": "10.20.0.254\rdhcp-script=/x"},
        {"dns_servers": ("1.1.1.1\n",)},
    ],
)
def test_the_dnsmasq_renderer_itself_refuses_a_control_character(tmp_path: Path, change):
    # The last line of defence: a caller that skipped the typed settings still writes no line.
    cfg = DnsmasqConfig(
        interface="eth1",
        server_ip="10.20.0.1",
        subnet="10.20.0.0/24",
        boot_url="http://10.20.0.1:8080/boot.ipxe",
        state_dir=tmp_path,
        **change,
    )
    with pytest.raises(DnsmasqError, match="control character"):
        render_config(cfg)


def test_the_admin_user_taken_from_ansible_user_is_checked_as_a_user_name(tmp_path: Path):
    """Without pxe_admin_user, ansible_user names the installed nodes' admin user in cloud-init:
    it went into user-data unchecked."""
    settings, problems = settings_from_vars("r01", {**RACK, "ansible_user": "ops admin"}, tmp_path)
    assert settings is None
    assert problems == [
        "ansible_user: expected a Linux user name, got 'ops admin' "
        "(the installed nodes' admin user, as pxe_admin_user is not set)"
    ]
    settings, problems = settings_from_vars("r01", {**RACK, "ansible_user": "ops"}, tmp_path)
    assert problems == [] and settings is not None and settings.admin_user == "ops"
    # With pxe_admin_user set, ansible_user is Ansible's alone (it may be a template).
    vars_ = {**RACK, "pxe_admin_user": "ubuntu", "ansible_user": "{{ site_user }}"}
    settings, problems = settings_from_vars("r01", vars_, tmp_path)
    assert problems == [] and settings is not None and settings.admin_user == "ubuntu"


def _key_file_rack(tmp_path: Path, pub: str) -> dict:
    (tmp_path / "id").write_text("private")
    (tmp_path / "id.pub").write_text(pub)
    vars_ = {k: v for k, v in RACK.items() if k != "pxe_ssh_authorized_keys"}
    return {**vars_, "ansible_ssh_private_key_file": "{{ inventory_dir }}/id"}


def test_the_key_file_beside_the_private_key_must_hold_public_keys_and_is_never_echoed(tmp_path: Path):
    """The .pub beside ansible_ssh_private_key_file goes into user-data (served over HTTP): a
    private key written there by mistake, or any other text, went out unchecked."""
    secret = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
    settings, problems = settings_from_vars("r01", _key_file_rack(tmp_path, secret), tmp_path)
    assert settings is None
    assert problems[0] == (
        f"ansible_ssh_private_key_file: {tmp_path / 'id.pub'} line 1, 2 is not an SSH public key line "
        "(the installed nodes' authorized keys are read from there)"
    )
    assert "b3Blbn" not in repr(problems)


def test_each_line_of_the_key_file_is_a_key_of_its_own(tmp_path: Path):
    pub = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGJ0 ops@a\n\necdsa-sha2-nistp256 AAAAE2VjZHNh ops@b\n"
    settings, problems = settings_from_vars("r01", _key_file_rack(tmp_path, pub), tmp_path)
    assert problems == [] and settings is not None
    assert settings.ssh_keys == (
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGJ0 ops@a",
        "ecdsa-sha2-nistp256 AAAAE2VjZHNh ops@b",
    )
