"""Exports of the golden list for trainers and schedulers: hostfile, Slurm hostlist, JSON, CSV,
and Slurm's topology/block file (one block per NVLink domain).

Everything here is pure (records in, text out); ``bringup.local.files.atomic_write`` writes them.
Every export says when it was made and from which store (a ``#`` comment header, or top-level
JSON fields); the store URL never carries its password.

Addresses: the OpenMPI hostfile names each node by the address its launcher must reach (the
fleet store's IP, else the inventory's ``ansible_host``, else the host name), because that is
what mpirun's ssh connects to; ``address="name"`` uses inventory names (clusters with DNS).
Slurm hostlists always use inventory names: Slurm knows nodes by NodeName, never by IP.

Names (docs/golden.md): the inventory admits only RFC 1123 host names, but the store may hold
nodes an older inventory enrolled and host names a node reported. Each format carries what it can:
JSON any text; CSV any text, with formula starts neutralised (``bringup.core.csvcell``); comment
lines and the excluded nodes' text with control characters written as escapes. A hostfile address
or a Slurm hostlist name that is no host name cannot be written safely, so the export is refused
with one line naming the node (``ExportError``), never written with a field too many.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import product
from typing import Any

from bringup.core.csvcell import csv_row
from bringup.core.errors import BadInput
from bringup.core.hostnames import address_problem, hostname_problem
from burnin.golden import topology
from burnin.golden.rules import Decision, GoldenRules, NodeFacts, format_age

FORMATS = ("hostfile", "slurm", "json", "csv", "topology-block")
# The formats that show each node's GPUs, HCAs and firmware: only they need the ibstat evidence
# read and parsed, most of the selection's time at 10,000 nodes.
HARDWARE_FORMATS = ("json", "csv")


def needs_hardware(fmt: str, want_excluded: bool = False) -> bool:
    """Whether ``render(fmt, ..., want_excluded)`` shows the golden nodes' hardware: json always
    (its document holds both lists), csv for the golden list only."""
    return fmt == "json" or (fmt in HARDWARE_FORMATS and not want_excluded)


ADDRESSES = ("ip", "hostname", "name")


class ExportError(BadInput):
    """A node the chosen format cannot name safely: the export is refused, nothing written."""


SCHEMA_ID = "burnin-golden/1"
MAX_EXPANSION = 1_000_000  # a typo like n[1-999999999] must not eat the machine


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the json export (shipped as package data)."""
    from importlib.resources import files

    return json.loads(files("burnin").joinpath("schemas", "golden.schema.json").read_text(encoding="utf-8"))


# ---- Slurm hostlists -----------------------------------------------------------------------------

_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


def _split(name: str) -> tuple[str, str] | None:
    """('gpu', '007') for 'gpu007'; None for names Slurm cannot bracket (no trailing number,
    nothing before it)."""
    m = _TRAILING_NUMBER.match(name)
    if not m or not m.group(1):
        return None
    return m.group(1), m.group(2)


def compress_hostlist(names: Iterable[str]) -> str:
    """'gpu001,gpu002,gpu003,gpu007,login' -> 'gpu[001-003,007],login' (Slurm's syntax).

    Names are grouped by the prefix before their trailing number; a range keeps the width of
    its first number, as Slurm reads it (``n[08-10]`` is n08 n09 n10, ``n[9-10]`` is n9 n10), so
    '9' and '010' never share a range. Duplicates are dropped; groups come out sorted.
    """
    groups: dict[str, list[str]] = {}
    plain: list[str] = []
    for name in dict.fromkeys(n.strip() for n in names if n and n.strip()):
        if (why := hostname_problem(name)) is not None:
            raise ExportError(
                f"node {name!r} cannot go into a Slurm hostlist: {why}; retire it "
                f"(bringup nodes retire NAME) or rename it in the inventory"
            )
        split = _split(name)
        if split is None:
            plain.append(name)
        else:
            groups.setdefault(split[0], []).append(split[1])
    parts = []
    for prefix in sorted(groups):
        numbers = sorted(groups[prefix], key=lambda s: (int(s), len(s)))
        ranges: list[list[str]] = []  # [first, last] as written
        for num in numbers:
            if ranges:
                first, last = ranges[-1]
                width = len(first)
                if int(num) == int(last) + 1 and num == str(int(num)).zfill(width):
                    ranges[-1][1] = num
                    continue
            ranges.append([num, num])
        items = [a if a == b else f"{a}-{b}" for a, b in ranges]
        parts.append(
            f"{prefix}{items[0]}"
            if len(items) == 1 and "-" not in items[0]
            else f"{prefix}[{','.join(items)}]"
        )
    return ",".join(parts + sorted(plain))


