"""ibstat / ibstatus parsers on the real captures (tests/fixtures/samples/index.tsv)."""

from __future__ import annotations

from collections import Counter

import pytest

from burnin.parsers import ParseError
from burnin.parsers.ibstat import parse_ibstat, parse_ibstatus


def port_states(result) -> Counter:
    return Counter((p.state, p.physical_state, p.link_layer) for h in result.hcas for p in h.ports)


def test_ibstat_h100_all_active(sample):
    r = parse_ibstat(sample("ibstat_h100_ndr_all_active.txt"))
    assert len(r.hcas) == 12 and r.problems == ()
    mlx5_0 = r.hca("mlx5_0")
    assert (mlx5_0.ca_type, mlx5_0.firmware, mlx5_0.num_ports) == ("MT4129", "28.39.1002", 1)
    assert mlx5_0.node_guid == "0xa088c20300e3142a"
    port = mlx5_0.ports[0]
    assert (port.number, port.state, port.physical_state, port.rate) == (1, "Active", "LinkUp", 400)
    assert port.port_guid == "0xa288c2fffee3142a" and port.base_lid == 0
    assert r.hca("mlx5_1").ca_type == "MT4125" and r.hca("mlx5_1").ports[0].rate == 100
    assert Counter(p.rate for h in r.hcas for p in h.ports) == Counter({400: 8, 100: 4})
    assert port_states(r) == Counter({("Active", "LinkUp", "Ethernet"): 12})


def test_ibstat_ethernet_ports_disabled(sample):
    r = parse_ibstat(sample("ibstat_h100_ethernet_ports_disabled.txt"))
    assert len(r.hcas) == 12
    assert port_states(r) == Counter(
        {
            ("Active", "LinkUp", "InfiniBand"): 8,
            ("Down", "Disabled", "Ethernet"): 3,
            ("Active", "LinkUp", "Ethernet"): 1,
        }
    )
    ib = [p for h in r.hcas for p in h.ports if p.link_layer == "InfiniBand"]
    assert {p.rate for p in ib} == {400}
    assert r.hca("mlx5_0").ports[0].base_lid == 75


@pytest.mark.parametrize(
    ("name", "down_physical"),
    [
        ("ibstat_h100_some_down_disabled.txt", {"Disabled"}),
        ("ibstat_h100_down_polling.txt", {"Disabled", "Polling"}),
    ],
)
def test_ibstat_down_ports(sample, name, down_physical):
    r = parse_ibstat(sample(name))
    down = [(h.name, p) for h in r.hcas for p in h.ports if p.state == "Down"]
    assert len(down) == 2
    assert {p.physical_state for _, p in down} == down_physical
    assert {p.rate for _, p in down} == {40}


def test_ibstat_ibpanic_partial(sample):
    r = parse_ibstat(sample("ibstat_a100_hdr_ibpanic_exit255.txt"))
    assert [h.name for h in r.hcas] == [f"mlx5_{i}" for i in range(8)]
    assert all(
        p.rate == 200 and p.state == "Active" and p.link_layer == "InfiniBand"
        for h in r.hcas
        for p in h.ports
    )
    assert r.problems == (
        "ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: No such file or directory",
    )
    assert r.hca("mlx5_0").ca_type == "MT4124"


def test_ibstat_after_ibv_devinfo(sample):
    r = parse_ibstat(sample("ibv_devinfo_and_ibstat_cx6_hdr100.txt"))
    assert [h.name for h in r.hcas] == ["mlx5_0"]
    h = r.hcas[0]
    assert (h.ca_type, h.firmware) == ("MT4123", "20.35.1012")
    p = h.ports[0]
    assert (p.state, p.physical_state, p.rate, p.base_lid, p.sm_lid, p.link_layer) == (
        "Active",
        "LinkUp",
        100,
        762,
        8,
        "InfiniBand",
    )


def test_ibstat_only_panic_and_garbage():
    r = parse_ibstat("ibpanic: [1] main: stat of IB device 'mlx5_0' failed: No such file or directory\n")
    assert r.hcas == () and len(r.problems) == 1
    with pytest.raises(ParseError):
        parse_ibstat("")
    with pytest.raises(ParseError):
        parse_ibstat("bash: ibstat: command not found\n")


def test_ibstatus_a100(sample):
    ports = parse_ibstatus(sample("ibstatus_a100_hdr_ok.txt"))
    ib = [p for p in ports if p.link_layer == "InfiniBand"]
    assert len(ib) == 8 and len(ports) == 9
    p = ports[0]
    assert (p.device, p.port, p.state, p.state_code, p.phys_state, p.phys_state_code) == (
        "mlx5_0",
        1,
        "ACTIVE",
        4,
        "LinkUp",
        5,
    )
    assert (p.rate, p.rate_text, p.base_lid, p.sm_lid) == (200, "4X HDR", 0x33BF, 1)
    assert {q.rate for q in ib} == {200}


def test_ibstatus_port_down_polling_partial(sample):
    ports = parse_ibstatus(sample("ibstatus_port_down_polling_qdr_partial.txt"))
    assert [(p.device, p.port, p.state, p.phys_state) for p in ports] == [
        ("mlx4_0", 1, "DOWN", "Polling"),
        ("mlx4_0", 2, "ACTIVE", "LinkUp"),
    ]
    assert (ports[0].state_code, ports[0].phys_state_code, ports[0].rate_text) == (1, 2, "4X QDR")
    assert ports[1].rate is None and ports[1].link_layer is None  # excerpt ends before them


def test_ibstatus_rejects_other_text(sample):
    with pytest.raises(ParseError):
        parse_ibstatus(sample("ibstat_h100_ndr_all_active.txt"))
