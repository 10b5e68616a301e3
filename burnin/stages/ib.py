"""The ``ib`` stage: every InfiniBand port of every node loaded at once, round after round.

1. Discover (one SSH round trip per node, burnin.stages.ib_discovery): each HCA port with its
   GUID, LID, rate, state and link layer, whether perftest writes ``--out_json``, and the fabric
   (``ibnetdiscover -p``, first node) so findings can name the switch port at a cable's end.
2. Plan (burnin.plan.ib_pairs): rail-aligned bidirectional pairs (3-cycles for odd counts),
   different partners in each of ``diag.ib_rounds`` rounds. With the context's ``partners`` (a
   nightly's golden nodes) the ports under test are paired with theirs, not with each other;
   where there are too few, the ports left over meet each other and their results say so.
3. Run each round as one SSH session per node: read the error counters of its loaded ports
   (``perfquery -x``, or sysfs), start its ``ib_write_bw`` servers, then its clients (which retry
   while the partner's server is not listening yet), wait for all of them, read the counters
   again, and send everything back framed (burnin.stages.batch's frame format).
4. Judge (burnin.checks.ib_load): sessions against the floor, counter rises, blame by
   agreement; failures nobody could be blamed for get one re-test round against proven ports.

With ``--launcher slurm`` the discovery and each round are one Slurm job instead, running the
same scripts (burnin.stages.ib_slurm, handed in as ``NODE_SCRIPTS``); everything else is the same.

Every node's result is one ``ib_bandwidth`` Result with per-port metrics; its evidence is the
raw output of every process and counter read that involved the node's ports, then the record
(burnin.checks.ib_replay) that `burnin rejudge` judges the stage again from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from bringup.ssh.fanout import SshTarget, default_concurrency, fan_out
from burnin.checks import ib_link_ends as far_ends
from burnin.checks.base import CommandOutput
from burnin.checks.ib_fabric import on_compute_fabric
from burnin.checks.ib_load import (
    CHECK,
    CounterChange,
    EndOutput,
    IbPortInfo,
    NodeEvidence,
    SessionResult,
    counter_bad_ports,
    counter_changes,
    floor_gbps,
    judge_node,
    judge_session,
    measure_session,
    retest_inputs,
    standings,
)
from burnin.checks.ib_replay import record_text
from burnin.fabric.plan import Plan, PlanError, load_plan
from burnin.parsers import ParseError
from burnin.parsers.perfquery import counters_from_sysfs, parse_perfquery
from burnin.parsers.sysfs import parse_ib_sysfs
from burnin.plan.gdr_gpus import gdr_result, with_gpus
from burnin.plan.ib_pairs import (
    PortKey,
    Round,
    Session,
    plan_retest,
    plan_rounds,
    plan_waves,
    unpartnered,
)
from burnin.result import Result, info
from burnin.stages.batch import parse_output
from burnin.stages.ib_discovery import (
    DISCOVERY_TIME_LIMIT_S,
    Discovery,
    discovered,
    discovery_scripts,
    with_switch_ports,
)
from burnin.stages.ib_discovery import parse_discovery as parse_discovery  # tests and rejudge read it here
from burnin.stages.ib_round import (  # tests and burnin.stages.ib_slurm read them here too
    CLIENT_TRIES as CLIENT_TRIES,
)
from burnin.stages.ib_round import (
    SERVER_GRACE_S as SERVER_GRACE_S,
)
from burnin.stages.ib_round import (
    NodeRoundPlan,
    round_script,
)
from burnin.stages.ib_round import (
    perftest_command as perftest_command,
)
from burnin.stages.jobs import GroupContext, GroupResults, NodeJob

# GroupContext.settings key of what runs each node's script instead of an SSH session: with
# --launcher slurm burnin.run.session sets it to a burnin.stages.ib_slurm.SlurmScripts (its
# SETTING), one Slurm job per discovery and per round. (label, node -> script, time limit)
# -> node -> (stdout, error).
NODE_SCRIPTS = "ib_node_scripts"
NodeScripts = Callable[[str, Mapping[str, str], float], Mapping[str, tuple[bytes, str]]]
# GroupContext.settings key of the cabling plan (a path, the rack's all.vars, or a Plan): far-end
# switch ports are then named by the plan's switch names and places (docs/fabric.md).
FABRIC_PLAN = "fabric_plan"

# ---- discovery ----------------------------------------------------------------------------------


def discover(jobs: Mapping[str, SshTarget], bound: int | None = None) -> dict[str, Discovery]:
    """One round trip per node, at most ``bound`` at once; the first node also maps the fabric."""
    scripts = discovery_scripts(jobs)
    by_target = {t.name: n for n, t in jobs.items()}
    targets = list(jobs.values())
    concurrency = bound or default_concurrency(len(targets))  # discovery need not be simultaneous
    found: dict[str, Discovery] = {}
    for res in fan_out(targets, lambda t: scripts[by_target[t.name]][0], DISCOVERY_TIME_LIMIT_S, concurrency):
        node = by_target[res.name]
        found[node] = discovered(node, scripts[node], res.stdout, res.error)
    return found


def discover_via(scripts: NodeScripts, nodes: Iterable[str]) -> dict[str, Discovery]:
    """The same discovery, each node's script run by ``scripts`` (one Slurm job)."""
    plans = discovery_scripts(nodes)
    answers = scripts("discover", {n: p[0] for n, p in plans.items()}, DISCOVERY_TIME_LIMIT_S)
    return {n: discovered(n, p, *answers.get(n, (b"", "no answer"))) for n, p in plans.items()}


