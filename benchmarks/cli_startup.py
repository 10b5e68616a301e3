#!/usr/bin/env python3
"""How long `bringup --help` and `burnin --help` take, and what importing the CLI loads.

Usage: .venv/bin/python benchmarks/cli_startup.py [--tree DIR] [--repeat 9]

``--tree`` runs another checkout's code with this virtualenv (e.g. a `git worktree` of an older
commit), so two versions can be compared on the same machine in the same minute. Prints, per
program, the best and median wall time of ``--help`` (a fresh interpreter each time), the
cumulative import time of its CLI module (``python -X importtime``), and whether the lab
(``bringup.lab``) or bcrypt is imported on the way.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# (program, module run as __main__ for --help, the CLI module whose import is timed). Older trees
# kept each root group in the package itself; the first candidate that exists is used.
PROGRAMS = {
    "bringup": (("bringup.cli.main", "bringup/cli/main.py"), ("bringup.cli", "bringup/cli.py")),
    "burnin": (("burnin.cli", "burnin/cli/__init__.py"), ("burnin.cli", "burnin/cli.py")),
}


def cli_module(tree: Path, program: str) -> str:
    for module, path in PROGRAMS[program]:
        if (tree / path).is_file():
            return module
    raise SystemExit(f"{tree}: no CLI module of {program} found")


def run(tree: Path, code: str, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    # cwd=tree: `python -c` puts the working directory first on sys.path, ahead of PYTHONPATH.
    return subprocess.run(
        [sys.executable, *flags, "-c", code], env=env, cwd=tree, capture_output=True, text=True, check=True
    )


def help_seconds(tree: Path, module: str, repeat: int) -> list[float]:
    code = f"import sys; sys.argv = ['x', '--help']; from {module} import main; main()"
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        try:
            run(tree, code)
        except subprocess.CalledProcessError as exc:  # --help exits 0; anything else is a failure
            raise SystemExit(f"{module} --help failed:\n{exc.stderr}") from None
        times.append(time.perf_counter() - started)
    return times


def import_profile(tree: Path, module: str) -> tuple[float, list[str]]:
    """Cumulative import time of ``module`` (ms) and the lab/bcrypt modules it pulls in."""
    err = run(tree, f"import {module}", "-X", "importtime").stderr
    total, heavy = 0.0, []
    for line in err.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|(\s*)(\S+)$", line)
        if not m:
            continue
        name = m.group(3)
        if name == module:
            total = int(m.group(1)) / 1000
        if name.startswith(("bringup.lab", "bcrypt")) and name.split(".")[0] in ("bringup", "bcrypt"):
            heavy.append(name)
    return total, heavy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--tree", type=Path, default=REPO, help="checkout to measure (default: this one)")
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    tree = args.tree.resolve()
    print(f"tree {tree}  (load average {os.getloadavg()[0]:.2f})", flush=True)
    for program in PROGRAMS:
        module = cli_module(tree, program)
        times = help_seconds(tree, module, args.repeat)
        imports = [import_profile(tree, module) for _ in range(3)]
        best_import = min(ms for ms, _ in imports)
        heavy = sorted(set(imports[0][1]))
        lab = ", ".join(h for h in heavy if h in ("bringup.lab", "bcrypt")) or "neither"
        print(
            f"{program} --help: best {min(times):.3f} s, median {statistics.median(times):.3f} s "
            f"({args.repeat} runs); import {module}: {best_import:.0f} ms; "
            f"imports bringup.lab/bcrypt: {lab} ({len(heavy)} lab/bcrypt modules)"
        )


if __name__ == "__main__":
    main()
