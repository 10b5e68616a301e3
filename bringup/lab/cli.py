"""`bringup lab up|down|status|fail-node|demo`: the virtual rack on this machine (root, network namespaces)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import click

from bringup.cli.ui import console, table
from bringup.lab.demo import LAB_SETTINGS, Demo
from bringup.lab.standins.catalog_file import BASE_PLATFORM, platforms


def _rack(ctx: click.Context, name: str, lab_dir: Path | None):
    from bringup.lab.rack import VirtualRack
    from bringup.lab.services import lab_services

    return VirtualRack(name, lab_dir, ctx.find_root().obj["inventory_dir"], services=lab_services)


def _need_root() -> None:
    if os.geteuid() != 0:
        raise click.ClickException("the virtual rack needs root (network namespaces, mounts)")


def _lab_name(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """A name a lab can have, checked before anything runs: `lab down` removes directories named
    after it, so a path, '' or '..' would name something no lab made."""
    from bringup.lab.naming import check_lab_name

    try:
        return check_lab_name(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


name_option = click.option(
    "--name",
    default="lab",
    show_default=True,
    callback=_lab_name,
    help="Lab name; its inventory is <inventory-dir>/<name>.yml.",
)
dir_option = click.option(
    "--lab-dir",
    envvar="BRINGUP_LAB_DIR",
    type=click.Path(path_type=Path),
    default=None,
    help="Where lab state lives (default ./.lab).",
)


@click.group()
def lab() -> None:
    """The virtual rack: fake nodes, fake BMCs and stand-in hardware tools."""


# The rack's platform: every node replays that profile's recordings (docs/lab.md, "Platforms").
profile_option = click.option(
    "--profile",
    default=BASE_PLATFORM,
    show_default=True,
    type=click.Choice(platforms()),
    help="Hardware profile of the lab nodes: the platform whose recordings they replay (docs/lab.md).",
)


@lab.command("up")
@click.option("--nodes", "count", default=4, show_default=True, type=click.IntRange(1, 250))
@click.option(
    "--faults",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Fault spec YAML: which stand-in faults each node carries.",
)
@profile_option
@name_option
@dir_option
@click.pass_context
def lab_up(
    ctx: click.Context, count: int, faults: Path | None, profile: str, name: str, lab_dir: Path | None
) -> None:
    """Start N fake nodes (sshd in network namespaces) and a Redfish BMC for each."""
    _need_root()
    rack = _rack(ctx, name, lab_dir)
    t0 = time.monotonic()
    with console.status(f"starting lab {name} with {count} node(s)..."):
        state = rack.up(count, faults, profile)
    elapsed = time.monotonic() - t0
    out = table(
        f"lab {name}: {count} node(s) up in {elapsed:.1f} s (prefix {state.prefix})",
        "node",
        "ip",
        "mac",
        "serial",
        "bmc",
        "faults",
    )
    for n in state.nodes:
        out.add_row(n.name, n.ip, n.mac, n.serial, n.bmc_address, ", ".join(n.faults) or "-")
    console.print(out)
    console.print(f"inventory: {state.inventory}")
    known = Path(state.state_dir) / "known_hosts"  # the keys `lab up` gave the nodes' sshd
    console.print(
        f"ssh:       ssh -i {state.ssh_key} -o UserKnownHostsFile={known} root@{state.nodes[0].ip}",
        highlight=False,
        markup=False,
    )
    from bringup.lab.fabric import plan_path

    plan = plan_path(state.state_dir)  # the simulated fabric's cabling plan
    if plan.exists():
        console.print(f"fabric:    burnin fabric verify --plan {plan}", highlight=False, markup=False)
    # The README's path, each command on its own line (a line to copy stays whole: ui.py).
    console.print("next:", highlight=False)
    for command in next_commands(name, Demo.for_platform(profile).settings):
        console.print(f"  {command}", highlight=False, markup=False)
    console.print(f"done:      bringup lab down --name {name}", highlight=False)


def next_commands(rack: str, settings: tuple[str, ...] = LAB_SETTINGS) -> list[str]:
    """The README's path from a fresh lab to its golden nodes (docs/lab.md, "From lab up to golden")."""
    return [
        f"bringup inventory check {rack}",
        f"bringup inventory enroll {rack}",
        f"bringup discover --rack {rack}",
        f"bringup provision --rack {rack}",
        f"bringup configure --rack {rack}",
        f"burnin run --rack {rack} {' '.join(f'--set {s}' for s in settings)}",
        f"burnin golden --rack {rack}",
        f"burnin report --rack {rack} --html {rack}.html --junit {rack}.junit.xml",
    ]