@dataclass
class RoundOutputs:
    ends: dict[tuple[str, Session], EndOutput] = field(default_factory=dict)  # (node, session) -> its end
    changes: dict[PortKey, list[CounterChange]] = field(default_factory=dict)
    counter_problems: dict[PortKey, str] = field(default_factory=dict)
    switch_changes: dict[PortKey, list[CounterChange]] = field(default_factory=dict)  # the far end's
    switch_problems: dict[PortKey, str] = field(default_factory=dict)
    evidence: dict[str, list[str]] = field(default_factory=dict)  # node -> evidence chunks
    failed_nodes: dict[str, str] = field(default_factory=dict)  # node -> why its round did not run


def _counters_of(output: CommandOutput, info_: IbPortInfo) -> dict[str, int]:
    """Counters from 'perfquery -x' or sysfs 'grep -H' output; ParseError when neither."""
    if output.error:
        raise ParseError(output.error)
    text = output.stdout
    if "counters/" in text and "# Port" not in text:
        dev = parse_ib_sysfs(text).get(info_.hca)
        if dev is None or info_.port not in dev.ports:
            raise ParseError(f"no sysfs counters for {info_.rail}")
        return counters_from_sysfs(dev.ports[info_.port].counters)
    blocks = parse_perfquery(text)
    block = next((b for b in blocks if b.port == info_.port), blocks[0])
    return dict(block.counters)


def collect_round(
    node: str, plan: NodeRoundPlan, raw: bytes, error: str, round_: Round, outputs: RoundOutputs
) -> None:
    """File one node's answer for a round into ``outputs`` (pure apart from mutating it)."""
    if error and not raw:
        outputs.failed_nodes[node] = error
        outputs.evidence.setdefault(node, []).append(f"-- round {round_.index}: did not run: {error} --\n")
        for s in plan.ends.values():
            outputs.ends[(node, s)] = EndOutput(error=f"{node}: {error}")
        return
    frames = parse_output(raw, plan.token, plan.keys)
    chunks = outputs.evidence.setdefault(node, [])
    for pkey, info_ in plan.counter_ports.items():
        j = pkey[1:]
        before, after = frames[f"b{j}"], frames[f"a{j}"]
        try:
            changes = counter_changes(_counters_of(before, info_), _counters_of(after, info_))
            # a port in two waves of a round (a group larger than a wave): both reads count
            outputs.changes.setdefault(info_.key, []).extend(changes)
        except ParseError as exc:
            outputs.counter_problems[info_.key] = str(exc)[:200]
        chunks.append(
            f"-- round {round_.index}: counters {info_.hca} port {info_.port} before --\n{before.stdout}{before.stderr}"
            f"-- after --\n{after.stdout}{after.stderr}"
        )
        if pkey in plan.switch_ports:
            _collect_switch(frames[f"sb{j}"], frames[f"sa{j}"], info_, round_, outputs, chunks)
    for key, s in plan.ends.items():
        out = frames[key]
        json_text = frames[plan.json_keys[key]].stdout if key in plan.json_keys else ""
        end = EndOutput(out.stdout, out.stderr, json_text, out.rc, out.error and f"{node}: {out.error}")
        outputs.ends[(node, s)] = end
        role = s.role(node)
        mode = (
            "bidirectional" if s.bidirectional else ("sending to" if role == "client" else "receiving from")
        )
        text = (
            f"-- round {round_.index}{' (re-test)' if round_.retest else ''}: {s.rail} {role}, {mode} "
            f"{s.partner(node)} (TCP {s.tcp_port}) --\n$ {plan.commands[key]}\n{out.stdout}"
        )
        if out.stderr.strip():
            text += f"[stderr]\n{out.stderr}"
        if json_text.strip():
            text += f"[--out_json]\n{json_text}\n"
        chunks.append(text + f"[exit status] {out.rc}\n")