def _split_top(text: str) -> list[str]:
    """Split on commas and whitespace outside brackets."""
    items, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in hostlist {text!r}")
        if depth == 0 and (ch == "," or ch.isspace()):
            items.append("".join(cur))
            cur = []
        else:
            if depth > 1:
                raise ValueError(f"nested brackets in hostlist {text!r}")
            cur.append(ch)
    if depth:
        raise ValueError(f"unclosed '[' in hostlist {text!r}")
    items.append("".join(cur))
    return [i for i in items if i]


def _range_values(body: str, whole: str) -> list[str]:
    out: list[str] = []
    for part in body.split(","):
        lo, sep, hi = part.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"invalid range {part!r} in hostlist {whole!r}")
        a, b = int(lo), int(hi) if sep else int(lo)
        if b < a:
            raise ValueError(f"invalid range {part!r} in hostlist {whole!r} (it runs backwards)")
        if b - a >= MAX_EXPANSION:
            raise ValueError(f"range {part!r} in hostlist {whole!r} is too large")
        out += [str(i).zfill(len(lo)) for i in range(a, b + 1)]
    return out


_BRACKET = re.compile(r"\[([^\[\]]*)\]")


def expand_hostlist(text: str) -> list[str]:
    """'gpu[001-003,007],login' -> ['gpu001', 'gpu002', 'gpu003', 'gpu007', 'login'], in order.

    Follows ``scontrol show hostnames``: a range takes the width of its first number, several
    brackets in one name multiply out (``r[1-2]n[01-02]``), text after the last bracket is an
    error, as are empty or backwards ranges.
    """
    names: list[str] = []
    for item in _split_top(text.strip()):
        pieces = _BRACKET.split(item)  # text, range, text, range, ..., text
        if len(pieces) == 1:
            names.append(item)
            continue
        if pieces[-1]:
            raise ValueError(f"text after the last bracket in {item!r} (Slurm rejects it)")
        fixed, ranges = pieces[0::2], [_range_values(body, text) for body in pieces[1::2]]
        total = 1
        for r in ranges:
            total *= len(r)
        if len(names) + total > MAX_EXPANSION:
            raise ValueError(f"hostlist {text!r} expands to too many names")
        for combo in product(*ranges):
            names.append("".join(f + n for f, n in zip(fixed[:-1], combo, strict=True)) + fixed[-1])
    return names


# ---- records ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportMeta:
    rack: str
    made_at: datetime
    store: str  # the store URL, password already removed
    rules: tuple[GoldenRules, ...]  # the distinct rules the nodes were judged by


def _result(rows: Sequence[Any], check: str, stage: str | None = None) -> Any | None:
    found = [r for r in rows if r.check == check and (stage is None or r.stage == stage)]
    return max(found, key=lambda r: r.time) if found else None


def hcas_of(fact: NodeFacts) -> list[dict[str, Any]]:
    """HCAs with GUIDs and firmware: from the ibstat evidence of the latest ib_ports result (what
    the OS sees), else the GUIDs the BMC reported at discovery."""
    from burnin.checks.ib_fabric import on_compute_fabric
    from burnin.parsers import ParseError
    from burnin.parsers.ibstat import parse_ibstat

    row = _result(fact.rows, "ib_ports")
    layer = fact.profile.ib.link_layer if fact.profile else "InfiniBand"
    ca_types = fact.profile.ib.ca_types if fact.profile else ()
    text = fact.evidence.get("ib_ports") if row is not None else None
    if text:
        try:
            report = parse_ibstat(text)
        except ParseError:
            report = None
        if report is not None and report.hcas:
            out = []
            for hca in report.hcas:
                ports = [
                    p for p in hca.ports if on_compute_fabric(p.link_layer, hca.ca_type, layer, ca_types)
                ]
                if ports:
                    out.append(
                        {
                            "name": hca.name,
                            "node_guid": hca.node_guid,
                            "port_guids": [p.port_guid for p in ports if p.port_guid],
                            "firmware": hca.firmware,
                        }
                    )
            if out:
                return out
    hardware = (fact.node.hardware if fact.node is not None else None) or {}
    return [
        {
            "name": ib.get("id") or ib.get("adapter"),
            "node_guid": ib.get("node_guid"),
            "port_guids": [ib["port_guid"]] if ib.get("port_guid") else [],
            "firmware": None,
        }
        for ib in hardware.get("infiniband") or []
        if isinstance(ib, dict)
    ]


