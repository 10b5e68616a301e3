"""Pure parts of the lab: names, MACs, subnet arithmetic, apt source parsing, base-cache locking."""

from __future__ import annotations

import ipaddress
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bringup.lab import base_image
from bringup.lab.base_image import cache_key, find_mirror
from bringup.lab.naming import IFNAME_MAX, MAX_INDEX, LabNames, new_run_id
from bringup.lab.network import LabNetwork

run_ids = st.text(alphabet="0123456789abcdef", min_size=6, max_size=6)
indexes = st.integers(min_value=0, max_value=MAX_INDEX)
node_names = st.from_regex(r"\A[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?\Z")


def test_new_run_id_is_six_lowercase_hex() -> None:
    ids = {new_run_id() for _ in range(200)}
    assert all(re.fullmatch(r"[0-9a-f]{6}", i) for i in ids)
    assert len(ids) > 190  # random, not a counter or a constant


@given(run_ids, indexes)
def test_interface_names_fit_and_carry_prefix(run_id: str, index: int) -> None:
    names = LabNames(run_id)
    assert names.prefix == "bl" + run_id
    for ifname in (names.bridge, names.veth_host(index), names.veth_node(index)):
        assert len(ifname) <= IFNAME_MAX
        assert ifname.startswith(names.prefix)
    assert names.veth_host(index) != names.veth_node(index)
    assert names.bridge not in (names.veth_host(index), names.veth_node(index))


@given(run_ids, indexes, indexes)
def test_veth_names_are_distinct_per_index(run_id: str, a: int, b: int) -> None:
    names = LabNames(run_id)
    assert (names.veth_host(a) == names.veth_host(b)) == (a == b)


@given(run_ids, node_names)
def test_netns_carries_prefix(run_id: str, node: str) -> None:
    names = LabNames(run_id)
    assert names.netns(node).startswith(names.prefix + "-")
    assert node in names.netns(node)


@given(run_ids, st.integers(min_value=0, max_value=0xFFFF))
def test_mac_is_locally_administered_unicast(run_id: str, index: int) -> None:
    mac = LabNames(run_id).mac(index)
    assert re.fullmatch(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", mac)
    first = int(mac[:2], 16)
    assert first & 0b10 and not first & 0b1


@pytest.mark.parametrize("bad", ["", "ABCDEF", "12345", "1234567", "ghijkl"])
def test_bad_run_id_rejected(bad: str) -> None:
    with pytest.raises(ValueError):
        LabNames(bad)


@pytest.mark.parametrize("bad", ["", "-node", "node-", "a b", "n/1", "x" * 64, "node_1"])
def test_bad_node_name_rejected(bad: str) -> None:
    with pytest.raises(ValueError):
        LabNames("abc123").netns(bad)


@pytest.mark.parametrize("bad", [-1, MAX_INDEX + 1])
def test_bad_index_rejected(bad: int) -> None:
    with pytest.raises(ValueError):
        LabNames("abc123").veth_host(bad)


def test_lab_network_addresses() -> None:
    net = LabNetwork(
        "blabc123br",
        ipaddress.IPv4Network("10.213.7.0/24"),
        ipaddress.IPv4Network("10.213.8.0/24"),
        ipaddress.IPv4Address("10.213.7.1"),
    )
    assert str(net.node_ip(0)) == "10.213.7.11"
    assert str(net.bmc_ip(3)) == "10.213.8.14"
    assert str(net.bmc_gateway) == "10.213.8.1"
    assert net.node_ip(243) in net.node_subnet
    with pytest.raises(ValueError):
        net.node_ip(244)  # would be the broadcast address


def test_cache_key_depends_on_packages_and_suite() -> None:
    assert cache_key("bookworm", ("a", "b")) == cache_key("bookworm", ("b", "a"))
    assert cache_key("bookworm", ("a",)) != cache_key("bookworm", ("a", "b"))
    assert cache_key("bookworm", ("a",)) != cache_key("trixie", ("a",))


def test_find_mirror_deb822(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.invalid/debian-security\nSuites: bookworm-security\n"
        "Components: main\n\n"
        "Types: deb-src\nURIs: http://src.invalid/debian\nSuites: bookworm\n\n"
        "Types: deb\n# a comment\nURIs: http://mirror.invalid/debian/\nSuites: bookworm bookworm-updates\n"
        "Components: main\n"
    )
    assert find_mirror("bookworm", tmp_path) == "http://mirror.invalid/debian"


def test_find_mirror_one_line_format(tmp_path: Path) -> None:
    (tmp_path / "sources.list").write_text(
        "# deb http://old.invalid/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://one.invalid/debian bookworm main contrib\n"
    )
    assert find_mirror("bookworm", tmp_path) == "http://one.invalid/debian"


def test_find_mirror_missing(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="no apt source"):
        find_mirror("bookworm", tmp_path)


def test_base_image_built_once_for_concurrent_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def fake_build(target: Path) -> None:
        calls.append(target)
        time.sleep(0.2)  # long enough for the other callers to pile up on the lock
        (target / "etc").mkdir()

    monkeypatch.setattr(base_image, "_build", fake_build)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: base_image.ensure_base_image(tmp_path), range(4)))
    assert len(calls) == 1
    assert len(set(results)) == 1 and (results[0] / "etc").is_dir()
    assert not list(tmp_path.glob(".build-*"))


def test_base_image_crash_leaves_nothing_that_looks_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crashing_build(target: Path) -> None:
        (target / "half").write_text("partial")
        raise RuntimeError("debootstrap died")

    monkeypatch.setattr(base_image, "_build", crashing_build)
    with pytest.raises(RuntimeError):
        base_image.ensure_base_image(tmp_path)
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []

    # A build dir left by a hard crash (kill -9) is removed by the next builder.
    stale = tmp_path / f".build-{base_image.cache_key()}-stale"
    stale.mkdir()
    monkeypatch.setattr(base_image, "_build", lambda target: (target / "ok").write_text("1"))
    final = base_image.ensure_base_image(tmp_path)
    assert (final / "ok").exists() and not stale.exists()
