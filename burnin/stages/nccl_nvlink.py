"""The nccl stage on a multi-node NVLink profile (an NVL72 tray): two passes per NVLink domain.

The domains come from this run's preflight (each node's gpu_fabric_state result: ClusterUUID and
CliqueId). The mnnvl pass soaks each domain as one group with ``NCCL_MNNVL_ENABLE=1`` and
localises inside it (burnin.plan.nvlink_groups: the rack rule ends a domain whose every part
failed); the ib pass soaks the same trays with ``NCCL_MNNVL_ENABLE=0``, a tray the mnnvl pass
blamed beside one it cleared (``ib_pass_groups``). Each node gets one ``nccl_soak`` result from
both, with the statement about its rack or tray (burnin.plan.nvlink_blame). docs/burnin.md,
"nccl stage on NVL72".

The soak and localisation of one pass over some nodes is the caller's (``run_pass``: the nccl
stage's own runner, burnin/stages/nccl.py), so this module only plans, merges and blames.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from burnin.checks.nccl import SOAK_CHECK, nvlink_domain_floor
from burnin.checks.nccl_replay import RECORD_MARK
from burnin.plan.nvlink_blame import RackBlame, localise_racks
from burnin.plan.nvlink_groups import (
    MNNVL_ENV,
    domains_from,
    ib_pass_groups,
    plan_nvlink_passes,
    rack_wide,
    read_passes,
)
from burnin.result import Action, Finding, Result, Severity, Verdict, critical, info, warning, worst
from burnin.stages.jobs import GroupContext, GroupResults

# run_pass(ctx, jobs, soak_groups=..., env=..., stop=...) -> GroupResults: one soak and localisation
RunPass = Callable[..., GroupResults]
PASS_NAMES = {"1": "multi-node NVLink on", "0": "multi-node NVLink off (InfiniBand)"}


def rack_label(domain: str) -> str:
    """``nvl-CLUSTERUUID-CLIQUEID``, the name the golden list's topology blocks give the domain
    (burnin/golden/topology.py)."""
    return "nvl-" + domain.replace("/", "-")


def run_nvlink_passes(ctx: GroupContext, jobs: Sequence[Any], run_pass: RunPass) -> GroupResults:
    names = [j.name for j in jobs]
    by_name = {j.name: j for j in jobs}
    domains = domains_from({n: ctx.earlier.get(n, ()) for n in names})
    plan = plan_nvlink_passes(names, domains)
    mnnvl = next((p for p in plan.passes if p.name == "mnnvl"), None)
    if mnnvl is None:
        note = info(
            "no NVLink domain known for these trays (no gpu_fabric_state result with a CliqueId in this "
            "run's preflight): one pass with NCCL's default, not grouped by rack"
        )
        out = run_pass(ctx, list(jobs))
        return {
            n: [(replace(r, findings=(*r.findings, note)), e) for r, e in rows] for n, rows in out.items()
        }
    members = {d: list(g) for d, g in zip(mnnvl.domains, mnnvl.groups, strict=True)}
    ctx.progress(
        f"nccl: {len(members)} NVLink domain(s) of {', '.join(str(len(g)) for g in members.values())} tray(s): "
        "a pass with multi-node NVLink on, then one with it off"
    )

    def passes(
        env: dict[str, str],
        groups: Mapping[str, list[list[str]]],
        anchors: Mapping[str, list[str]],
        nvlink_domain: bool = False,
    ):
        stopped: list[str] = []

        def one(domain: str) -> GroupResults:
            group = members[domain]

            def stop(loc: Any) -> bool:
                if rack_wide(loc, group):
                    stopped.append(domain)
                    return True
                return False

            pass_ctx = replace(ctx, partners=frozenset(anchors.get(domain, ())))
            return run_pass(
                pass_ctx,
                [by_name[n] for n in group],
                soak_groups=groups.get(domain, [group]),
                env=env,
                stop=stop,
                nvlink_domain=nvlink_domain,
            )

        with ThreadPoolExecutor(max_workers=len(members)) as pool:
            done = list(pool.map(one, members))
        merged: GroupResults = {}
        for part in done:
            merged.update(part)
        return merged, stopped

    on, fabric_on = passes({MNNVL_ENV: "1"}, {}, {}, nvlink_domain=True)
    culprits = [n for n in names if _verdict(on.get(n)) is Verdict.FAIL]
    cleared = [n for n in names if _verdict(on.get(n)) in (Verdict.PASS, Verdict.WARN)]
    groups, anchors = ib_pass_groups(members, culprits, cleared, fabric_on)
    off, fabric_off = passes({MNNVL_ENV: "0"}, groups, anchors)
    if len(plan.outside) >= 2:  # trays in no domain: the ib pass alone, as on any profile
        off.update(run_pass(ctx, [by_name[n] for n in plan.outside], env={MNNVL_ENV: "0"}))

    racks = {rack_label(d): g for d, g in members.items()}
    slow_on = set(culprits) | {n for d in fabric_off if d in fabric_on for n in members[d]}
    slow_off = {n for n in names if _verdict(off.get(n)) is Verdict.FAIL}
    slow_off |= {n for d in fabric_off for n in members[d]}
    blames = localise_racks(
        racks,
        mnnvl_slow=slow_on,
        ib_slow=slow_off,
        fabric=[rack_label(d) for d in fabric_on if d not in fabric_off],
    )
    readings = {
        d: read_passes(
            _passed(on, members[d], d in fabric_on or bool(slow_on & set(members[d]))),
            _passed(off, members[d], d in fabric_off or bool(slow_off & set(members[d]))),
        )
        for d in members
    }
    steady = jobs[0].profile.floors.nccl_busbw_steady_fraction if jobs else 1.0
    slower = {
        d: note
        for d in members
        if readings[d] == "fine" and (note := _slower_than_ib(d, members[d], on, off, steady))
    }
    for d in slower:
        readings[d] = "nvlink"
    profile = jobs[0].profile
    uncovered = {d: note for d, g in members.items() if (note := _uncovered(profile, len(g)))}
    out: GroupResults = {}
    for n in names:
        domain = domains.get(n)
        mine = [b for b in blames if n in b.nodes]
        extra = (
            {"nvlink_domain": rack_label(domain), "nvlink_reading": readings[domain]}
            if domain in members
            else {}
        )
        result, evidence = merge(on.get(n), off.get(n), mine, extra)
        if domain in slower:
            result = replace(result, findings=(*result.findings, slower[domain]))
            result = replace(result, verdict=worst([result.verdict, Verdict.WARN]))
        if domain in uncovered:
            result = replace(result, findings=(*result.findings, uncovered[domain]))
        out[n] = [(result, evidence)]
    return out


def _uncovered(profile: Any, trays: int) -> Finding | None:
    """What a domain too small for the profile's NVLink-domain floor must say: its NVLink pass was
    held to the InfiniBand floor (the figure comes from a run of more trays; docs/platforms.md).
    None when the floor covers it, or when the profile has no such floor (judged as it always was)."""
    floors = profile.floors
    if floors.nccl_busbw_nvlink_domain_gbps is None or nvlink_domain_floor(profile, trays) is not None:
        return None
    return info(
        f"the NVLink pass of this domain of {trays} tray{'s' if trays != 1 else ''} was judged against the "
        f"InfiniBand floor ({floors.nccl_busbw_multi_node_gbps:g} GB/s), not the NVLink floor "
        f"({floors.nccl_busbw_nvlink_domain_gbps:g} GB/s, floors.nccl_busbw_nvlink_domain_gbps): that figure "
        f"covers {floors.nccl_busbw_nvlink_domain_min_nodes} trays or more"
    )


def _median_busbw(results: GroupResults, nodes: Sequence[str]) -> float | None:
    values = [
        r.metrics.get("busbw_median_gbps")
        for n in nodes
        for r, _ in results.get(n, ())
        if r.check == SOAK_CHECK
    ]
    values = sorted(v for v in values if isinstance(v, (int, float)))
    return values[len(values) // 2] if values else None


def _slower_than_ib(
    domain: str, nodes: Sequence[str], on: GroupResults, off: GroupResults, steady: float
) -> Finding | None:
    """Both passes above their floors, but the rack's NVLink slower than its InfiniBand: where the
    profile has no figure for a rack's multi-node NVLink all-reduce (or none that covers a domain this
    small), its NVLink pass is held to the InfiniBand floor, but NVLink is never meant to be slower
    than the same trays over their network (docs/platforms.md). Above an NVLink-domain floor it never
    is, so this is the check of the profiles and domains that floor does not cover.
    Slower by more than two measurements waver: under the profile's steady fraction of the
    InfiniBand median, the margin a soak's own iterations have around theirs."""
    fast, slow = _median_busbw(off, nodes), _median_busbw(on, nodes)
    if fast is None or slow is None or slow >= fast * steady:
        return None
    return warning(
        f"multi-node NVLink in rack {rack_label(domain)} is slower than InfiniBand on the same trays "
        f"(median busbw {slow:g} GB/s with NCCL_MNNVL_ENABLE=1, {fast:g} with it off): the rack's NVLink "
        "fabric (its switch trays) is degraded",
        Action.MONITOR,
        subject=rack_label(domain),
    )