def firmware_of(fact: NodeFacts) -> dict[str, Any]:
    """Driver and firmware versions: what the burn-in read on the node, and what the BMC said."""
    rows = fact.rows
    versions = _result(rows, "gpu_versions")
    ports = _result(rows, "ib_ports")
    ofed = _result(rows, "ofed_version")
    hw = (fact.node.hardware if fact.node is not None else None) or {}
    vm = versions.metrics if versions is not None else {}
    return {
        "gpu_driver": vm.get("driver"),
        "cuda": vm.get("cuda"),
        "vbios": list(vm.get("vbios") or []),
        "hca": list((ports.metrics if ports is not None else {}).get("firmware") or []),
        "ofed": (ofed.metrics if ofed is not None else {}).get("ofed"),
        "bios": (hw.get("system") or {}).get("bios_version"),
        "bmc": (hw.get("bmc") or {}).get("firmware_version"),
        "inventory": [
            {"name": f.get("name") or f.get("id"), "version": f.get("version")}
            for f in hw.get("firmware") or []
            if isinstance(f, dict)
        ],
    }


def address_of(fact: NodeFacts, address: str = "ip") -> str:
    node = fact.node
    if address == "name":
        return fact.name
    hostname = (node.hostname if node is not None else None) or fact.name
    if address == "hostname":
        return hostname
    ip = node.ip if node is not None else None
    return ip or str(fact.host_vars.get("ansible_host") or "") or hostname


def _iso(t: datetime | None) -> str | None:
    return t.isoformat(timespec="seconds") if t is not None else None


def _rules_dict(rules: GoldenRules) -> dict[str, Any]:
    return {
        "stages": list(rules.stages),
        "max_age": format_age(rules.max_age),
        "max_age_seconds": int(rules.max_age.total_seconds()),
    }


def golden_record(
    fact: NodeFacts,
    decision: Decision,
    rules: GoldenRules,
    store: str,
    address: str = "ip",
    hardware: bool = True,
) -> dict[str, Any]:
    """One golden node as the JSON export has it; without ``hardware`` (the hostfile and Slurm
    formats) the GPU, HCA and firmware fields are left out, not left empty."""
    node = fact.node
    event = fact.golden_event
    run_ids = sorted({r for r in decision.runs.values() if r is not None})
    times = [st.time for st in decision.stages.values() if st.time is not None]
    record: dict[str, Any] = {
        "name": fact.name,
        "address": address_of(fact, address),
        "serial": node.serial,
        "ip": node.ip or fact.host_vars.get("ansible_host"),
        "hostname": node.hostname,
        "rack": node.rack,
        "rack_unit": node.rack_unit,
        "profile": node.profile,
        "state": node.state,
        "slots": slots_of(fact),
        "nvlink_domain": topology.nvlink_domain_of(fact.rows),
    }
    if hardware:
        inventory = _result(fact.rows, "gpu_inventory")
        uuids = (inventory.metrics.get("uuids") if inventory is not None else None) or []
        hcas = hcas_of(fact)
        record["gpu_uuids"] = [u for u in uuids if u]
        record["hca_guids"] = sorted({h["node_guid"] for h in hcas if h.get("node_guid")})
        record["hcas"] = hcas
        record["firmware"] = firmware_of(fact)
    record["golden"] = {
        "since": _iso(event.time) if event is not None else None,
        "run_id": event.run_id if event is not None else decision.run_id,
        "runs": dict(decision.runs),
        "oldest_result": _iso(min(times)) if times else None,
    }
    record["rules"] = _rules_dict(rules)
    record["evidence"] = {
        "store": store,
        "run_ids": run_ids,
        "show": f"burnin results {shlex.quote(fact.name)}",
    }
    return record


