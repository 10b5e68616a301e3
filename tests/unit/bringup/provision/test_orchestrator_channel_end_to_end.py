"""The provisioning channel end to end: a real boot server over real HTTP on loopback, the
orchestrator and a real fleet store. Forged calls during a node's attempt become
``provision-rejected`` events on it; the node's own report, carried with its token, is then
reconciled (a report with no serial fails the node). No token value reaches the store.

The backend here drives the real BootServer the way the PXE backend does (a token per attempt,
a NodeBoot, wait for the report, void the token, hand over what was refused); the node is this
test, posting over HTTP from its reserved address 127.0.0.2 with what its script gave it.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Iterator

import pytest

from bringup.provision.backend import ProvisionOutcome
from bringup.provision.orchestrator import Orchestrator
from bringup.provision.pxe import scripts, tokens
from bringup.provision.pxe.bootserver import BootServer, NodeBoot
from tests.unit.bringup.provision import test_orchestrator as base
from tests.unit.bringup.provision.test_orchestrator import discover, mac, selection

env = base.env  # the fixture: an inventory and a store
NODE_IP, STRANGER = "127.0.0.2", "127.0.0.1"


class HttpBackend:
    name = "pxe"

    def __init__(self, node: Callable[[BootServer, str, str], None]):
        self.server = BootServer("127.0.0.1", 0)
        self.server.start()
        self.node = node  # what happens on the wire during the attempt: (server, mac, token)
        self.tokens: list[str] = []

    def provision(self, batch, progress) -> Iterator[ProvisionOutcome]:
        for t in batch:
            m = t.provisioning_mac
            token = tokens.new_token()
            self.tokens.append(token)
            script = scripts.agent_script(self.server.base_url, m, token)
            self.server.set_node(NodeBoot(t.key, t.name, m, "agent", script, address=NODE_IP, token=token))
            since = self.server._clock()
            self.node(self.server, m, token)
            got = self.server.wait_report(m, since, timeout=5)
            self.server.end_attempt(m)
            details = {
                "mode": "agent",
                "rejected": [{k: v for k, v in r.items() if k != "at"} for r in self.server.seen(m).rejected],
            }
            if got is None:
                yield ProvisionOutcome(t.key, False, "no phone-home", details=details)
            else:
                yield ProvisionOutcome(t.key, True, "provisioned", ip=NODE_IP, report=got[1], details=details)

    def close(self) -> None:
        self.server.stop()


def call(
    srv: BootServer,
    method: str,
    path: str,
    *,
    source: str,
    token: str | None = None,
    body: dict | None = None,
) -> int:
    conn = http.client.HTTPConnection(srv.address, srv.port, timeout=5, source_address=(source, 0))
    try:
        headers = {"Content-Type": "application/json", **({tokens.HEADER: token} if token else {})}
        conn.request(
            method, path, body=json.dumps(body).encode() if body is not None else None, headers=headers
        )
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


@pytest.fixture
def run(env):
    _, inv, store = env
    discover(store)
    backends = []

    def go(node):
        backend = HttpBackend(node)
        backends.append(backend)
        (result,) = Orchestrator(store, backend, rack="r01").run(
            selection(inv, store, only=["gpu001"]).targets, {}
        )
        return result, backend

    yield store, go
    for b in backends:
        b.close()


def test_forged_calls_are_refused_and_recorded_then_a_report_with_no_serial_fails_the_node(run):
    store, go = run
    other_node_token = tokens.new_token()
    statuses = []

    def node(srv: BootServer, m: str, token: str) -> None:
        # Another node being provisioned at the same time, whose token a forger might hold.
        srv.set_node(
            NodeBoot(
                "SN9", "gpu009", mac(9), "agent", "#!ipxe\n", address="127.0.0.9", token=other_node_token
            )
        )
        report = {"boot_mac": m, "macs": [m], "serial": "SN1"}
        statuses.append(call(srv, "POST", f"/phone-home/{m}", source=NODE_IP, body=report))  # no token
        statuses.append(call(srv, "POST", f"/phone-home/{m}", source=NODE_IP, token="guessed", body=report))
        statuses.append(
            call(srv, "POST", f"/phone-home/{m}", source=NODE_IP, token=other_node_token, body=report)
        )
        statuses.append(
            call(srv, "GET", f"/cloud-init/{m}/{token}/user-data", source=STRANGER)
        )  # another host
        statuses.append(call(srv, "POST", f"/installed/{m}", source=NODE_IP))  # anyone marking it installed
        # Then the node itself, with its token, but a report that says nothing about which box it is.
        statuses.append(
            call(
                srv,
                "POST",
                f"/phone-home/{m}",
                source=NODE_IP,
                token=token,
                body={"macs": [m], "ip": NODE_IP},
            )
        )

    result, backend = go(node)
    assert statuses == [403, 403, 403, 403, 403, 200]
    rejected = [e for e in store.history("SN1") if e.kind == "provision-rejected"]
    assert [(e.details["what"], e.details["peer"]) for e in rejected] == [
        ("phone-home", NODE_IP),
        ("phone-home", NODE_IP),
        ("phone-home", NODE_IP),
        ("user-data", STRANGER),
        ("installed", NODE_IP),
    ]
    reasons = [e.details["reason"] for e in rejected]
    assert reasons[0] == "no boot token" and reasons[1] == "a wrong boot token"
    assert reasons[2] == "it carries the boot token of another node (gpu009)"
    assert f"it came from {STRANGER}" in reasons[3] and reasons[4] == "no boot token"
    # The authenticated report has no serial: a mismatch, never a pass; its address is not taken.
    assert not result.ok and store.get_node("SN1").state == "failed"
    assert "serial-missing" in [
        f["kind"] for f in store.get_node("SN1").hardware["provision_flag"]["findings"]
    ]
    # No token value anywhere in the node's record or history.
    kept = json.dumps(
        [store.get_node("SN1").hardware, [(e.reason, e.details) for e in store.history("SN1")]], default=str
    )
    assert not any(t in kept for t in [*backend.tokens, other_node_token])


def test_a_token_void_after_its_attempt_cannot_speak_for_the_node_again(run):
    store, go = run
    kept: dict[str, str] = {}

    def node(srv: BootServer, m: str, token: str) -> None:
        kept["token"] = token
        report = {"boot_mac": m, "macs": [m], "serial": "SN1", "ip": NODE_IP}
        assert call(srv, "POST", f"/phone-home/{m}", source=NODE_IP, token=token, body=report) == 200

    result, backend = go(node)
    assert result.ok and store.get_node("SN1").state == "provisioned"
    late = call(backend.server, "POST", f"/phone-home/{mac(1)}", source=NODE_IP, token=kept["token"], body={})
    assert late == 403 and "its boot attempt has ended" in backend.server.seen(mac(1)).rejected[-1]["reason"]
