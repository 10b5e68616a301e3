"""The agent ramdisk: kernel module order and the newc archive (pure)."""

from __future__ import annotations

import gzip

from bringup.provision.pxe import ramdisk


def test_module_depends_and_load_order():
    modinfo = b"\x7fELF...\0license=GPL\0depends=virtio,virtio_ring\0retpoline=Y\0name=virtio_net\0"
    assert ramdisk.module_depends(modinfo) == ["virtio", "virtio_ring"]
    assert ramdisk.module_depends(b"\0depends=\0name=virtio\0") == []
    deps = {
        "virtio_net": ["kernel/drivers/net/virtio_net.ko", "kernel/net/core/failover.ko", "kernel/virtio.ko"],
        "failover": ["kernel/net/core/failover.ko"],
        "virtio": ["kernel/virtio.ko", "kernel/virtio_ring.ko"],
        "virtio_ring": ["kernel/virtio_ring.ko"],
    }
    order = ramdisk.load_order(["virtio_net", "virtio", "builtin_one"], deps)
    assert (
        order.index("kernel/virtio_ring.ko")
        < order.index("kernel/virtio.ko")
        < order.index("kernel/drivers/net/virtio_net.ko")
    )
    assert order.index("kernel/net/core/failover.ko") < order.index("kernel/drivers/net/virtio_net.ko")
    assert len(order) == len(set(order)) == 4


def test_modules_dep_parsing():
    deps = ramdisk.parse_modules_dep(
        "kernel/a/virtio-net.ko.xz: kernel/b/virtio.ko.xz\nkernel/b/virtio.ko.xz:\n"
    )
    assert deps == {
        "virtio_net": ["kernel/a/virtio-net.ko.xz", "kernel/b/virtio.ko.xz"],
        "virtio": ["kernel/b/virtio.ko.xz"],
    }


def _read_newc(data: bytes) -> dict[str, tuple[int, int, bytes]]:
    out, i = {}, 0
    while True:
        head = data[i : i + 110]
        assert head[:6] == b"070701"
        fields = [int(head[6 + 8 * k : 14 + 8 * k], 16) for k in range(13)]
        namesize, size = fields[11], fields[6]
        name = data[i + 110 : i + 110 + namesize - 1].decode()
        i += 110 + namesize
        i += -i % 4
        body = data[i : i + size]
        i += size + (-size % 4)
        if name == "TRAILER!!!":
            return out
        out[name] = (fields[1], fields[9] << 8 | fields[10], body)


def test_newc_archive_round_trip():
    data = ramdisk.newc_archive(
        [("bin", 0o40755, b""), ("init", 0o100755, b"#!/bin/sh\n"), ("dev/console", 0o20600, b"")],
        {"dev/console": (5, 1)},
    )
    entries = _read_newc(gzip.decompress(gzip.compress(data)))
    assert entries["init"] == (0o100755, 0, b"#!/bin/sh\n")
    assert entries["dev/console"][:2] == (0o20600, 5 << 8 | 1)
    assert ramdisk.content_key([b"a", b"b"]) != ramdisk.content_key([b"ab"])