def _collect_switch(
    before: CommandOutput,
    after: CommandOutput,
    info_: IbPortInfo,
    round_: Round,
    outputs: RoundOutputs,
    chunks: list[str],
) -> None:
    try:
        n = info_.switch_port_number
        changes = counter_changes(
            far_ends.switch_counters_of(before, n), far_ends.switch_counters_of(after, n)
        )
        outputs.switch_changes.setdefault(info_.key, []).extend(changes)
    except ParseError as exc:
        outputs.switch_problems[info_.key] = str(exc)[:200]
    chunks.append(far_ends.evidence_text(round_.index, info_, before, after))


def run_round(
    round_: Round,
    targets: Mapping[str, SshTarget],
    infos: Mapping[PortKey, IbPortInfo],
    seconds: int,
    out_json: Mapping[str, bool],
    bound: int | None = None,
    on_wave: Callable[[int, int, int], None] | None = None,
) -> RoundOutputs:
    """The round on its nodes, one SSH session per node carrying all its servers and clients;
    when the round has more nodes than ``bound`` (default: remote.default_concurrency), in
    waves of at most that many (burnin.plan.ib_pairs.plan_waves), one after the other.
    ``on_wave(i, waves, nodes)`` is told as each wave starts."""
    hosts = {n: t.host for n, t in targets.items()}
    outputs = RoundOutputs()
    limit = round_time_limit(seconds)
    waves = plan_waves(round_, max(2, bound or default_concurrency(len(round_.nodes))))
    for i, wave in enumerate(waves, 1):
        nodes = [n for n in wave.nodes if n in targets]
        if on_wave is not None and len(waves) > 1:
            on_wave(i, len(waves), len(nodes))
        plans = {
            n: round_script(n, list(wave.sessions), infos, hosts, seconds, out_json.get(n, False))
            for n in nodes
        }
        by_target = {targets[n].name: n for n in nodes}
        scripts = {targets[n].name: plans[n].script for n in nodes}
        for res in fan_out(
            [targets[n] for n in nodes], lambda t, s=scripts: s[t.name], limit, len(nodes) or 1
        ):
            node = by_target[res.name]
            collect_round(node, plans[node], res.stdout, res.error, round_, outputs)
    return outputs


def round_time_limit(seconds: int) -> float:
    """A node's time for one round: the load, the server's grace, the client's tries, counters."""
    return seconds + SERVER_GRACE_S + CLIENT_TRIES + 90


def run_round_via(
    scripts: NodeScripts,
    round_: Round,
    hosts: Mapping[str, str],
    infos: Mapping[PortKey, IbPortInfo],
    seconds: int,
    out_json: Mapping[str, bool],
) -> RoundOutputs:
    """The round with each node's script run by ``scripts`` (one Slurm job, every node at once:
    no waves, there is no session per node to bound), filed as run_round files SSH answers."""
    plans = {
        n: round_script(n, list(round_.sessions), infos, hosts, seconds, out_json.get(n, False))
        for n in round_.nodes
    }
    answers = scripts(
        f"round{round_.index}", {n: p.script for n, p in plans.items()}, round_time_limit(seconds)
    )
    outputs = RoundOutputs()
    for node, plan in plans.items():
        collect_round(node, plan, *answers.get(node, (b"", "no answer")), round_, outputs)
    return outputs


# ---- the stage ----------------------------------------------------------------------------------


def _judge_round(
    round_: Round,
    outputs: RoundOutputs,
    floors: Mapping[str, float],
    bidir_floors: Mapping[str, float | None],
) -> list[SessionResult]:
    results = []
    for s in round_.sessions:
        server = outputs.ends.get((s.server, s), EndOutput(error=f"{s.server}: no answer"))
        client = outputs.ends.get((s.client, s), EndOutput(error=f"{s.client}: no answer"))
        floor = min(floors[s.server], floors[s.client])
        bidir = [b for b in (bidir_floors[s.server], bidir_floors[s.client]) if b]
        results.append(
            judge_session(
                round_.index,
                s,
                measure_session(server, client),
                floor,
                min(bidir) if bidir else None,
                round_.retest,
            )
        )
    return results