def excluded_record(fact: NodeFacts, decision: Decision) -> dict[str, Any]:
    node = fact.node
    return {
        "name": fact.name,
        "serial": node.serial if node is not None else None,
        "ip": (node.ip if node is not None else None) or fact.host_vars.get("ansible_host"),
        "profile": node.profile if node is not None else (fact.profile.name if fact.profile else None),
        "state": fact.state,
        "reasons": list(decision.reasons),
        "runs": dict(decision.runs),
    }


def slots_of(fact: NodeFacts) -> int:
    """One slot per GPU (the profile's gpu.count): one rank per GPU, as trainers launch."""
    return fact.profile.gpu.count if fact.profile is not None else 1


# ---- rendering --------------------------------------------------------------------------------------


def header_lines(meta: ExportMeta, kind: str, golden: int, total: int) -> list[str]:
    stages = sorted({",".join(r.stages) for r in meta.rules})
    ages = sorted({format_age(r.max_age) for r in meta.rules})
    return [
        f"burnin golden {kind}: rack {meta.rack}",
        f"made {_iso(meta.made_at)} from store {meta.store}",
        f"golden {golden} of {total} node(s); stages {' | '.join(stages) or '-'}; max age {' | '.join(ages) or '-'}",
    ]


def _comment(lines: Iterable[str]) -> str:
    return "".join(f"# {line}\n" for line in lines)


def _one_line(text: str) -> str:
    return " ".join(_escaped(text).split())


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _escaped(text: Any) -> str:
    """``text`` with each control character written as its escape (a tab as ``\\t``): a name
    read from the store stays on its line and in its field."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))


def render_hostfile(meta: ExportMeta, golden: Sequence[dict[str, Any]], total: int) -> str:
    """OpenMPI hostfile: ``ADDRESS slots=N`` per golden node, '#' comments on top."""
    for r in golden:
        if (why := address_problem(str(r["address"]))) is not None:
            raise ExportError(
                f"node {r['name']!r} cannot go into a hostfile by the address {r['address']!r}: {why}; "
                "fix the host name or IP in the store, or choose another --address"
            )
    body = "".join(f"{r['address']} slots={r['slots']}\n" for r in golden)
    return _comment(header_lines(meta, "hostfile", len(golden), total)) + body


def render_slurm(
    meta: ExportMeta,
    golden: Sequence[dict[str, Any]],
    excluded: Sequence[dict[str, Any]],
    want_excluded: bool,
) -> str:
    """One compressed hostlist line (the golden nodes, or with ``want_excluded`` the rest, for
    ``--exclude``) under '#' comments; excluded nodes' reasons are comments too."""
    total = len(golden) + len(excluded)
    lines = header_lines(
        meta, "slurm exclude list" if want_excluded else "slurm hostlist", len(golden), total
    )
    if want_excluded:
        lines += [
            f"{_one_line(r['name'])} ({r['state']}): {_one_line('; '.join(r['reasons']))}" for r in excluded
        ]
        names = [r["name"] for r in excluded]
    else:
        names = [r["name"] for r in golden]
    hostlist = compress_hostlist(names)
    return _comment(lines) + (f"{hostlist}\n" if hostlist else "")


def render_json(
    meta: ExportMeta, golden: Sequence[dict[str, Any]], excluded: Sequence[dict[str, Any]]
) -> str:
    """The whole picture: golden nodes with their records, excluded ones with reasons."""
    doc = {
        "schema": SCHEMA_ID,
        "rack": meta.rack,
        "made_at": _iso(meta.made_at),
        "store": meta.store,
        "rules": [_rules_dict(r) for r in meta.rules],
        "counts": {"golden": len(golden), "excluded": len(excluded), "total": len(golden) + len(excluded)},
        "nodes": list(golden),
        "excluded": list(excluded),
    }
    return json.dumps(doc, indent=2) + "\n"


CSV_COLUMNS = (
    "name",
    "address",
    "serial",
    "ip",
    "hostname",
    "profile",
    "slots",
    "gpu_uuids",
    "hca_guids",
    "gpu_driver",
    "cuda",
    "vbios",
    "hca_firmware",
    "ofed",
    "bios",
    "bmc_firmware",
    "golden_since",
    "golden_run",
    "evidence_runs",
)
CSV_EXCLUDED_COLUMNS = ("name", "serial", "ip", "profile", "state", "reasons")


