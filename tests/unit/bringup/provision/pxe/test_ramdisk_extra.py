"""build_ramdisk's ``extra`` entries: a variant of the agent ramdisk (the lab's, with an SSH
server) gets its files into the initrd after the agent's own, and a cache directory of its own."""

from __future__ import annotations

import gzip
import stat
from pathlib import Path

import pytest

from bringup.provision.pxe import ramdisk

FAKE_KERNEL = "linux-image-0.0-test"


def read_newc(data: bytes) -> dict[str, tuple[int, bytes]]:
    """{name: (mode, data)} of a cpio newc archive, in order (the kernel's reading of it)."""
    entries: dict[str, tuple[int, bytes]] = {}
    pos = 0
    while True:
        assert data[pos : pos + 6] == b"070701"
        fields = [int(data[pos + 6 + 8 * i : pos + 14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = fields[1], fields[6], fields[11]
        name = data[pos + 110 : pos + 110 + namesize - 1].decode()
        pos += 110 + namesize
        pos += -pos % 4
        body = data[pos : pos + size]
        pos += size
        pos += -pos % 4
        if name == "TRAILER!!!":
            return entries
        entries[name] = (mode, body)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A cache holding an unpacked kernel package, as ensure_kernel leaves it (no download)."""
    if not ramdisk.BUSYBOX.exists():
        from tests.conftest import unavailable

        unavailable("busybox-static is needed (scripts/install-system-deps.sh installs it)")
    tree = tmp_path / "kernel" / FAKE_KERNEL
    (tree / "boot").mkdir(parents=True)
    (tree / "boot" / "vmlinuz-0.0-test").write_bytes(b"not really a kernel")
    (tree / "lib" / "modules" / "0.0-test").mkdir(parents=True)
    (tree / ".complete").write_text(f"{FAKE_KERNEL}_0.0_amd64.deb\n")
    return tmp_path


def initrd(rd: ramdisk.Ramdisk) -> dict[str, tuple[int, bytes]]:
    return read_newc(gzip.decompress(rd.initrd.read_bytes()))


def test_extra_entries_go_into_the_initrd_after_the_agents_own_with_their_modes(cache: Path):
    hook = b"#!/bin/sh\necho hello\n"
    extra = [
        ("etc/bringup/boot.d", stat.S_IFDIR | 0o755, b""),
        ("etc/bringup/boot.d/50-hello", stat.S_IFREG | 0o755, hook),
        ("root", stat.S_IFDIR | 0o700, b""),
    ]
    plain = ramdisk.build_ramdisk(cache, FAKE_KERNEL)
    variant = ramdisk.build_ramdisk(cache, FAKE_KERNEL, extra=extra)
    assert variant.directory != plain.directory
    names = list(initrd(variant))
    assert names[: len(initrd(plain))] == list(initrd(plain))  # the agent's own first, unchanged
    got = initrd(variant)
    assert got["etc/bringup/boot.d/50-hello"] == (stat.S_IFREG | 0o755, hook)
    assert got["root"][0] == stat.S_IFDIR | 0o700
    assert got["init"][1] == ramdisk.AGENT_SCRIPT.read_bytes()
    assert not any(n.startswith("etc/bringup/boot.d") for n in initrd(plain))


def test_a_variant_is_cached_by_what_it_holds(cache: Path):
    one = [("etc/hello", stat.S_IFREG | 0o644, b"one\n")]
    first = ramdisk.build_ramdisk(cache, FAKE_KERNEL, extra=one)
    (first.directory / "marker").write_text("built once")
    assert ramdisk.build_ramdisk(cache, FAKE_KERNEL, extra=one).directory == first.directory
    assert (first.directory / "marker").exists()  # found in the cache, not rebuilt
    other = ramdisk.build_ramdisk(cache, FAKE_KERNEL, extra=[("etc/hello", stat.S_IFREG | 0o644, b"two\n")])
    assert other.directory != first.directory
    mode = ramdisk.build_ramdisk(cache, FAKE_KERNEL, extra=[("etc/hello", stat.S_IFREG | 0o600, b"one\n")])
    assert mode.directory not in (first.directory, other.directory)
