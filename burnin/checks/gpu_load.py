"""GPU checks of the gpu stage, under load: DCGM diagnostics, and the stress load with its
silent-data-corruption compare and throttle sampling.

Thresholds come from the profile; the figures behind the fixed ones are in docs/reference.md, GPU.
"""

from __future__ import annotations

import json
from collections import Counter

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput, section_mark, sections
from burnin.checks.load import stress_shell
from burnin.checks.registry import register
from burnin.parsers import ParseError, load_json
from burnin.parsers._common import MAX_GPU_TFLOPS, number
from burnin.parsers.dcgmi import DCGM_ERRORS, LEVEL_TESTS, SKIP_ERRORS, DcgmResult, canonical_test, parse_diag
from burnin.parsers.nvidia_smi import decode_throttle_reasons, parse_throttle_samples
from burnin.result import Action, Finding, Result, critical, warning

# Throttle (event) reasons under load that are hardware protecting itself: findings. Idle,
# application clocks and the software power cap are normal under a full load.
HW_THROTTLE = {"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
SOFT_THROTTLE_WARN = {"sw_thermal_slowdown"}


@register
class DcgmDiag(Check):
    name = "dcgm_diag"
    stages = ("gpu",)
    reads = ("dcgmi diag",)
    judges = ("diag.dcgm_level", "diag.dcgm_not_applicable", "gpu.count")
    description = "DCGM diagnostics at the profile's level (dcgmi diag -r N -j)"
    judge_any_rc = True  # dcgmi exits non-zero when a test fails; the JSON says which

    def level(self, profile: Profile) -> int:
        return profile.diag.dcgm_level

    def timeout(self, profile: Profile) -> int:
        # r1 seconds, r2 ~2 min, r3 ~15 min, r4 up to hours (docs/reference.md, GPU), with margin.
        return {1: 300, 2: 900, 3: 2700}.get(self.level(profile), 4 * 3600)

    def command(self, profile: Profile) -> str:
        return f"dcgmi diag -r {self.level(profile)} -j"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        diag = parse_diag(output.stdout)
        if not diag.tests:
            if diag.runtime_error:
                return Result.unknown(self.name, f"DCGM could not run: {diag.runtime_error}")
            raise ParseError("no test results in the DCGM output")
        level = self.level(profile)
        findings: list[Finding] = []
        doubts: list[str] = []  # a pass DCGM reported that its own error codes put in doubt
        counts: Counter[str] = Counter()
        ran: dict[str, dict[int | None, list[str]]] = {}  # test -> GPU (None: all) -> statuses
        for test in diag.tests:
            canonical = canonical_test(test.name, test.category)
            for res in test.results:
                counts[res.status] += 1
                status = _result_findings(test.name, res, findings, doubts)
                if res.entity_group in (None, "GPU"):  # DCGM 4.x also tests CPUs: not a GPU's cover
                    ran.setdefault(canonical, {}).setdefault(res.gpu_id, []).append(status)
        gpus = sorted({g for per_gpu in ran.values() for g in per_gpu if g is not None})
        shown, source = (diag.level, "stated") if diag.level else (diag.shown_level(), "inferred")
        not_applicable = set(profile.diag.dcgm_not_applicable)
        required = [t for t in LEVEL_TESTS[level] if t not in not_applicable]
        missing = [_not_covered(t, ran.get(t), gpus) for t in required]
        missing = [m for m in missing if m]
        metrics = {
            "level": level,
            "output_level": shown,
            "output_level_source": source,
            "dcgm_version": diag.dcgm_version,
            **{k: v for k, v in counts.items()},
        }
        reasons = [f"DCGM reported: {diag.runtime_error}"] if diag.runtime_error else []
        if gpus and len(gpus) < profile.gpu.count:
            # The GPUs DCGM did not see were not diagnosed: their absence is gpu_inventory's
            # finding, and this run cannot pass them.
            reasons.append(f"DCGM tested {len(gpus)} GPU(s), the profile has {profile.gpu.count}")
        if missing:
            reasons.append(
                f"the profile's level {level} (diag.dcgm_level) needs every test of it, the output is "
                f"level {shown} ({source} from {_how(source)}): {'; '.join(missing)}"
            )
        # The parser's problems (a table not closed by its border: cut short; a result it cannot
        # read) mean part of the run was not seen: not a pass.
        return Result.judged(
            self.name, findings, metrics, incomplete="; ".join([*reasons, *doubts, *diag.problems])
        )


def _how(source: str) -> str:
    return "the dcgmi command line above it" if source == "stated" else "the tests it shows"


def _not_covered(test: str, per_gpu: dict[int | None, list[str]] | None, gpus: list[int]) -> str:
    """Why a required test does not cover every GPU the output shows ('' when it does); a result
    for all GPUs ('Skip - All') is keyed None."""
    if not per_gpu:
        return f"{test} not in the output"
    statuses = {g: per_gpu.get(None, []) + per_gpu.get(g, []) for g in gpus or [None]}
    uncovered = [g for g, st in statuses.items() if not {"pass", "fail", "warn"} & set(st)]
    if not uncovered:
        return ""
    word = _skip_word([s for g in uncovered for s in statuses[g]])
    where = "every GPU" if len(uncovered) == len(statuses) else ", ".join(f"GPU {g}" for g in uncovered)
    return f"{test} {word} on {where}"


def _skip_word(statuses: list[str]) -> str:
    if "skip" in statuses:
        return "skipped"
    return "result unreadable" if "unknown" in statuses else "did not run"


def _result_findings(test: str, res: DcgmResult, findings: list[Finding], doubts: list[str]) -> str:
    """Judge one DCGM result, its error codes included whatever its status says; the status it
    counts as for coverage ('skip' when an error code says the test did not run)."""
    gpu = res.gpu_id if res.gpu_id is not None else next((w.gpu_id for w in res.warnings), None)
    subject = f"GPU {gpu}" if gpu is not None else "all GPUs"
    messages = [w.message for w in res.warnings] or [f"{test} {res.status}"]
    if res.status == "fail":
        error_ids = [w.error_id for w in res.warnings if w.error_id is not None]
        action = _dcgm_action(error_ids, test, messages)
        text = f"{subject}: DCGM {test} failed: {messages[0]}"
        findings.append(critical(text, action, "\n".join(messages), subject))
        return "fail"
    status = res.status
    if status == "warn" and not res.warnings:
        findings.append(warning(f"{subject}: DCGM {test} warning", Action.MONITOR, "", subject))
    for w in res.warnings if status in ("pass", "warn") else ():
        severity, code = w.severity_name, w.code
        subject = f"GPU {w.gpu_id}" if w.gpu_id is not None else subject
        said = f"an error ({code.name}, {severity})" if code else "a warning"
        text = f"{subject}: DCGM {test} {status}, with {said}: {w.message}"
        if code and code.name in SKIP_ERRORS:
            status = "skip"
        elif severity in ("RESET", "ISOLATE"):
            findings.append(critical(text, _SEVERITY_ACTION[severity], w.message, subject))
        elif severity in ("TRIAGE", "UNKNOWN"):
            # DCGM says the run needs looking into (a memory allocation failed and the test
            # still said pass: https://github.com/NVIDIA/DCGM/issues/284): not shown good.
            findings.append(warning(text, _SEVERITY_ACTION["TRIAGE"], w.message, subject))
            doubts.append(
                f"{subject}: DCGM {test} said {status} with {code.name if code else severity}: not a pass"
            )
        else:
            findings.append(
                warning(text, _SEVERITY_ACTION.get(severity or "", Action.MONITOR), w.message, subject)
            )
    return status


# Failures whose cause is software or configuration, whatever test reported them (tests/fixtures/samples/index.tsv).
_CONFIG_CAUSES = ("system not yet initialized", "fabric manager", "persistence mode", "nvidia-smi -pm")

# DCGM's severities (dcgm_errors.h: MONITOR 'can perform workload, but needs to be monitored',
# ISOLATE 'cannot perform workload, GPU should be isolated', TRIAGE 'should be triaged', CONFIG
# 'can be configured', RESET 'drain and reset GPU') as our actions.
_SEVERITY_ACTION = {
    "RESET": Action.RESET_GPU,
    "ISOLATE": Action.RMA,
    "CONFIG": Action.RECONFIGURE,
    "TRIAGE": Action.REBOOT,
    "MONITOR": Action.MONITOR,
}


def _dcgm_action(error_ids: list[int], test: str, messages: list[str]) -> Action:
    """DCGM's own severity for the error, mapped onto our actions (dcgm_errors.h)."""
    text = " ".join(messages).lower()
    if any(cause in text for cause in _CONFIG_CAUSES):
        return Action.RECONFIGURE
    severities = {DCGM_ERRORS[e].severity for e in error_ids if e in DCGM_ERRORS}
    for severity in ("RESET", "ISOLATE", "CONFIG", "TRIAGE"):
        if severity in severities:
            return _SEVERITY_ACTION[severity]
    return Action.RMA if "memory" in test.lower() else Action.REBOOT


THROTTLE_SAMPLER = (
    "nvidia-smi --query-gpu=index,clocks_throttle_reasons.active,temperature.gpu,power.draw "
    "--format=csv,noheader,nounits -lms 1000"
)


@register
class GpuStress(Check):
    name = "gpu_stress"
    stages = ("gpu",)
    reads = ("burnin-stress",)
    judges = ("gpu.count", "floors.matmul_tflops", "floors.matmul_tflops_fraction_of_best")
    description = (
        "matmul load on every GPU: bit-identical results (silent data corruption), TFLOP/s, throttling"
    )

    def seconds(self, profile: Profile) -> float:
        return profile.diag.stress_minutes * 60

    def timeout(self, profile: Profile) -> int:
        return int(self.seconds(profile)) + 300

    def command(self, profile: Profile) -> str:
        return "\n".join(
            [
                f"{THROTTLE_SAMPLER} >/tmp/burnin-throttle.$$ 2>&1 &",
                "sampler=$!",
                section_mark("stress"),
                stress_shell(self.seconds(profile)),
                "rc=$?",
                "kill $sampler 2>/dev/null; wait $sampler 2>/dev/null",
                section_mark("throttle"),
                "cat /tmp/burnin-throttle.$$; rm -f /tmp/burnin-throttle.$$",
                "exit $rc",
            ]
        )

    judge_any_rc = True  # burnin-stress exits 2 with an error report: the report says why

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        parts = sections(output.stdout)
        report = _stress_report(parts.get("stress", ""))
        if report.get("error"):
            return Result.unknown(self.name, f"the stress load did not run: {report['error']}")
        gpus = report.get("gpus")
        if not isinstance(gpus, list) or not gpus:
            raise ParseError("the stress report lists no GPU")
        findings: list[Finding] = []
        want = profile.gpu.count
        if len(gpus) < want:
            findings.append(
                critical(f"the load ran on {len(gpus)} GPU(s), the profile has {want}", Action.RESEAT)
            )
        findings += _sdc_findings(gpus)
        findings += _tflops_findings(gpus, profile)
        samples_text = parts.get("throttle", "")
        samples = parse_throttle_samples(samples_text) if samples_text.strip() else []
        findings += throttle_findings(samples)
        tflops = {f"GPU {g.get('index')}": g.get("tflops") for g in gpus if isinstance(g, dict)}
        temps = [s.temperature_c for s in samples if s.temperature_c is not None]
        power = [s.power_draw_w for s in samples if s.power_draw_w is not None]
        metrics = {
            "backend": report.get("backend"),
            "seconds": report.get("seconds"),
            "tflops": tflops,
            "max_temp_c": max(temps) if temps else None,
            "max_power_w": max(power) if power else None,
            "throttle_samples": len(samples),
        }
        return Result.judged(self.name, findings, metrics, incomplete=_unsampled(gpus, samples))


def _unsampled(gpus: list, samples: list) -> str:
    """Why the throttle sampling does not cover the load, or ''. The sampler prints a row per GPU
    each time: a GPU without one was never watched (the sampler died, or its output was cut)."""
    if not samples:
        return "no clock throttle samples during the load (nvidia-smi sampler)"
    loaded = {g.get("index") for g in gpus if isinstance(g, dict)}
    missing = sorted(str(i) for i in loaded - {s.index for s in samples})
    return f"no clock throttle sample of GPU {', '.join(missing)} during the load" if missing else ""


def _stress_report(text: str) -> dict:
    start = text.find("{")
    if start < 0:
        raise ParseError("no JSON report from burnin-stress")
    try:
        report = load_json(text[start:])
    except json.JSONDecodeError as exc:
        raise ParseError(f"unreadable burnin-stress report: {exc.msg}") from None
    if not isinstance(report, dict) or report.get("tool") != "burnin-stress":
        raise ParseError("not a burnin-stress report")
    return report


def _sdc_findings(gpus: list) -> list[Finding]:
    findings: list[Finding] = []
    by_seed: dict[str, Counter[str]] = {}
    for g in gpus:
        if not isinstance(g, dict):
            raise ParseError("a GPU entry of the stress report is not an object")
        subject = f"GPU {g.get('index')}"
        if g.get("error"):
            findings.append(
                critical(
                    f"{subject}: the load failed: {g['error']}", Action.RESET_GPU, str(g["error"]), subject
                )
            )
            continue
        if g.get("mismatches"):
            findings.append(
                critical(
                    f"{subject}: {g['mismatches']} iteration(s) gave a different result for the same "
                    "input (silent data corruption)",
                    Action.RMA,
                    json.dumps(g.get("digests")),
                    subject,
                )
            )
        for seed, digest in (g.get("digests") or {}).items():
            by_seed.setdefault(seed, Counter())[digest] += 1
    for seed, counts in by_seed.items():
        if len(counts) < 2:
            continue
        majority, _ = counts.most_common(1)[0]
        for g in gpus:
            digest = (g.get("digests") or {}).get(seed)
            if digest is not None and digest != majority:
                subject = f"GPU {g.get('index')}"
                findings.append(
                    critical(
                        f"{subject}: its result for input {seed} differs from the other GPUs' "
                        "(silent data corruption)",
                        Action.RMA,
                        f"seed {seed}: {digest[:16]} vs majority {majority[:16]}",
                        subject,
                    )
                )
    return findings


def _tflops_findings(gpus: list, profile: Profile) -> list[Finding]:
    values = {
        g.get("index"): number(
            g["tflops"], f"burnin-stress GPU {g.get('index')} tflops", maximum=MAX_GPU_TFLOPS
        )
        for g in gpus
        if g.get("tflops") is not None
    }
    if not values:
        return []
    best = max(values.values())
    fraction, floor = profile.floors.matmul_tflops_fraction_of_best, profile.floors.matmul_tflops
    findings = []
    for index, value in sorted(values.items()):
        subject = f"GPU {index}"
        if floor is not None and value < float(floor):
            findings.append(
                critical(
                    f"{subject}: {value:g} TFLOP/s, below the profile's floor of {float(floor):g}",
                    Action.RMA,
                    f"{subject}: {value} TFLOP/s",
                    subject,
                )
            )
        elif value < fraction * best:
            findings.append(
                critical(
                    f"{subject}: {value:g} TFLOP/s, more than {100 - fraction * 100:g}% below the "
                    f"node's best GPU ({best:g})",
                    Action.RMA,
                    f"{subject}: {value} TFLOP/s",
                    subject,
                )
            )
    return findings


def throttle_findings(samples: list) -> list[Finding]:
    """Findings for throttle-reason samples taken under load (also read by burnin evaluate)."""
    seen: dict[int, set[str]] = {}
    evidence: dict[int, str] = {}
    for s in samples:
        if s.reasons_mask is None:
            continue
        names = set(decode_throttle_reasons(s.reasons_mask))
        flagged = names & (HW_THROTTLE | SOFT_THROTTLE_WARN)
        if flagged:
            seen.setdefault(s.index, set()).update(flagged)
            evidence.setdefault(
                s.index, f"{s.index}, {s.reasons_mask:#018x}, {s.temperature_c}, {s.power_draw_w}"
            )
    findings = []
    for index, names in sorted(seen.items()):
        subject = f"GPU {index}"
        hw = sorted(names & HW_THROTTLE)
        if hw:
            findings.append(
                critical(
                    f"{subject} throttled by hardware under load: {', '.join(hw)}",
                    Action.RESEAT,
                    evidence[index],
                    subject,
                )
            )
        else:
            findings.append(
                warning(
                    f"{subject} throttled under load: {', '.join(sorted(names))} (cooling?)",
                    Action.MONITOR,
                    evidence[index],
                    subject,
                )
            )
    return findings
