"""Put `burnin` and the health check on a running lab node, as the burnin_tools role does on a
real one (`burnin_tools_health: true`).

A real node gets the gpu-bringup package from the role's wheelhouse (burnin.yml, which
tests/lab/test_fault_lab.py runs on a lab node). This copy is the quicker path the service
tests and benchmarks take: a lab node runs
Debian bookworm's python3 (3.11, the controller's minor version), so the controller's own copy
of `bringup`, `burnin` and the third-party packages `burnin.cli` imports (with their dist-info:
paramiko reads its version from it) is copied to /opt/bringup/lib, with a `burnin` launcher in
/opt/bringup/bin. The lab's base image has slurmd but not the Slurm client: the controller's
`scontrol` (the same Debian package version, linked against the libslurmfull slurmd ships) is
copied in, where the role installs `slurm-client`. The profile and the program Slurm runs are
rendered from the role's own templates.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jinja2

REPO = Path(__file__).resolve().parents[2]
ROLE = REPO / "playbooks" / "roles" / "burnin_tools"
LIB = Path("opt/bringup/lib")
BURNIN = "/opt/bringup/bin/burnin"
LAUNCHER = f"""#!/usr/bin/python3 -I
import sys
sys.path.insert(0, "/{LIB}")
from burnin.cli import main
sys.exit(main())
"""


def node_root(state_dir: str | Path, node: str) -> Path:
    return Path(state_dir) / "nodes" / node / "root"


def _closure() -> list[Path]:
    """The files and directories of every module `burnin.cli` imports outside the stdlib."""
    code = (
        "import sys, burnin.cli\n"
        "std = set(sys.stdlib_module_names)\n"
        "for name, mod in sorted(sys.modules.items()):\n"
        "    top = name.split('.')[0]\n"
        "    f = getattr(mod, '__file__', None)\n"
        "    if '.' not in name and top not in std and f: print(f)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    paths = []
    for line in out.stdout.splitlines():
        f = Path(line)
        f = f.parent if f.name == "__init__.py" else f
        if f.name.startswith(("__editable__", "_distutils_hack")) or not (
            "site-packages" in f.parts or f.is_relative_to(REPO)
        ):
            continue  # the interpreter's own (_sysconfigdata) and the venv's import hooks
        paths.append(f)
    return paths


def _dist_infos(tops: set[str]) -> list[Path]:
    found = []
    for top, dists in importlib.metadata.packages_distributions().items():
        if top not in tops:
            continue
        for dist in dists:
            files = importlib.metadata.distribution(dist).files or []
            for f in files:
                if f.parts and f.parts[0].endswith(".dist-info"):
                    found.append(Path(str(f.locate())).parents[len(f.parts) - 2])
                    break
    return found


def bundle(staging: Path) -> Path:
    """The copy of the packages, made once per test session (then copied into each node)."""
    lib = staging / "lib"
    if lib.exists():
        return lib
    lib.mkdir(parents=True)
    paths = _closure()
    for path in paths + _dist_infos({p.stem for p in paths}):
        target = lib / path.name
        if path.is_dir():
            shutil.copytree(path, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, target)
    return lib


def render_role_template(name: str, role_vars: dict[str, object]) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(ROLE / "templates"), keep_trailing_newline=True)
    return env.get_template(name).render(ansible_managed="Ansible managed (lab copy)", **role_vars)


def role_defaults() -> dict[str, object]:
    import yaml

    return yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())


def install_health(root: Path, staging: Path, profile_file: Path, extra_args: str = "") -> dict[str, object]:
    """burnin, scontrol, the profile and the health-check program into a node root; returns the
    role variables used (the program path is what slurm.conf's HealthCheckProgram names)."""
    role_vars = {
        **role_defaults(),
        "burnin_tools_health": True,
        "burnin_tools_health_burnin": BURNIN,
        "burnin_tools_health_args": extra_args,
        "burnin_tools_health_profile": f"/etc/bringup/profiles/{profile_file.name}",
    }
    lib = bundle(staging)
    dest = root / LIB
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(lib, dest, symlinks=True)
    launcher = root / BURNIN.lstrip("/")
    launcher.parent.mkdir(parents=True, exist_ok=True)
    launcher.write_text(LAUNCHER)
    launcher.chmod(0o755)
    scontrol = root / "usr" / "bin" / "scontrol"
    if not scontrol.exists():
        shutil.copy2("/usr/bin/scontrol", scontrol)
    profile = root / str(role_vars["burnin_tools_health_profile"]).lstrip("/")
    profile.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(profile_file, profile)
    (root / str(role_vars["burnin_tools_health_state_dir"]).lstrip("/")).mkdir(parents=True, exist_ok=True)
    program = root / str(role_vars["burnin_tools_health_program"]).lstrip("/")
    program.parent.mkdir(parents=True, exist_ok=True)
    program.write_text(render_role_template("bringup-health-check.j2", role_vars))
    os.chmod(program, 0o755)
    return role_vars
