"""`make demo`: the whole pipeline on the virtual rack, with the commands an operator would type.

    lab up (6 fake nodes, 2 faulty; 2 PXE VMs) -> discover -> provision -> configure
    -> burnin (preflight, gpu, pcie, ib, nccl) -> golden (+ excluded, HTML/JUnit report)

Every step runs the real `bringup` / `burnin` command line as a subprocess and prints it first,
so the demo doubles as a walk-through. Everything lives under the lab directory (its own fleet
store and inventory directory), and the demo starts by taking down what an earlier demo left,
so running it again gives the same result. The fake nodes are network namespaces: they cannot
PXE-boot, so they start with their OS in place and `bringup provision` checks them over SSH
(the lab inventory's ``provisioner: preinstalled``); the PXE path
is shown on QEMU VMs that really network-boot from the project's dnsmasq and boot server.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bringup.lab.standins.catalog_file import BASE_PLATFORM as DEFAULT_PROFILE

REPO = Path(__file__).resolve().parents[2]
DEFAULT_FAULTS = REPO / "inventories" / "faults" / "demo.yml"
DEFAULT_NODES, DEFAULT_PXE_VMS = 6, 2
STAGES = "preflight,gpu,pcie,ib,nccl"
# Lab durations: the stand-ins answer in seconds what takes minutes to hours on a real rack.
# The NCCL floor is the lab's: the stand-in all_reduce_perf really moves data between the fake
# nodes over veth pairs, 0.1-0.2 GB/s (a slowed node 0.012), nowhere near NVLink + NDR.
LAB_SETTINGS: tuple[str, ...] = (
    "diag.stress_minutes=0.05",
    "diag.pcie_load_seconds=5",
    "diag.ib_load_seconds=3",
    "diag.nccl_soak_minutes=0.1",
    "diag.nccl_iteration_timeout_s=20",
    "floors.nccl_busbw_multi_node_gbps=0.04",
    # veth TCP on a shared machine wavers by a fifth between iterations: not a fabric's steadiness
    "floors.nccl_busbw_steady_fraction=0.5",
)


def override(settings: Sequence[str], more: Sequence[str]) -> tuple[str, ...]:
    """`key=value` settings with `more`'s values winning, each key once, in first-seen order."""
    merged = {s.partition("=")[0]: s for s in settings}
    merged.update({s.partition("=")[0]: s for s in more})
    return tuple(merged.values())


@dataclass
class Demo:
    name: str = "demo"
    nodes: int = DEFAULT_NODES
    faults: Path = DEFAULT_FAULTS
    pxe_vms: int = DEFAULT_PXE_VMS
    lab_dir: Path = field(default_factory=lambda: Path(os.environ.get("BRINGUP_LAB_DIR", ".lab")).resolve())
    profile: str = DEFAULT_PROFILE
    settings: tuple[str, ...] = LAB_SETTINGS  # burn-in --set values (lab durations and floors)

    @classmethod
    def for_platform(
        cls,
        profile: str = DEFAULT_PROFILE,
        *,
        name: str = "demo",
        nodes: int | None = None,
        faults: Path | None = None,
        pxe_vms: int | None = None,
    ) -> Demo:
        """The demo of a platform: what the caller gives, else the platform's ``demo`` section
        (standins/catalog_file.py: its node count, faults file, PXE VMs and extra burn-in
        settings, which come after LAB_SETTINGS and so win), else the H100 demo's."""
        from bringup.lab.standins import catalog

        own = catalog(profile).get("demo") or {}
        return cls(
            name=name,
            nodes=nodes or int(own.get("nodes", DEFAULT_NODES)),
            faults=(faults or (REPO / own["faults"] if "faults" in own else DEFAULT_FAULTS)).resolve(),
            pxe_vms=int(own.get("pxe_vms", DEFAULT_PXE_VMS)) if pxe_vms is None else pxe_vms,
            profile=profile,
            settings=override(LAB_SETTINGS, own.get("settings", ())),
        )

    @property
    def pxe_name(self) -> str:
        return f"{self.name}-pxe"

    @property
    def work(self) -> Path:
        """Demo files that outlive a step: the store, the inventories, the reports."""
        return self.lab_dir / f"{self.name}-files"

    @property
    def db(self) -> Path:
        return self.work / "fleet.db"

    @property
    def inventory_dir(self) -> Path:
        return self.work / "inventories"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "BRINGUP_DB": str(self.db),
            "BRINGUP_INVENTORY_DIR": str(self.inventory_dir),
            "BRINGUP_LAB_DIR": str(self.lab_dir),
        }


def say(line: str) -> None:
    print(line, flush=True)


def step(title: str) -> None:
    say(f"\n==> {title}")


def run(demo: Demo, argv: Sequence[str], ok_codes: Sequence[int] = (0,)) -> subprocess.CompletedProcess[str]:
    """Run one of the project's commands as an operator would, echoing it; output streams through."""
    tool = Path(sys.executable).parent / argv[0]
    say("$ " + shlex.join(argv))
    proc = subprocess.run([str(tool), *argv[1:]], env=demo.env(), text=True, check=False)
    if proc.returncode not in ok_codes:
        raise SystemExit(f"demo: `{shlex.join(argv)}` failed (exit {proc.returncode})")
    return proc


