"""The boot HTTP server over real HTTP on loopback: scripts per state, seeds, phone-home."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest

from bringup.provision.pxe import scripts
from bringup.provision.pxe.bootserver import BootServer, NodeBoot

MAC = "02:00:00:00:00:01"
TOKEN = "tok-of-gpu001"


@pytest.fixture
def server(tmp_path):
    (tmp_path / "vmlinuz").write_bytes(b"K" * 100_000)
    lines: list[tuple[str, str]] = []
    srv = BootServer(
        "127.0.0.1", 0, files_dir=tmp_path, on_progress=lambda mac, line: lines.append((mac, line))
    )
    srv.start()
    srv.lines = lines  # type: ignore[attr-defined]
    yield srv
    srv.stop()


def get(srv: BootServer, path: str) -> tuple[int, bytes]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(srv.base_url + path, timeout=5) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def post(srv: BootServer, path: str, body: bytes, ctype: str) -> int:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    headers = {"Content-Type": ctype, "X-Bringup-Token": TOKEN}
    req = urllib.request.Request(srv.base_url + path, data=body, headers=headers, method="POST")
    try:
        with opener.open(req, timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def agent_node(srv: BootServer) -> NodeBoot:
    return NodeBoot(
        "SN1",
        "gpu001",
        MAC,
        "agent",
        scripts.agent_script(srv.base_url, MAC, TOKEN),
        address="127.0.0.1",
        token=TOKEN,
    )


def test_boot_script_chains_to_the_node_script(server):
    status, body = get(server, "/boot.ipxe")
    assert status == 200 and f"{server.base_url}/node.ipxe?mac=" in body.decode()


def test_node_script_follows_the_state(server):
    q = f"/node.ipxe?mac={MAC}&uuid=U-1&serial=SN1&platform=efi"
    assert get(server, q)[1].decode() == scripts.unknown_script(MAC)  # not being provisioned
    server.set_node(agent_node(server))
    assert "files/vmlinuz" in get(server, q)[1].decode()
    server.set_mode(MAC, "local")
    assert get(server, q)[1].decode() == scripts.local_script()
    seen = server.seen(MAC)
    assert seen.ipxe[-1][1]["serial"] == "SN1" and seen.ipxe[-1][1]["platform"] == "efi"
    assert get(server, "/node.ipxe")[0] == 400


def test_files_are_served_and_nothing_else(server):
    status, body = get(server, "/files/vmlinuz")
    assert status == 200 and len(body) == 100_000
    assert get(server, "/files/..%2Fvmlinuz")[0] == 404
    assert get(server, "/files/nope")[0] == 404
    assert get(server, "/etc/passwd")[0] == 404


def test_cloud_init_seed_per_node(server):
    server.set_node(
        NodeBoot(
            "SN1",
            "gpu001",
            MAC,
            "install",
            "#!ipxe\n",
            user_data="#cloud-config\n",
            meta_data="m",
            address="127.0.0.1",
            token=TOKEN,
        )
    )
    assert get(server, f"/cloud-init/{MAC}/{TOKEN}/user-data") == (200, b"#cloud-config\n")
    assert get(server, f"/cloud-init/{MAC.upper()}/{TOKEN}/meta-data") == (200, b"m")
    assert get(server, f"/cloud-init/02:00:00:00:00:09/{TOKEN}/user-data")[0] == 404


def test_phone_home_is_stored_and_awaited(server):
    server.set_node(agent_node(server))
    since = server._clock()
    result: list = []
    waiter = threading.Thread(target=lambda: result.append(server.wait_report(MAC, since, timeout=10)))
    waiter.start()
    report = {"macs": [MAC], "serial": "SN1", "disks": []}
    assert post(server, f"/phone-home/{MAC}", json.dumps(report).encode(), "application/json") == 200
    waiter.join(10)
    (got,) = result
    assert got is not None and got[1]["serial"] == "SN1" and got[1]["client"] == "127.0.0.1"
    assert server.wait_report(MAC, got[0] + 1, timeout=0) is None  # nothing newer
    assert (MAC, "phone-home report received") in server.lines


def test_phone_home_as_a_form_and_bad_bodies(server):
    server.set_node(agent_node(server))
    assert (
        post(
            server,
            f"/phone-home/{MAC}",
            b"instance_id=i-1&hostname=gpu001",
            "application/x-www-form-urlencoded",
        )
        == 200
    )
    assert server.seen(MAC).reports[-1][1]["hostname"] == "gpu001"
    assert post(server, f"/phone-home/{MAC}", b"[1, 2]", "application/json") == 400
    assert post(server, "/phone-home/not-a-mac", b"{}", "application/json") == 404


def test_progress_lines_and_installed(server):
    server.set_node(NodeBoot("SN1", "gpu001", MAC, "install", "#!ipxe\n", address="127.0.0.1", token=TOKEN))
    event = {"event_type": "finish", "name": "subiquity/Install/install", "result": "SUCCESS"}
    assert post(server, f"/progress/{MAC}", json.dumps(event).encode(), "application/json") == 200
    assert post(server, f"/progress/{MAC}", b"agent started\n", "text/plain") == 200
    assert (MAC, "finish subiquity/Install/install SUCCESS") in server.lines
    assert (MAC, "agent started") in server.lines
    assert post(server, f"/installed/{MAC}", b"", "text/plain") == 200
    assert server.node(MAC).mode == "local" and server.seen(MAC).installed_at is not None


def test_a_taken_port_fails_at_construction(server):
    with pytest.raises(OSError):
        BootServer("127.0.0.1", server.port)
