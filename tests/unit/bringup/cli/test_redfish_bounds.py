"""`bringup discover` against BMCs that send too much or too slowly: the bounds' options
(docs/redfish.md, "Bounds"), one failed row each, the rest of the rack discovered."""

from __future__ import annotations

import json

from tests.doubles.hostile_bmc import HostileBmc
from tests.doubles.redfish_server import FakeBmc, serving
from tests.unit.bringup.cli.test_redfish import PASSWORD, Rack

S = "/redfish/v1/Systems/System.Embedded.1"
MiB = 1 << 20


def test_discover_bounds_a_slow_node_and_a_large_answer_and_discovers_the_rest(tmp_path):
    good = FakeBmc.from_fixture("dell-idrac9", password=PASSWORD)
    # Each byte within the read timeout: only the node's deadline ends it.
    slow = HostileBmc("drip_body", f"{S}/EthernetInterfaces", interval=0.2)
    large = HostileBmc("big_body", S, size=2 * MiB)
    with serving(good), slow, large:
        rack = Rack(tmp_path, {"gpu01": good, "gpu02": slow.url, "gpu03": large.url})
        result = rack.run(
            "discover", "--rack", "r07", "--json", "--retries", "0", "--read-timeout", "1",
            "--node-deadline", "2", "--max-body-mib", "1",
        )  # fmt: skip
    assert result.exit_code == 1, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows["gpu01"]["ok"] and rows["gpu01"]["result"] == "discovered"
    assert rows["gpu02"]["error"]["kind"] == "deadline exceeded"
    assert "within 2 s (--node-deadline)" in rows["gpu02"]["error"]["message"]
    assert rows["gpu03"]["error"]["kind"] == "over limit"
    assert "1 MiB cap" in rows["gpu03"]["error"]["message"]
    store = rack.store()
    failed = store.history("gpu02")[-1]
    assert failed.kind == "discovery-failed" and failed.details["error"] == "deadline exceeded"
    store.close()


def test_bounds_must_be_positive(tmp_path):
    rack = Rack(tmp_path, {"gpu01": "http://127.0.0.1:9"})
    for option in ("--node-deadline", "--request-deadline", "--max-body-mib", "--max-members"):
        result = rack.run("discover", "--rack", "r07", option, "0")
        assert result.exit_code == 2 and "Invalid value" in result.output and option in result.output, (
            result.output
        )