def capture(demo: Demo, argv: Sequence[str]) -> str:
    tool = Path(sys.executable).parent / argv[0]
    proc = subprocess.run([str(tool), *argv[1:]], env=demo.env(), text=True, capture_output=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"demo: `{shlex.join(argv)}` failed (exit {proc.returncode}):\n{proc.stderr}")
    return proc.stdout


def clean(demo: Demo) -> None:
    """Take down whatever an earlier demo left: labs, store, inventories, reports."""
    from bringup.lab.pxe import PxeLab
    from bringup.lab.rack import VirtualRack
    from bringup.lab.services import lab_services

    VirtualRack(demo.name, demo.lab_dir, demo.inventory_dir, services=lab_services).down()
    PxeLab(demo.pxe_name, demo.lab_dir, demo.inventory_dir).down()
    if demo.work.exists():
        shutil.rmtree(demo.work)
    demo.inventory_dir.mkdir(parents=True)
    shutil.copytree(REPO / "inventories" / "profiles", demo.inventory_dir / "profiles")


def main(demo: Demo) -> int:
    from bringup.lab.pxe import PxeLab, PxeVmSpec
    from bringup.lab.rack import VirtualRack
    from bringup.lab.services import lab_services

    t0 = time.monotonic()
    step(f"clean up an earlier demo ({demo.lab_dir})")
    clean(demo)

    step(
        f"start the virtual rack {demo.name!r}: {demo.nodes} fake {demo.profile} nodes, "
        f"faults from {demo.faults}"
    )
    state = VirtualRack(demo.name, demo.lab_dir, demo.inventory_dir, services=lab_services).up(
        demo.nodes, demo.faults, demo.profile
    )
    for n in state.nodes:
        say(f"  {n.name}  {n.ip}  serial {n.serial}  faults: {', '.join(n.faults) or '-'}")
    pxe = None
    if demo.pxe_vms:
        step(f"start the PXE lab {demo.pxe_name!r}: {demo.pxe_vms} QEMU VMs (BIOS and UEFI) and their BMCs")
        firmware = ["bios", "uefi"]
        specs = [PxeVmSpec(f"vm{i + 1:02d}", firmware[i % 2]) for i in range(demo.pxe_vms)]
        pxe = PxeLab(demo.pxe_name, demo.lab_dir, demo.inventory_dir)
        pxe.up(specs, demo.profile)

    step("discover every node through its BMC (Redfish)")
    run(demo, ["bringup", "discover", "--rack", demo.name])
    if pxe is not None:
        say(f"$ bringup discover --rack {demo.pxe_name}   (on the provisioning server)")
        _show(pxe.bringup("discover", "--rack", demo.pxe_name, db=demo.db))

    step("provision")
    if pxe is not None:
        say(f"$ bringup provision --rack {demo.pxe_name}   (one-time PXE through Redfish, dnsmasq + iPXE)")
        _show(pxe.bringup("provision", "--rack", demo.pxe_name, db=demo.db))
    say(f"the {demo.name} nodes are network namespaces with their OS in place (provisioner: preinstalled):")
    say("provisioning logs in to each over SSH, compares it with discovery and records it provisioned")
    run(demo, ["bringup", "provision", "--rack", demo.name])

    step(
        "configure: driver, fabric manager or IMEX, DOCA-OFED, DCGM, container toolkit, burn-in tools (Ansible)"
    )
    run(demo, ["bringup", "configure", "--rack", demo.name], ok_codes=(0, 1))

    step(f"burn in: {STAGES}")
    sets = [a for s in demo.settings for a in ("--set", s)]
    run(demo, ["burnin", "run", "--rack", demo.name, "--stages", STAGES, *sets], ok_codes=(0, 1))

    step("golden nodes")
    report = demo.work / "report.html"
    junit = demo.work / "report.junit.xml"
    hostfile = demo.work / "golden.hostfile"
    run(demo, ["burnin", "golden", "--rack", demo.name, "--format", "hostfile", "--output", str(hostfile)])
    run(demo, ["burnin", "report", "--rack", demo.name, "--html", str(report), "--junit", str(junit)])
    say("")
    say(f"golden ({hostfile}):")
    say(hostfile.read_text().rstrip())
    say("")
    say("excluded:")
    say(
        capture(
            demo, ["burnin", "golden", "--rack", demo.name, "--format", "hostfile", "--excluded"]
        ).rstrip()
    )
    say("")
    say(f"report: {report}")
    say(f"junit:  {junit}")
    say(f"demo finished in {time.monotonic() - t0:.0f} s; `make lab-down` removes it")
    return 0


def _show(proc: subprocess.CompletedProcess[str]) -> None:
    for text in (proc.stdout, proc.stderr):
        if text.strip():
            say(text.rstrip())
    if proc.returncode not in (0, 1):
        raise SystemExit(f"demo: step failed (exit {proc.returncode})")