def _verdict(rows: list[tuple[Result, str]] | None) -> Verdict | None:
    return worst(r.verdict for r, _ in rows) if rows else None


def _passed(results: GroupResults, nodes: Sequence[str], failed: bool) -> bool | None:
    """A domain's pass: False when it failed (a tray or the rack), True when every tray passed,
    None when some tray could not be judged."""
    if failed:
        return False
    verdicts = [_verdict(results.get(n)) for n in nodes]
    return True if all(v in (Verdict.PASS, Verdict.WARN) for v in verdicts) else None


def _labelled(findings: Sequence[Finding], label: str) -> tuple[Finding, ...]:
    return tuple(replace(f, message=f"{label}: {f.message}") for f in findings)


def _without_record(evidence: str) -> str:
    """A pass's evidence without its group's replay record: a rejudge would judge one pass of two."""
    cut = evidence.find(RECORD_MARK)
    return evidence[:cut].rstrip() if cut >= 0 else evidence


def merge(
    on: list[tuple[Result, str]] | None,
    off: list[tuple[Result, str]] | None,
    blames: Sequence[RackBlame],
    extra: Mapping[str, Any] | None = None,
) -> tuple[Result, str]:
    """One ``nccl_soak`` result from a node's two passes and the statements about its rack or tray.
    A rack-wide statement fails every tray of the rack with the rack named (the fix is the rack's,
    not the tray's: MONITOR on the tray); otherwise the worse pass decides."""
    parts = [(PASS_NAMES["1"], on), (PASS_NAMES["0"], off)]
    results = [(label, r, e) for label, rows in parts if rows for r, e in rows]
    findings: list[Finding] = []
    metrics: dict[str, Any] = dict(extra or {})
    evidence = []
    for label, r, e in results:
        findings += _labelled(r.findings, label)
        metrics["mnnvl" if label == PASS_NAMES["1"] else "ib"] = {"verdict": r.verdict.value, **r.metrics}
        evidence.append(f"##### {label}\n{_without_record(e)}")
    verdicts = [r.verdict for _, r, _ in results]
    reason = next((r.reason for _, r, _ in results if r.verdict is not Verdict.PASS and r.reason), "")
    for b in blames:
        rack_wide_kind = len(b.nodes) > 1
        action = Action.MONITOR if rack_wide_kind else _tray_action(b.kind)
        findings.insert(0, critical(b.message, action, subject=b.rack if rack_wide_kind else b.nodes[0]))
        verdicts.append(Verdict.FAIL)
        reason = b.message
    if not results:
        return Result.unknown(SOAK_CHECK, "neither NCCL pass judged this tray"), ""
    verdict = worst(verdicts)
    if verdict is Verdict.FAIL and not any(f.severity is Severity.CRITICAL for f in findings):
        verdict = Verdict.UNKNOWN  # never a failure without a finding that says why
    return Result(SOAK_CHECK, verdict, metrics, tuple(findings), reason), "\n\n".join(evidence)


def _tray_action(kind: str) -> Action:
    """A tray slow with MNNVL on only: its NVLink cartridge or cables (reseat); slow over
    InfiniBand: its cables; slow both ways: the tray itself."""
    return {"tray_nvlink": Action.RESEAT, "tray_network": Action.REPLACE_CABLE}.get(kind, Action.RMA)