def _csv(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(csv_row("" if v is None else v for v in row))
    return buf.getvalue()


def render_csv(
    meta: ExportMeta,
    golden: Sequence[dict[str, Any]],
    excluded: Sequence[dict[str, Any]],
    want_excluded: bool,
) -> str:
    """CSV under '#' comment lines (pandas: ``comment='#'``); lists are space-separated."""
    total = len(golden) + len(excluded)
    head = _comment(header_lines(meta, "csv excluded" if want_excluded else "csv", len(golden), total))
    if want_excluded:
        return head + _csv(
            CSV_EXCLUDED_COLUMNS,
            (
                (
                    r["name"],
                    r["serial"],
                    r["ip"],
                    r["profile"],
                    r["state"],
                    _one_line("; ".join(r["reasons"])),
                )
                for r in excluded
            ),
        )
    rows = []
    for r in golden:
        fw = r["firmware"]
        rows.append(
            (
                r["name"],
                r["address"],
                r["serial"],
                r["ip"],
                r["hostname"],
                r["profile"],
                r["slots"],
                " ".join(r["gpu_uuids"]),
                " ".join(r["hca_guids"]),
                fw["gpu_driver"],
                fw["cuda"],
                " ".join(fw["vbios"]),
                " ".join(fw["hca"]),
                fw["ofed"],
                fw["bios"],
                fw["bmc"],
                r["golden"]["since"],
                r["golden"]["run_id"],
                " ".join(str(i) for i in r["evidence"]["run_ids"]),
            )
        )
    return head + _csv(CSV_COLUMNS, rows)


def render_excluded_text(meta: ExportMeta, golden: int, excluded: Sequence[dict[str, Any]]) -> str:
    """``--excluded`` with the hostfile format: name, state and reasons, tab-separated, for people."""
    total = golden + len(excluded)
    head = _comment(header_lines(meta, "excluded nodes", golden, total))
    return head + "".join(
        f"{_one_line(r['name'])}\t{r['state']}\t{_one_line('; '.join(r['reasons']))}\n" for r in excluded
    )


def render_topology_block(
    meta: ExportMeta,
    golden: Sequence[dict[str, Any]],
    excluded: Sequence[dict[str, Any]],
    want_excluded: bool,
) -> str:
    """Slurm's topology.conf for the topology/block plugin (https://slurm.schedmd.com/topology.conf.html):
    ``BlockName=NAME Nodes=HOSTLIST``, one block per NVLink domain of the golden nodes
    (burnin/golden/topology.py); nodes with no domain in no block, named on a '#' line. With
    ``want_excluded``: the excluded nodes and their reasons as '#' lines, no block."""
    lines = header_lines(meta, "slurm topology (block)", len(golden), len(golden) + len(excluded))
    if want_excluded:
        lines += [
            f"{_one_line(r['name'])} ({r['state']}): {_one_line('; '.join(r['reasons']))}" for r in excluded
        ]
        return _comment(lines)
    blocks, outside = topology.blocks_of(golden)
    lines.append(
        "one block per NVLink domain (ClusterUUID, CliqueId of gpu_fabric_state); TopologyPlugin=topology/block"
    )
    lines += [
        f"{b.name}: ClusterUUID {_one_line(b.domain['cluster_uuid'])}, CliqueId {_one_line(b.domain['clique_id'])}, "
        f"{len(b.nodes)} node(s)"
        for b in blocks
    ]
    if outside:
        lines.append(f"no NVLink domain, in no block: {compress_hostlist(outside)}")
    return _comment(lines) + "".join(
        f"BlockName={b.name} Nodes={compress_hostlist(b.nodes)}\n" for b in blocks
    )


def render(
    fmt: str,
    meta: ExportMeta,
    golden: Sequence[dict[str, Any]],
    excluded: Sequence[dict[str, Any]],
    want_excluded: bool = False,
) -> str:
    if fmt == "hostfile":
        if want_excluded:
            return render_excluded_text(meta, len(golden), excluded)
        return render_hostfile(meta, golden, len(golden) + len(excluded))
    if fmt == "slurm":
        return render_slurm(meta, golden, excluded, want_excluded)
    if fmt == "json":
        return render_json(meta, golden, excluded)
    if fmt == "csv":
        return render_csv(meta, golden, excluded, want_excluded)
    if fmt == "topology-block":
        return render_topology_block(meta, golden, excluded, want_excluded)
    raise ValueError(f"unknown export format {fmt!r} (formats: {', '.join(FORMATS)})")
