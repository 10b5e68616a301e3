"""Boot tokens over real HTTP on loopback: a call that speaks for a node must carry its attempt's
token, and each refusal is recorded with what was wrong, never with the token itself.

Two nodes are being provisioned: gpu001 at 127.0.0.2 and gpu002 at 127.0.0.3 (Linux answers on
all of 127/8, so a client bound to an address is that host).
"""

from __future__ import annotations

import http.client
import json
import subprocess
from pathlib import Path

import pytest

from bringup.provision.pxe import scripts, tokens
from bringup.provision.pxe.bootserver import BootServer, NodeBoot
from bringup.provision.pxe.ramdisk import AGENT_SCRIPT

A_MAC, A_IP = "02:00:00:00:00:01", "127.0.0.2"
B_MAC, B_IP = "02:00:00:00:00:02", "127.0.0.3"


@pytest.fixture
def server():
    lines: list[tuple[str, str]] = []
    srv = BootServer("127.0.0.1", 0, on_progress=lambda mac, line: lines.append((mac, line)))
    srv.start()
    srv.lines = lines  # type: ignore[attr-defined]
    srv.tokens = {A_MAC: tokens.new_token(), B_MAC: tokens.new_token()}  # type: ignore[attr-defined]
    for key, name, mac, ip in (("SN1", "gpu001", A_MAC, A_IP), ("SN2", "gpu002", B_MAC, B_IP)):
        token = srv.tokens[mac]  # type: ignore[attr-defined]
        srv.set_node(
            NodeBoot(
                key,
                name,
                mac,
                "install",
                scripts.install_script(
                    srv.base_url, mac, token, "http://m/k", "http://m/i", "http://m/x.iso"
                ),
                user_data=f"#cloud-config\n# for {name}\n",
                meta_data="m",
                address=ip,
                token=token,
            )
        )
    yield srv
    srv.stop()


