"""A controller process for test_output_bound_lab: runs one thing against a lab node that prints
~100 MB and prints, as JSON, how much its memory grew (VmHWM, the peak resident set, less the
resident set before it started) and what came back.

    python -m tests.lab.flood_controller raw HOST KEY [MAX_OUTPUT]
    python -m tests.lab.flood_controller burnin HOST KEY DB NODE
"""

from __future__ import annotations

import json
import sys


def _kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def main() -> None:
    mode, host, key = sys.argv[1:4]
    from bringup.ssh.fanout import SshTarget, run_script  # imported before the baseline is read

    target = SshTarget("flood", host, key_file=key, host_key_policy="off")
    if mode == "raw":
        from burnin.stages.runner import BurninRun  # noqa: F401 - the same imports as the burnin mode

        kwargs = {"max_output": int(sys.argv[4])} if len(sys.argv) > 4 else {}
        baseline = _kib("VmRSS")
        res = run_script(target, "head -c 100000000 /dev/zero | tr '\\0' x; echo; echo done", 120, **kwargs)
        out = {
            "rc": res.rc,
            "error": res.error,
            "cut": res.cut,
            "kept": len(res.stdout),
            "tail": res.stdout[-6:].decode(),
        }
    else:
        from bringup.fleet.store import FleetStore
        from bringup.profiles.load import find_profile
        from burnin.checks import ALL_CHECKS
        from burnin.stages import runner
        from burnin.stages.jobs import NodeJob
        from burnin.stages.runner import BurninRun
        from tests.paths import REPO

        db, node = sys.argv[4:6]
        store = FleetStore(f"sqlite:///{db}")
        profile = find_profile("h100-sxm-8x400g", REPO / "inventories" / "profiles")
        runner.stage_checks = lambda stage, profile: [ALL_CHECKS["kernel_log"]]
        baseline = _kib("VmRSS")
        (outcome,) = BurninRun(store, None, ["preflight"]).run([NodeJob(node, profile, target)])
        (result,) = outcome.stages[0].results
        out = {
            "verdict": result.verdict.value,
            "reason": result.reason,
            "findings": [f.message for f in result.findings],
            "error": outcome.stages[0].error,
        }
    out["grew_mib"] = (_kib("VmHWM") - baseline) / 1024
    print(json.dumps(out))


if __name__ == "__main__":
    main()
