"""Read the PCIe link state of every device from sysfs and print it as JSON.

Runs ON THE NODE (its source is sent to ``python3 -``), so it is standard library only and
imports nothing from the project. For each device with link attributes: vendor, device and
class ids, current/max link speed and width as the kernel prints them, the AER counter files,
the upstream bridge chain (from the device's real sysfs path), its physical slot, and the
kernel names hanging off it (mlx5_4, ibp24s0, nvme1). With BURNIN_PCIE_VPD set (the idle
reading only: VPD reads are slow), a Mellanox card's serial from its Vital Product Data.
"""

import json
import os
import re

SYS = "/sys/bus/pci"
MELLANOX = "0x15b3"
VPD_MAX = 4096  # bytes read at most (the PCI VPD address space is 32 KiB; the serial sits near its start)
BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
FILES = (
    "vendor",
    "device",
    "class",
    "current_link_speed",
    "current_link_width",
    "max_link_speed",
    "max_link_width",
    "aer_dev_correctable",
    "aer_dev_nonfatal",
    "aer_dev_fatal",
)


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def vpd_serial(path):
    """The 'SN' keyword of the device's VPD-R (read-only) resource, or None.

    PCI VPD format: large resources (tag byte with bit 7 set, 2-byte little-endian length), the
    identifier string 0x82, VPD-R 0x90 and VPD-W 0x91, each a run of keywords (2 bytes of name,
    1 byte of length, the value); the small resource 0x78 ends it.
    """
    try:
        with open(os.path.join(path, "vpd"), "rb") as f:
            data = f.read(VPD_MAX)
    except OSError:
        return None
    i = 0
    while i + 3 <= len(data):
        tag = data[i]
        if not tag & 0x80:
            if tag == 0x78:  # end tag
                return None
            i += 1 + (tag & 0x07)
            continue
        size = data[i + 1] | data[i + 2] << 8
        body = data[i + 3 : i + 3 + size]
        if tag in (0x90, 0x91):
            j = 0
            while j + 3 <= len(body):
                key, length = body[j : j + 2], body[j + 2]
                if key == b"SN":
                    value = body[j + 3 : j + 3 + length].decode("ascii", "replace").strip()
                    return value or None
                j += 3 + length
        i += 3 + size
    return None


def slots():
    found = {}
    base = os.path.join(SYS, "slots")
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        address = read(os.path.join(base, name, "address"))
        if address:
            found[address] = name
    return found


def collect():
    by_address = slots()
    devices = []
    base = os.path.join(SYS, "devices")
    for bdf in sorted(os.listdir(base)):
        path = os.path.realpath(os.path.join(base, bdf))
        info = {name: read(os.path.join(path, name)) for name in FILES}
        if info["current_link_speed"] is None and info["max_link_width"] is None:
            continue
        chain = [p for p in path.split("/") if BDF.match(p)]
        names = {}
        for sub in ("infiniband", "net", "nvme"):
            d = os.path.join(path, sub)
            names[sub] = sorted(os.listdir(d)) if os.path.isdir(d) else []
        info.update(
            bdf=bdf, upstream=chain[:-1][::-1], slot=by_address.get(bdf.rsplit(".", 1)[0]), names=names
        )
        if os.environ.get("BURNIN_PCIE_VPD") and info["vendor"] == MELLANOX:
            info["serial"] = vpd_serial(path)
        devices.append(info)
    return {"devices": devices}


if __name__ == "__main__":
    print(json.dumps(collect()))