def call(
    srv: BootServer,
    method: str,
    path: str,
    *,
    source: str,
    token: str | None = None,
    body: bytes | None = None,
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(srv.address, srv.port, timeout=5, source_address=(source, 0))
    try:
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers[tokens.HEADER] = token
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def report(mac: str, ip: str, serial: str) -> bytes:
    return json.dumps({"boot_mac": mac, "macs": [mac], "serial": serial, "ip": ip}).encode()


def never_recorded(srv: BootServer) -> None:
    """No token value in any refusal, progress line or report the server kept."""
    kept = json.dumps([srv.seen(m).__dict__ for m in (A_MAC, B_MAC)], default=str) + repr(srv.lines)
    for token in srv.tokens.values():  # type: ignore[attr-defined]
        assert token not in kept


@pytest.mark.parametrize(
    ("presented", "why"),
    [
        (None, "no boot token"),
        ("not-the-token", "a wrong boot token"),
        ("B", "the boot token of another node (gpu002)"),
    ],
    ids=["no-token", "wrong-token", "another-nodes-token"],
)
def test_a_forged_phone_home_is_rejected_and_recorded(server, presented, why):
    token = server.tokens[B_MAC] if presented == "B" else presented
    status, body = call(
        server, "POST", f"/phone-home/{A_MAC}", source=A_IP, token=token, body=report(A_MAC, A_IP, "SN1")
    )
    assert status == 403 and why in body.decode()
    seen = server.seen(A_MAC)
    assert seen.reports == []
    (attempt,) = seen.rejected
    assert (attempt["what"], attempt["peer"], attempt["mac"]) == ("phone-home", A_IP, A_MAC)
    assert why in attempt["reason"]
    assert (A_MAC, f"rejected phone-home from {A_IP}: {attempt['reason']}") in server.lines
    never_recorded(server)
    # The node with its own token is heard.
    ok = call(
        server,
        "POST",
        f"/phone-home/{A_MAC}",
        source=A_IP,
        token=server.tokens[A_MAC],
        body=report(A_MAC, A_IP, "SN1"),
    )
    assert ok[0] == 200 and server.seen(A_MAC).reports[-1][1]["serial"] == "SN1"


@pytest.mark.parametrize("what", ["progress", "installed"])
def test_progress_and_installed_need_the_token(server, what):
    assert call(server, "POST", f"/{what}/{A_MAC}", source=A_IP, body=b"done")[0] == 403
    assert call(server, "POST", f"/{what}/{A_MAC}?token=wrong", source=A_IP, body=b"done")[0] == 403
    assert server.node(A_MAC).mode == "install" and server.seen(A_MAC).installed_at is None
    assert [a["reason"] for a in server.seen(A_MAC).rejected] == ["no boot token", "a wrong boot token"]
    # The installer's webhook and late-command carry it in the URL.
    assert (
        call(server, "POST", f"/{what}/{A_MAC}?token={server.tokens[A_MAC]}", source=A_IP, body=b"done")[0]
        == 200
    )
    never_recorded(server)


def test_user_data_only_for_the_mac_and_token_that_match(server):
    a, b = server.tokens[A_MAC], server.tokens[B_MAC]
    # No token, a wrong one, or gpu002's token for gpu001's seed: refused.
    for path in (
        f"/cloud-init/{A_MAC}/user-data",
        f"/cloud-init/{A_MAC}/x{a}/user-data",
        f"/cloud-init/{A_MAC}/{b}/user-data",
    ):
        status, body = call(server, "GET", path, source=A_IP)
        assert status == 403 and b"gpu001" not in body
    # gpu002 asking for gpu001's user-data, with either token: refused (its address, then the token).
    for token in (a, b):
        status, body = call(server, "GET", f"/cloud-init/{A_MAC}/{token}/user-data", source=B_IP)
        assert status == 403 and b"gpu001" not in body
    reasons = [r["reason"] for r in server.seen(A_MAC).rejected]
    assert reasons[:3] == [
        "no boot token",
        "a wrong boot token",
        "it carries the boot token of another node (gpu002)",
    ]
    assert all(f"it came from {B_IP}" in r for r in reasons[3:]) and len(reasons) == 5
    assert call(server, "GET", f"/cloud-init/{A_MAC}/{a}/user-data", source=A_IP) == (
        200,
        b"#cloud-config\n# for gpu001\n",
    )
    never_recorded(server)


def test_the_token_reaches_only_its_node_in_the_script(server):
    a = server.tokens[A_MAC]
    status, body = call(server, "GET", f"/node.ipxe?mac={A_MAC}", source=A_IP)
    assert status == 200 and f"/cloud-init/{A_MAC}/{a}/" in body.decode()
    status, body = call(server, "GET", f"/node.ipxe?mac={A_MAC}", source=B_IP)
    assert status == 403 and a not in body.decode()


def test_a_token_dies_with_its_attempt(server):
    a = server.tokens[A_MAC]
    server.end_attempt(A_MAC)
    status, body = call(
        server, "POST", f"/phone-home/{A_MAC}", source=A_IP, token=a, body=report(A_MAC, A_IP, "SN1")
    )
    assert status == 403 and b"boot attempt has ended" in body
    assert server.seen(A_MAC).reports == []
    assert call(server, "GET", f"/cloud-init/{A_MAC}/{a}/user-data", source=A_IP)[0] == 403


def test_the_agent_sends_its_token_and_the_installed_systems_host_keys(server, tmp_path: Path):
    # agent.sh as the installed system's first boot runs it (environment, not the kernel line).
    ssh = tmp_path / "ssh"
    ssh.mkdir()
    (ssh / "ssh_host_ed25519_key.pub").write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKey root@gpu001\n")
    (ssh / "ssh_host_rsa_key.pub").write_text("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQRsa root@gpu001\n")
    server.set_node(
        NodeBoot(
            "SN1", "gpu001", A_MAC, "install", "#!ipxe\n", address="127.0.0.1", token=server.tokens[A_MAC]
        )
    )
    env = {
        "BRINGUP_URL": server.base_url,
        "BRINGUP_MAC": A_MAC.upper(),
        "BRINGUP_TOKEN": server.tokens[A_MAC],
        "BRINGUP_SSH_DIR": str(ssh),
        "PATH": "/usr/bin:/bin",
    }
    proc = subprocess.run(["sh", str(AGENT_SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert "report sent" in proc.stdout, proc.stdout + proc.stderr
    ((_, got),) = server.seen(A_MAC).reports
    assert got["ssh_host_keys"] == [
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKey",
        "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQRsa",
    ]
