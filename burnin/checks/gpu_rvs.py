"""The gpu stage on AMD Instinct: the ROCm Validation Suite (docs/platforms.md, MI300X), as DCGM's
diagnostics are on NVIDIA.

The profile names the RVS configurations an operator runs for acceptance (``diag.rvs_confs``; the
MI300X ones RVS ships: GEMM stress gst, power stress iet, PCIe pebb, XGMI pbqt, HBM babel:
https://github.com/ROCm/ROCmValidationSuite/tree/master/rvs/conf/MI300X); the node runs
``rvs -c CONF`` for each, one after another, each output and exit status in its own section.

Judged per GPU (burnin/parsers/rvs.py): a gst action whose GPU did not meet its GFLOPS target, an
iet action whose GPU did not hold its power target, a GPU pair pbqt found without peer access, and
an action RVS's summary marks FAIL. A pass needs every configuration to have run to RVS's summary,
every gst and iet action to have a result for every GPU, and every action a PASS row: a run that
could not start, stopped, was cut or timed out is UNKNOWN, never a pass.
"""

from __future__ import annotations

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput, section_mark, sections
from burnin.checks.registry import register
from burnin.parsers import ParseError
from burnin.parsers.rvs import RvsAction, RvsRun, parse_rvs
from burnin.result import Action, Finding, Result, critical

END = "end"
RVS = "rvs"
# What an action that failed says of the GPU, and what fixes it, by RVS module (its user guide, ug1main:
# gst GEMM throughput, iet sustained power, pebb PCIe host<->device bandwidth, pbqt GPU<->GPU over
# XGMI, babel HBM bandwidth, mem HBM patterns).
MODULE_ACTION: dict[str, tuple[str, Action]] = {
    "gst": ("its GEMM throughput stayed below RVS's target (a slow or throttling GPU)", Action.RMA),
    "iet": ("it did not hold RVS's power target (power delivery or cooling)", Action.RESEAT),
    "pebb": (
        "PCIe host<->device bandwidth below RVS's target (a link trained narrow or slow)",
        Action.RESEAT,
    ),
    "pbqt": ("XGMI peer-to-peer bandwidth below RVS's target (a link down or slow)", Action.RESEAT),
    "babel": ("HBM bandwidth below RVS's target", Action.RMA),
    "mem": ("HBM memory test errors", Action.RMA),
}
PER_GPU = ("gst", "iet")  # modules that print a result line for every GPU


def rvs_shell(profile: Profile) -> str:
    """``rvs -c`` for each configuration, its output in section rvs-N and its exit status in rc-N."""
    lines = ["rc=0"]
    for i, conf in enumerate(profile.diag.rvs_confs):
        path = f"{profile.diag.rvs_conf_dir.rstrip('/')}/{conf}"
        lines += [
            section_mark(f"rvs-{i}"),
            f"rvs -c {path}",
            "r=$?",
            section_mark(f"rc-{i}"),
            'echo "$r"',
            '[ "$r" -eq 0 ] || rc=$r',
        ]
    return "\n".join([*lines, section_mark(END), "exit $rc"])


@register
class AmdRvs(Check):
    name = "amd_rvs"
    stages = ("gpu",)
    reads = (RVS,)
    judges = ("gpu.count", "diag.rvs_confs")
    description = (
        "ROCm Validation Suite on every AMD GPU: GEMM, power, PCIe, XGMI and HBM (rvs -c per diag.rvs_confs)"
    )
    judge_any_rc = True  # rvs exits non-zero when a test fails: its output says which

    def applies(self, profile: Profile) -> bool:
        return bool(profile.diag.rvs_confs)

    def timeout(self, profile: Profile) -> int:
        return int(profile.diag.rvs_timeout_minutes * 60)

    def command(self, profile: Profile) -> str:
        return rvs_shell(profile)

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        parts = sections(output.stdout)
        runs: list[tuple[str, str, str | None]] = []  # (conf, its output, its exit status)
        reasons: list[str] = []
        if any(k.startswith("rvs-") for k in parts):
            for i, conf in enumerate(profile.diag.rvs_confs):
                if f"rvs-{i}" not in parts:
                    reasons.append(f"{conf} did not run (the output ends before it)")
                    continue
                runs.append((conf, parts[f"rvs-{i}"], parts.get(f"rc-{i}", "").strip() or None))
            if END not in parts:
                reasons.append("the output has no end: cut or stopped")
        else:  # a bare rvs output handed to `burnin evaluate`: one run, its summary is its end
            runs.append(("rvs", parts[""], None))
        findings: list[Finding] = []
        metrics: dict[str, object] = {}
        for conf, text, rc in runs:
            found, doubts, shown = _judge_run(conf, text, rc, profile)
            findings += found
            reasons += doubts
            metrics.update(shown)
        if not runs and not reasons:
            raise ParseError("no rvs output")
        return Result.judged(self.name, findings, metrics, incomplete="; ".join(reasons))