@lab.command("down")
@name_option
@dir_option
@click.pass_context
def lab_down(ctx: click.Context, name: str, lab_dir: Path | None) -> None:
    """Stop the lab and remove every namespace, link, mount and process it made, its state and its
    rack's inventory (demo files too). Directories no lab made are refused, nothing removed."""
    _need_root()
    from bringup.lab.pxe import PxeLab
    from bringup.lab.rack import default_lab_root
    from bringup.lab.state import LabState, known_labs, remove_lab_inventory

    root = (lab_dir or default_lab_root()).resolve()
    _refuse_foreign(root, name, "lab down")
    rack = _rack(ctx, name, lab_dir)
    state = LabState.load(rack.state_dir)
    removed = rack.down()
    if state is not None:
        removed += remove_lab_inventory(state)
    # What `bringup lab demo` adds under the same name: its PXE lab, store and reports.
    removed += PxeLab(f"{name}-pxe", lab_dir).down()
    files = root / f"{name}-files"
    if files.is_dir():
        shutil.rmtree(files)
        removed.append(str(files))
    if removed:
        click.echo(f"lab {name}: removed {len(removed)} thing(s)")
        for item in removed:
            click.echo(f"  {item}")
    else:
        labs = known_labs(root)
        others = f" (labs in {root}: {', '.join(labs)})" if labs else ""
        click.echo(f"lab {name}: nothing to take down{others}")


@lab.command("status")
@name_option
@dir_option
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def lab_status(ctx: click.Context, name: str, lab_dir: Path | None, as_json: bool) -> None:
    """Is the lab up, and does every node answer SSH and every BMC HTTP?"""
    status = _rack(ctx, name, lab_dir).status()
    if as_json:
        click.echo(json.dumps(status, indent=2))
    elif not status["up"]:
        extra = (
            f" (leftover namespaces: {', '.join(status['leftovers'])}; run lab down)"
            if status["leftovers"]
            else ""
        )
        click.echo(f"lab {name}: down{extra}")
    else:
        health = "healthy" if status["healthy"] else "DEGRADED"
        out = table(
            f"lab {name}: {health} (prefix {status['prefix']})", "node", "ip", "netns", "ssh", "bmc", "faults"
        )
        for n in status["nodes"]:
            out.add_row(
                n["name"],
                n["ip"],
                *("ok" if n[k] else "DOWN" for k in ("netns", "ssh", "bmc")),
                ", ".join(n["faults"]) or "-",
            )
        console.print(out)
        console.print(f"inventory: {status['inventory']}")
    sys.exit(0 if status["up"] and status.get("healthy") else 1 if status["up"] else 3)


