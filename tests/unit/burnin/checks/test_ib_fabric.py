"""The compute fabric's ports: link layer and, where the profile names them, CA types (the HCAs of
a storage fabric beside the rails are listed, never judged)."""

from __future__ import annotations

import pytest

from bringup.profiles.load import apply_overrides, load_profile
from burnin.checks.base import CommandOutput, judge
from burnin.checks.ib import IbPorts
from burnin.checks.ib_fabric import fabric_name, not_compute_findings, on_compute_fabric
from burnin.result import Severity, Verdict
from tests.paths import SAMPLES
from tests.profiles import SHIPPED_DIR

B300_REAL = SAMPLES / "ibstat_b300_xe9780_cx8_down_cx7_100g_PARTIAL.txt"
B300_HEALTHY = SAMPLES / "ibstat_b300_xe9780_8x_cx8_800g_cx7_100g_storage_DERIVED.txt"


@pytest.mark.parametrize(
    ("link_layer", "ca_type", "ca_types", "compute"),
    [
        ("InfiniBand", "MT4129", (), True),  # no CA types named: every HCA of the layer
        ("InfiniBand", "MT4131", ("MT4131",), True),
        ("InfiniBand", "MT4129", ("MT4131",), False),  # the storage ConnectX-7 beside CX-8 rails
        ("InfiniBand", "mt4131 ", ("MT4131",), True),  # as typed, not as cased
        ("Ethernet", "MT4131", ("MT4131",), False),  # the other link layer, whatever the HCA
        ("Ethernet", None, (), False),
        ("InfiniBand", None, ("MT4131",), True),  # CA type unknown: judged, never hidden
        ("InfiniBand", "", ("MT4131",), True),
        (None, "MT4131", ("MT4131",), True),  # link layer unknown: judged, never hidden
        (None, "MT4129", ("MT4131",), False),
    ],
)
def test_on_compute_fabric(link_layer, ca_type, ca_types, compute):
    assert on_compute_fabric(link_layer, ca_type, "InfiniBand", ca_types) is compute


def test_fabric_name_and_the_ports_left_out_are_listed_by_ca_type():
    assert fabric_name("InfiniBand", ()) == "InfiniBand"
    assert fabric_name("InfiniBand", ("MT4131",)) == "InfiniBand (CA type MT4131)"
    notes = not_compute_findings([("mlx5_2/1", "MT4129"), ("mlx5_3/1", "MT4129"), ("mlx5_9/1", "MT41692")])
    assert [(f.severity, f.message, f.evidence) for f in notes] == [
        (
            Severity.INFO,
            "2 port(s) not the compute fabric (CA type MT4129): not judged",
            "mlx5_2/1, mlx5_3/1",
        ),
        (Severity.INFO, "1 port(s) not the compute fabric (CA type MT41692): not judged", "mlx5_9/1"),
    ]
    assert not_compute_findings([]) == []


def _b300(overrides=()):
    profile, problems = load_profile("b300-sxm-8x800g", SHIPPED_DIR)
    assert profile is not None, problems
    return apply_overrides(profile, overrides)


def _ib_ports(path, profile):
    text = path.read_text(encoding="utf-8").split("\n", 1)[1]
    return judge(IbPorts(), CommandOutput(stdout=text, rc=0), profile)


def test_the_b300_profile_names_its_cx8_rails():
    assert _b300().ib.ca_types == ("MT4131",)


def test_a_healthy_b300_with_its_storage_cx7_passes_and_lists_the_cx7_ports():
    result = _ib_ports(B300_HEALTHY, _b300())
    assert result.verdict is Verdict.PASS, result.to_dict()
    (note,) = [f for f in result.findings if "not the compute fabric" in f.message]
    assert note.message == "4 port(s) not the compute fabric (CA type MT4129): not judged"
    assert note.evidence == "mlx5_2/1, mlx5_3/1, mlx5_4/1, mlx5_5/1"
    assert result.metrics["ports"] == 8 and result.metrics["active"] == 8
    assert {h["ca_type"] for h in result.metrics["hca_list"]} == {"MT4131"}


def test_the_real_b300_capture_fails_on_its_seven_cx8_ports_only():
    result = _ib_ports(B300_REAL, _b300())
    assert result.verdict is Verdict.FAIL
    critical = [f for f in result.findings if f.severity is Severity.CRITICAL]
    (count,) = [f for f in critical if f.subject == "HCAs"]
    assert count.message == "7 InfiniBand (CA type MT4131) port(s) found, the profile has 8"
    assert count.action.value == "RESEAT"
    down = [f for f in critical if f is not count]
    assert len(down) == 7 and all("Down/Disabled" in f.message for f in down)
    assert {f.action.value for f in down} == {"REPLACE_CABLE"}  # Disabled: no link partner seen
    assert not any(f.subject.split()[0] in {"mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5"} for f in critical)
    assert not any("100 Gb/s" in f.message for f in result.findings)


def test_without_ca_types_every_hca_of_the_layer_is_judged_as_before():
    result = _ib_ports(B300_HEALTHY, _b300(["ib.ca_types=[]"]))
    assert result.verdict is Verdict.FAIL
    messages = [f.message for f in result.findings]
    assert "12 InfiniBand port(s) found, the profile has 8" in messages
    assert sum("runs at 100" in m for m in messages) == 4