def _judge_run(
    conf: str, text: str, rc: str | None, profile: Profile
) -> tuple[list[Finding], list[str], dict[str, object]]:
    if rc in ("126", "127"):
        return [], [f"{conf}: rvs is not installed or not executable (exit {rc})"], {}
    try:
        run = parse_rvs(text)
    except ParseError as exc:
        why = f"exit {rc}" if rc not in (None, "0") else "no test output"
        return [], [f"{conf}: RVS did not run its tests ({why}: {exc})"], {}
    findings: list[Finding] = []
    doubts: list[str] = []
    expected = set(run.gpus)
    if run.gpu_count is not None and run.gpu_count < profile.gpu.count:
        doubts.append(f"{conf}: RVS saw {run.gpu_count} GPU(s), the profile has {profile.gpu.count}")
    for action in run.actions:
        found = _action_findings(conf, action, run)
        findings += found
        if action.module in PER_GPU:
            seen = set(action.met) | expected
            missing = sorted(run.name(g) for g in seen - set(action.met))
            if missing or not seen:
                doubts.append(f"{conf} {action.name}: no result for {', '.join(missing) or 'any GPU'}")
        if action.result is None:
            doubts.append(f"{conf} {action.name}: no row in RVS's summary")
        elif action.result == "FAIL" and not found:
            what, fix = MODULE_ACTION.get(action.module, ("the action failed", Action.REBOOT))
            findings.append(
                critical(
                    f"RVS {action.module or '?'} {action.name} ({conf}) FAILED on the node: {what}",
                    fix,
                    f"| {action.name} | {action.module.upper()} | FAIL |",
                )
            )
    if not run.summary:
        doubts.append(f"{conf}: no RVS summary: the run was cut or stopped before its end")
    if rc not in (None, "0") and not findings:
        doubts.append(f"{conf}: rvs exited {rc} with no failed test shown")
    if run.errors and not findings:
        doubts.append(f"{conf}: RVS logged {len(run.errors)} error(s): {run.errors[0]}")
    shown = {
        f"rvs {a.name}": {run.subject(g): round(v[0]) for g, v in sorted(a.gflops.items())}
        for a in run.actions
        if a.gflops
    }
    if run.version:
        shown["rvs_version"] = run.version
    return findings, doubts, shown


def _action_findings(conf: str, action: RvsAction, run: RvsRun) -> list[Finding]:
    what, fix = MODULE_ACTION.get(action.module, ("the action failed", Action.REBOOT))
    findings = []
    for gpu_id, ok in sorted(action.met.items()):
        if ok:
            continue
        got = action.gflops.get(gpu_id)
        figures = f" ({got[0]:.0f} GFLOPS, target {got[1]:.0f})" if got else ""
        evidence = (
            f"[{action.name}] [GPU:: {gpu_id}] GFLOPS {got[0]:.0f} Target GFLOPS: {got[1]:.0f} met: FALSE"
            if got
            else f"[{action.name}] [GPU:: {gpu_id}] pass: FALSE"
        )
        findings.append(
            critical(
                f"{run.name(gpu_id)}: RVS {action.module} {action.name} ({conf}) failed{figures}: {what}",
                fix,
                evidence,
                run.subject(gpu_id),
            )
        )
    for a, b in action.no_peers:
        findings.append(
            critical(
                f"{run.name(a)} and {run.name(b)}: RVS {action.name} ({conf}) found no peer access between "
                "them: their XGMI link is down (reseat both modules; a repeat is the baseboard)",
                Action.RESEAT,
                f"[{action.name}] p2p GPU {a} GPU {b} peers:false",
                run.subject(a),
            )
        )
    return findings