def _fabric_plan(ctx: GroupContext) -> Plan | None:
    value = ctx.settings.get(FABRIC_PLAN)
    if value is None or isinstance(value, Plan):
        return value
    try:
        return load_plan(Path(str(value)))
    except (PlanError, OSError) as exc:  # the far ends are then named by GUID and LID
        ctx.progress(f"ib: the cabling plan is not used: {exc}")
        return None


def _known_bad(evidence: Mapping[str, NodeEvidence]) -> set[PortKey]:
    """Ports whose link counters rose, at the HCA or at the far-end switch port."""
    bad = counter_bad_ports({k: v for ev in evidence.values() for k, v in ev.counters.items()})
    for ev in evidence.values():
        bad |= {k for k, rounds in ev.far.counters.items() if far_ends.switch_rises(rounds)}
    return bad


def run_ib_stage(ctx: GroupContext) -> GroupResults:
    """The ``ib`` stage's entry point (burnin/stages/jobs.py ``GroupRun``; the stage: burnin/stages/group.py)."""
    results: GroupResults = {}
    jobs = {}
    for job in ctx.jobs:
        if job.profile.ib.hca_count <= 0:
            results[job.name] = [(Result.judged(CHECK, [info("the profile has no InfiniBand ports")]), "")]
        elif job.target is None:
            reason = "the ib stage loads ports between nodes over SSH; this node has no SSH target (--local)"
            results[job.name] = [(Result.unknown(CHECK, reason), "")]
        else:
            jobs[job.name] = job
    # Ports of different line rates (HDR beside NDR on one fabric) or link layers are never paired:
    # a session runs at its slower end, which the faster port cannot pass. Each such class loads
    # its own ports, one class after the other; nodes of different profiles alike load together.
    # GPUDirect (diag.ib_gdr) loads from GPU memory against its own floor: never mixed with host memory.
    classes: dict[tuple[float, str, bool], dict[str, NodeJob]] = {}
    for name, job in jobs.items():
        key = (job.profile.ib.rate_gbps, job.profile.ib.link_layer, job.profile.diag.ib_gdr)
        classes.setdefault(key, {})[name] = job
    for members in classes.values():
        results.update(_load_ports(ctx, members))
    return results


