"""Read the PCIe link state of every device from sysfs and print it as JSON.

Runs ON THE NODE (its source is sent to ``python3 -``), so it is standard library only and
imports nothing from the project. For each device with link attributes: vendor, device and
class ids, current/max link speed and width as the kernel prints them, the AER counter files,
the upstream bridge chain (from the device's real sysfs path), its physical slot, and the
kernel names hanging off it (mlx5_4, ibp24s0, nvme1).
"""

import json
import os
import re

SYS = "/sys/bus/pci"
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
        devices.append(info)
    return {"devices": devices}


if __name__ == "__main__":
    print(json.dumps(collect()))
