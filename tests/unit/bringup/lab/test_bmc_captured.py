"""The lab's captured-tree BMC (bringup/lab/bmc_captured.py) over real HTTP (werkzeug, as
bmc_server.py serves it): discovery finds the HGX baseboard, AMI, several-manager and two-node
blade shapes of the public captures as it does against the fake BMC."""

from __future__ import annotations

import threading

import pytest
from werkzeug.serving import make_server

from bringup.lab.bmc_captured import captured_app, load_tree
from bringup.redfish.discovery import discover_endpoint
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from tests.paths import TESTS

TREES = TESTS / "fixtures" / "redfish"


@pytest.fixture
def served():
    servers = []

    def serve(machine: str) -> str:
        app = captured_app(load_tree(TREES / machine / "tree.json"), "root", "lab-pw")
        server = make_server("127.0.0.1", 0, app, threaded=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("machine", "system", "key", "gpus"),
    [
        ("supermicro-gb300", None, "S123456", 4),  # HGX baseboard as a second system
        ("gigabyte-h262-z63-ami", None, "GJG9NF512A000302", 0),  # AMI placeholder chassis serial
        ("hpe-cray-ex235a", None, "GE21100074", 8),  # auxiliary managers listed first
        ("hpe-cray-ex235n", "Node1", "DP20300012:Node1", 4),  # two nodes behind one BMC
    ],
)
def test_discovery_reads_each_captured_shape_from_the_lab_server(served, machine, system, key, gpus):
    url = served(machine)
    found = discover_endpoint(
        BmcEndpoint("n", url, "root", "lab-pw", system=system), TransportOptions(retries=0)
    )
    assert found.serial == key and len(found.hardware["gpus"]) == gpus


def test_a_wrong_password_is_refused_and_nothing_is_written(served):
    import urllib.error
    import urllib.request

    url = served("gigabyte-h262-z63-ami")
    request = urllib.request.Request(f"{url}/redfish/v1/Systems/Self")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)
    assert refused.value.code == 401
    post = urllib.request.Request(f"{url}/redfish/v1/Systems/Self", data=b"{}", method="PATCH")
    post.add_header("Authorization", "Basic cm9vdDpsYWItcHc=")  # root:lab-pw
    with pytest.raises(urllib.error.HTTPError) as read_only:
        urllib.request.urlopen(post, timeout=5)
    assert read_only.value.code == 405