def _load_ports(ctx: GroupContext, jobs: dict[str, NodeJob]) -> GroupResults:
    """The ib stage over nodes whose ports can be paired with one another."""
    results: GroupResults = {}
    # Nodes of different profiles load together: the longest load and the most rounds win.
    seconds = int(max(j.profile.diag.ib_load_seconds for j in jobs.values()))
    rounds = max(j.profile.diag.ib_rounds for j in jobs.values())
    targets = {n: j.target for n, j in jobs.items()}
    via: NodeScripts | None = ctx.settings.get(NODE_SCRIPTS)
    ctx.progress(f"ib: discovering the ports of {len(jobs)} node(s)")
    found = discover(targets, ctx.concurrency) if via is None else discover_via(via, targets)  # type: ignore[arg-type]
    fabric = next((d.fabric for d in found.values() if d.fabric), None)
    plan = _fabric_plan(ctx)

    evidence: dict[str, NodeEvidence] = {}
    infos: dict[PortKey, IbPortInfo] = {}
    active: dict[str, list[str]] = {}
    floors: dict[str, float] = {}
    bidir_floors: dict[str, float | None] = {}
    text: dict[str, list[str]] = {}
    gdr_notes: dict[str, str] = {}
    for name, job in jobs.items():
        d = found.get(name) or Discovery(problem="discovery returned nothing")
        ib, profile_floors = job.profile.ib, job.profile.floors
        layer = ib.link_layer
        gdr = job.profile.diag.ib_gdr
        fraction = profile_floors.ib_gdr_write_fraction if gdr else profile_floors.ib_write_bw_fraction
        floors[name] = floor_gbps(fraction, ib.rate_gbps)
        bidir_floors[name] = profile_floors.ib_write_bw_bidir_gbps
        ports = with_switch_ports(d.ports, fabric)
        if gdr:
            ports, gdr_notes[name] = with_gpus(ports, job.profile, layer)
        problem = d.problem or ("" if d.has_perftest else "ib_write_bw (perftest) is not installed")
        evidence[name] = NodeEvidence(
            name,
            ports,
            ib.hca_count,
            layer,
            floors[name],
            bidir_floors[name],
            problem,
            ca_types=ib.ca_types,
        )
        evidence[name].far.load_seconds = float(seconds)
        for p in ports:
            if (end := far_ends.far_end(p, plan)) is not None:
                evidence[name].far.ends[p.key] = end
        text[name] = [d.evidence]
        infos.update({p.key: p for p in ports})
        if not problem:
            rails = [
                p.rail
                for p in ports
                if on_compute_fabric(p.link_layer, p.ca_type, layer, ib.ca_types) and p.active
            ]
            if rails:
                active[name] = rails
    out_json = {n: found[n].out_json for n in found}

    partners = ctx.partners & set(jobs)
    if partners:
        ctx.progress(
            f"ib: {len(jobs) - len(partners)} node(s) under test paired with {len(partners)} golden partner(s)"
        )
    planned = plan_rounds(active, max(rounds, 1), partners=partners) if active else []
    all_results: list[SessionResult] = []
    failed_nodes: set[str] = set()
    # Every session with both ends' raw output: the record `burnin rejudge` judges again from.
    recorded: list[tuple[int, bool, Session, EndOutput, EndOutput]] = []

    def execute(round_: Round, total: int) -> None:
        tag = "re-test" if round_.retest else f"round {round_.index}/{total}"
        ctx.progress(
            f"ib {tag}: {len(round_.sessions)} session(s) on {len(round_.nodes)} node(s), {seconds} s"
        )
        if via is not None:
            hosts = {n: t.host for n, t in targets.items()}  # type: ignore[union-attr]
            outputs = run_round_via(via, round_, hosts, infos, seconds, out_json)
        else:
            outputs = run_round(
                round_,
                targets,  # type: ignore[arg-type]
                infos,
                seconds,
                out_json,
                ctx.concurrency,
                lambda i, n, count: ctx.progress(f"ib {tag}: wave {i}/{n}, {count} node(s)"),
            )
        for key, changes in outputs.changes.items():
            evidence[key.node].counters.setdefault(key, []).append(changes)
        for key, problem in outputs.counter_problems.items():
            evidence[key.node].counter_problems.setdefault(key, []).append(problem)
        for key, changes in outputs.switch_changes.items():
            evidence[key.node].far.counters.setdefault(key, []).append(changes)
        for key, problem in outputs.switch_problems.items():
            evidence[key.node].far.problems.setdefault(key, []).append(problem)
        for node, chunks in outputs.evidence.items():
            text[node] += chunks
        failed_nodes.update(outputs.failed_nodes)
        all_results.extend(_judge_round(round_, outputs, floors, bidir_floors))
        for s in round_.sessions:
            ends = [
                outputs.ends.get((n, s), EndOutput(error=f"{n}: no answer")) for n in (s.server, s.client)
            ]
            recorded.append((round_.index, round_.retest, s, *ends))

    for round_ in planned:
        for key in round_.unpaired:
            evidence[key.node].unpaired.add(key)
        if round_.sessions:
            execute(round_, len(planned))
    loaded = set().union(*(r.loaded for r in planned)) if planned else set()
    known_bad = _known_bad(evidence)
    standing = standings(all_results, loaded, known_bad)
    retested = False
    inputs = retest_inputs(all_results, standing, failed_nodes)
    if inputs.suspects:
        # Golden partners first among the proven ports a suspect is re-tested against.
        proven = {
            rail: sorted(nodes, key=lambda n: n not in partners) for rail, nodes in inputs.partners.items()
        }
        retest, _untested = plan_retest(
            inputs.suspects, proven, inputs.must_avoid, inputs.met, len(planned) + 1
        )
        if retest.sessions:
            retested = True
            execute(retest, len(planned))
            known_bad = _known_bad(evidence)
            standing = standings(all_results, loaded, known_bad)

    by_node: dict[str, list[SessionResult]] = {}
    for r in all_results:
        for node in {r.session.server, r.session.client}:
            by_node.setdefault(node, []).append(r)
    shared = unpartnered(planned, partners)
    for name, ev in evidence.items():
        result = judge_node(ev, by_node.get(name, []), standing, infos, retested)
        if name in shared:
            note = info(
                f"ports met {', '.join(sorted(shared[name]))}, also under test: {len(partners)} golden "
                f"partner(s) for {len(jobs) - len(partners)} node(s) under test were too few to pair "
                "every port with a partner's"
            )
            result = replace(result, findings=(*result.findings, note))
        if name in gdr_notes:
            result = gdr_result(result, ev.ports, gdr_notes[name])
        kept = "\n".join(t for t in text[name] if t)
        results[name] = [(result, f"{kept}\n{record_text(ev, recorded, retested)}")]
    return results
