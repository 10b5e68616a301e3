"""The bash script a node runs for one round of the ``ib`` stage (pure): its loaded ports'
error counters (and their far-end switch ports'), its ``ib_write_bw`` servers, then its clients,
the counters again, everything framed in burnin.stages.batch's format. burnin.stages.ib sends it
over SSH, or burnin.stages.ib_slurm as a Slurm job."""

from __future__ import annotations

import secrets
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from burnin.checks import ib_link_ends as far_ends
from burnin.checks.ib_load import IbPortInfo
from burnin.plan.ib_pairs import PortKey, Session

CLIENT_TRIES = 30  # a client retries (1 s apart) while its server is not listening yet
SERVER_GRACE_S = 60  # a server waits this long past the load time for its client


def perftest_command(
    session: Session, node: str, info_: IbPortInfo, host: str, seconds: int, json_file: str
) -> str:
    """The ib_write_bw command line of this node's end of the session."""
    args = [
        "ib_write_bw", "-d", info_.hca, "-i", str(info_.port), "-p", str(session.tcp_port),
        "--report_gbits", "-D", str(seconds), "-F",
    ]  # fmt: skip
    if session.bidirectional:
        args.append("-b")
    if info_.gpu is not None:  # GPUDirect: --use_cuda first, perftest refuses --use_cuda_dmabuf before it
        args += [f"--use_cuda={info_.gpu}"] + (["--use_cuda_dmabuf"] if info_.gpu_dmabuf else [])
    line = " ".join(shlex.quote(a) for a in args)
    if json_file:
        line += f' --out_json --out_json_file="{json_file}"'
    if session.role(node) == "client":
        line += " " + shlex.quote(host)
    return line


@dataclass(frozen=True)
class NodeRoundPlan:
    script: str
    token: str
    ends: dict[str, Session]  # frame key 'e<i>' -> the session this process is one end of
    commands: dict[str, str]
    counter_ports: dict[str, IbPortInfo]  # 'p<j>' -> port (frames 'b<j>' before, 'a<j>' after)
    json_keys: dict[str, str]  # 'e<i>' -> 'j<i>'
    # 'p<j>' whose far-end switch port is read too (frames 'sb<j>' before, 'sa<j>' after)
    switch_ports: tuple[str, ...] = ()

    @property
    def keys(self) -> list[str]:
        return (
            [*self.ends, *self.json_keys.values()]
            + [f"{w}{k[1:]}" for k in self.counter_ports for w in "ba"]
            + [f"s{w}{k[1:]}" for k in self.switch_ports for w in "ba"]
        )


def round_script(
    node: str,
    sessions: list[Session],
    infos: Mapping[PortKey, IbPortInfo],
    hosts: Mapping[str, str],
    seconds: int,
    out_json: bool,
    token: str | None = None,
) -> NodeRoundPlan:
    """The bash script a node runs for one round (pure): counters, servers, clients, counters."""
    token = token or secrets.token_hex(8)
    limit = int(seconds) + SERVER_GRACE_S
    lines = [
        "set +e",
        "export LC_ALL=C",
        "d=$(mktemp -d /tmp/burnin-ib.XXXXXX) || exit 97",
        "trap 'kill $(jobs -p) 2>/dev/null; rm -rf \"$d\"' EXIT",
        "frame() {  # key rc: the burnin.stages.batch frame (parsed by batch.parse_output)",
        '  touch "$d/$1.out" "$d/$1.err"',
        '  sizes=$(stat -c %s "$d/$1.out" "$d/$1.err")',
        f'  printf "@@burnin-frame {token} %s rc=%s out=%s err=%s\\n" "$1" "$2" $sizes',
        '  cat "$d/$1.out" "$d/$1.err"',
        "}",
        "counters() {  # key hca port",
        "  if command -v perfquery >/dev/null 2>&1; then",
        '    timeout -k 5 30 perfquery -x -C "$2" -P "$3" >"$d/$1.out" 2>"$d/$1.err"',
        "  else",
        '    grep -H . /sys/class/infiniband/"$2"/ports/"$3"/counters/* >"$d/$1.out" 2>"$d/$1.err"',
        "  fi",
        '  frame "$1" $?',
        "}",
        *far_ends.SWITCH_COUNTERS_FN,
        "server() {  # key command...",
        "  k=$1; shift",
        f'  timeout -k 5 {limit} "$@" >"$d/$k.out" 2>"$d/$k.err"; echo $? >"$d/$k.rc"',
        "}",
        "client() {  # key command...: retried while the server is not listening yet",
        "  k=$1; shift",
        f"  for try in $(seq {CLIENT_TRIES}); do",
        f'    timeout -k 5 {limit} "$@" >"$d/$k.out" 2>"$d/$k.err"; rc=$?',
        '    [ $rc -ne 0 ] && grep -q "Couldn\'t connect" "$d/$k.out" "$d/$k.err" && { sleep 1; continue; }',
        "    break",
        "  done",
        '  echo $rc >"$d/$k.rc"',
        "}",
    ]
    mine = [s for s in sessions if node in (s.server, s.client)]
    ends = {f"e{i}": s for i, s in enumerate(mine)}
    ports: dict[str, IbPortInfo] = {}
    for s in mine:
        info_ = infos[PortKey(node, s.rail)]
        if info_ not in ports.values():
            ports[f"p{len(ports)}"] = info_
    switch_ports = tuple(k for k, p in ports.items() if p.switch_lid is not None and p.switch_port_number)
    for key, info_ in ports.items():
        lines.append(f"counters b{key[1:]} {shlex.quote(info_.hca)} {info_.port}")
        if key in switch_ports:
            lines.append(far_ends.switch_read_line(f"sb{key[1:]}", info_))
    commands: dict[str, str] = {}
    json_keys: dict[str, str] = {}
    for key, s in ends.items():
        json_file = f"$d/{key}.json" if out_json else ""
        if out_json:
            json_keys[key] = f"j{key[1:]}"
        commands[key] = perftest_command(
            s, node, infos[PortKey(node, s.rail)], hosts.get(s.server, s.server), seconds, json_file
        )
    servers = [k for k, s in ends.items() if s.role(node) == "server"]
    clients = [k for k, s in ends.items() if s.role(node) == "client"]
    lines += [f"server {k} {commands[k]} &" for k in servers]
    if servers and clients:
        lines.append("sleep 1  # this node's servers listen before its clients start")
    lines += [f"client {k} {commands[k]} &" for k in clients]
    lines.append("wait")
    for key, info_ in ports.items():
        lines.append(f"counters a{key[1:]} {shlex.quote(info_.hca)} {info_.port}")
        if key in switch_ports:
            lines.append(far_ends.switch_read_line(f"sa{key[1:]}", info_))
    for key in ends:
        lines.append(f'frame {key} "$(cat "$d/{key}.rc" 2>/dev/null || echo 255)"')
        if key in json_keys:
            j = json_keys[key]
            lines.append(f'[ -f "$d/{key}.json" ] && cp "$d/{key}.json" "$d/{j}.out" && frame {j} 0')
    return NodeRoundPlan("\n".join(lines) + "\n", token, ends, commands, ports, json_keys, switch_ports)