@lab.command("fail-node")
@click.argument("node")
@name_option
@dir_option
@click.option(
    "--how",
    type=click.Choice(["down", "slurmd"]),
    default="down",
    show_default=True,
    help="down: scontrol sets the node DOWN (its jobs end NODE_FAIL at once). "
    "slurmd: kill -9 its slurmd (NODE_FAIL after SlurmdTimeout, 30-45 s), restarted after.",
)
@click.option(
    "--reason", default=None, help="The DOWN reason (--how down only). [default: bringup lab fail-node NODE]"
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(1, 3600),
    default=180,
    show_default=True,
    help="Seconds for Slurm to end the jobs and the node to be back in service.",
)
@click.pass_context
def lab_fail_node(
    ctx: click.Context,
    node: str,
    name: str,
    lab_dir: Path | None,
    how: str,
    reason: str | None,
    timeout_s: float,
) -> None:
    """Make NODE die under whatever Slurm job runs on it, then return it to service.

    Its jobs end NODE_FAIL (requeuable batch jobs are requeued), as when a node dies in a fleet:
    what `burnin lemons` counts. Prints the jobs squeue showed on the node before and how each
    ended in sacct, and waits until the node is back in service (idle, or running new work).
    """
    _need_root()
    from bringup.lab import node_fail

    node_fail.check_options(how, reason)
    state = node_fail.lab_state(_rack(ctx, name, lab_dir).state_dir, name)
    result = node_fail.fail_node(state, node, how, reason, timeout_s, progress=click.echo)
    for line in node_fail.report_lines(result):
        click.echo(line)


@lab.command("fault")
@click.argument("node")
@click.argument("action", type=click.Choice(["add", "remove"]))
@click.argument("fault")
@name_option
@dir_option
@click.pass_context
def lab_fault(
    ctx: click.Context, node: str, action: str, fault: str, name: str, lab_dir: Path | None
) -> None:
    """Switch FAULT on (add) or off (remove) on running lab NODE.

    The node's stand-in tools answer with it from their next call. A kernel-log fault (xid-79,
    xid-48-row-remap-pending) is logged now: its lines carry the time it was switched on, so the
    health check takes them for new lines; removed, they leave the log (as a repair's reboot
    clears it). Faults made when the node starts (fake sysfs, BMC, unreachable) are refused.
    """
    from bringup.lab.faults import switch_node_fault

    faults = switch_node_fault(_rack(ctx, name, lab_dir).state_dir, name, node, action, fault)
    click.echo(
        f"lab {name}: {node}: {fault} {'on' if action == 'add' else 'off'}; faults now: {', '.join(faults) or 'none'}"
    )


@lab.command("demo")
@profile_option
@click.option(
    "--nodes",
    "count",
    default=None,
    type=click.IntRange(2, 64),
    help="Lab nodes (default: the platform's demo, 6 for H100; 36 trays, two racks, for NVL72).",
)
@click.option(
    "--faults",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Fault spec YAML (default: the platform's demo faults; inventories/faults/demo.yml on H100).",
)
@click.option(
    "--pxe-vms",
    default=None,
    type=click.IntRange(0, 8),
    help="QEMU VMs to PXE-boot (default: 2, or the platform's).",
)
@click.option(
    "--name",
    default="demo",
    show_default=True,
    callback=_lab_name,
    help="Lab name (the rack is called this).",
)
@dir_option
def lab_demo(
    profile: str, count: int | None, faults: Path | None, pxe_vms: int | None, name: str, lab_dir: Path | None
) -> None:
    """The whole pipeline on the virtual rack: discover, provision, configure, burn in, golden."""
    from bringup.lab.demo import Demo, main

    _need_root()
    demo = Demo.for_platform(profile, name=name, nodes=count, faults=faults, pxe_vms=pxe_vms)
    if lab_dir is not None:
        demo.lab_dir = lab_dir.resolve()
    _refuse_foreign(demo.lab_dir, name, "lab demo")  # the demo starts by taking the last one down
    sys.exit(main(demo))


def _refuse_foreign(root: Path, name: str, command: str) -> None:
    """Stop before anything is removed when a directory the name leads to is no lab's."""
    from bringup.lab.network import LabError
    from bringup.lab.pxe import STATE_FILE as PXE_STATE_FILE
    from bringup.lab.state import teardown_refusals

    refusals = teardown_refusals(root, name, PXE_STATE_FILE)
    if refusals:
        raise LabError(f"{command} --name {name}: nothing removed: " + "; ".join(refusals))
