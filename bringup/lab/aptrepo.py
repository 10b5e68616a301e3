"""The lab's apt repository: stand-in packages named like the real ones, served over HTTP.

Lab nodes have no apt sources at all (no Internet); this repository is the only one they know,
the way a production rack only knows its site mirror. ``bringup configure`` installs from it
with the same playbooks it runs on real hosts.

- Packages are defined in ``packages/packages.yml`` and built with ``dpkg-deb --build`` at
  every ``lab up`` (well under a second), then indexed (``Packages``, ``Release``) like a flat
  repository: ``deb [trusted=yes] http://<gateway>:<port>/ ./``.
- A package may fail its postinst on nodes that carry a fault (``driver-install-fails``): the
  repository is shared, so the postinst reads the node's /etc/bringup-lab/faults.json.
- The repository is served by a small HTTP server (this module run with ``--serve``) bound to
  the lab's gateway, the host's address on the node subnet.
- Lab nodes have no systemd as PID 1, so every node also gets the lab's systemctl
  (``packages/systemctl``) in /usr/local/sbin: it keeps unit state in files for the playbooks'
  ``systemd_service`` tasks and hands the recorded answers burn-in relies on to the recorded
  stand-in.

The inventory variables returned by ``start`` point the configure playbooks at the repository
and switch off what a network namespace cannot do (changing the shared kernel, rebooting).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import format_datetime
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from bringup.lab.network import LabError, run_cmd
from bringup.lab.state import LabNode, LabState
from bringup.local.procs import cmdline_has, stop_pid

PACKAGES_DIR = Path(__file__).resolve().parent / "packages"
CATALOG_PATH = PACKAGES_DIR / "packages.yml"
SYSTEMCTL_SOURCE = PACKAGES_DIR / "systemctl"
NODE_SYSTEMCTL = Path("usr/local/sbin/systemctl")
MARKER_DIR = "usr/lib/bringup-lab/packages"
FAULTS_FILE = "/etc/bringup-lab/faults.json"
SUBDIR = "aptrepo"  # under the lab's state dir
REPO_NAME = "bringup-lab"
STUB = (
    "#!/bin/sh\n"
    "# Lab stand-in: the lab's systemctl records this service as running; no daemon runs.\n"
    "exit 0\n"
)


@dataclass(frozen=True)
class PackageDef:
    """One (package, version) of the repository."""

    name: str
    version: str
    description: str
    stands_for: tuple[str, ...] = ()
    units: dict[str, dict[str, str]] = field(default_factory=dict)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    conffiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    fail_postinst_on: str | None = None
    fail_message: str = ""

    @property
    def upstream(self) -> str:
        return upstream_version(self.version)

    @property
    def filename(self) -> str:
        version = self.version.split(":", 1)[-1]  # dpkg's file names drop the epoch
        return f"{self.name}_{version}_all.deb"


def upstream_version(version: str) -> str:
    """``1:3.9.0-4`` -> ``3.9.0``: no epoch, no Debian revision."""
    without_epoch = version.split(":", 1)[-1]
    return without_epoch.rsplit("-", 1)[0] if "-" in without_epoch else without_epoch


def load_catalog(path: Path = CATALOG_PATH) -> list[PackageDef]:
    """Every (package, version) the catalog defines, in catalog order."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    out = []
    for entry in data["packages"]:
        for version in entry["versions"]:
            out.append(
                PackageDef(
                    name=entry["name"],
                    version=str(version),
                    description=entry["description"],
                    stands_for=tuple(entry.get("stands_for", ())),
                    units=dict(entry.get("units") or {}),
                    files=dict(entry.get("files") or {}),
                    conffiles=dict(entry.get("conffiles") or {}),
                    fail_postinst_on=entry.get("fail_postinst_on"),
                    fail_message=entry.get("fail_message", ""),
                )
            )
    return out


def package_faults(catalog: list[PackageDef] | None = None) -> set[str]:
    """The lab faults some package's postinst acts on (declared in the stand-ins' catalog)."""
    return {p.fail_postinst_on for p in (catalog or load_catalog()) if p.fail_postinst_on}


# -- package contents (pure) ------------------------------------------------------------------


def control_text(pkg: PackageDef, installed_kib: int) -> str:
    return (
        f"Package: {pkg.name}\n"
        f"Version: {pkg.version}\n"
        "Architecture: all\n"
        "Maintainer: bringup lab <lab@bringup.invalid>\n"
        f"Installed-Size: {max(installed_kib, 1)}\n"
        "Section: misc\n"
        "Priority: optional\n"
        f"Description: {pkg.description}\n"
        f" Stand-in built by bringup's virtual rack; stands for: {', '.join(pkg.stands_for) or '-'}.\n"
    )


def postinst_text(pkg: PackageDef) -> str | None:
    """The maintainer script that fails on nodes carrying ``fail_postinst_on`` (else None)."""
    if not pkg.fail_postinst_on:
        return None
    message = pkg.fail_message.replace("{upstream}", pkg.upstream).rstrip("\n")
    lines = "\n".join(f"    echo {_sh_quote(line)} >&2" for line in message.splitlines())
    return (
        "#!/bin/sh\n"
        "set -e\n"
        f"# Lab fault {pkg.fail_postinst_on}: this node's install fails here, like a failed module build.\n"
        f'if [ "$1" = configure ] && grep -q \'"{pkg.fail_postinst_on}"\' {FAULTS_FILE} 2>/dev/null; then\n'
        f"{lines}\n"
        "    exit 1\n"
        "fi\n"
        "exit 0\n"
    )


def unit_text(spec: dict[str, str]) -> str:
    return (
        "[Unit]\n"
        f"Description={spec.get('description', 'lab stand-in service')}\n\n"
        "[Service]\n"
        f"ExecStart={spec['exec']}\n\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )


def marker_text(pkg: PackageDef) -> str:
    return f"{pkg.name} {pkg.version}\nstands for: {' '.join(pkg.stands_for)}\n"


def package_files(pkg: PackageDef, packages_dir: Path = PACKAGES_DIR) -> dict[str, tuple[bytes, int]]:
    """Absolute path -> (content, mode) of everything the package installs."""
    files: dict[str, tuple[bytes, int]] = {
        f"/{MARKER_DIR}/{pkg.name}": (marker_text(pkg).encode(), 0o644),
    }
    for unit, spec in pkg.units.items():
        files[f"/lib/systemd/system/{unit}"] = (unit_text(spec).encode(), 0o644)
    for dest, spec in {**pkg.files, **pkg.conffiles}.items():
        if spec.get("stub"):
            files[dest] = (STUB.encode(), 0o755)
        elif "source" in spec:
            files[dest] = ((packages_dir / spec["source"]).read_bytes(), 0o755)
        else:
            files[dest] = (str(spec["content"]).encode(), 0o644)
    return files


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


# -- building the repository ------------------------------------------------------------------


def build_deb(pkg: PackageDef, out_dir: Path) -> Path:
    """One .deb with dpkg-deb (root-owned files, gzip, deterministic enough for a lab)."""
    files = package_files(pkg)
    with tempfile.TemporaryDirectory(prefix="bringup-deb-") as tmp:
        root = Path(tmp) / "root"
        debian = root / "DEBIAN"
        debian.mkdir(parents=True)
        size = 0
        for dest, (content, mode) in files.items():
            target = root / dest.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            target.chmod(mode)
            size += len(content)
        (debian / "control").write_text(control_text(pkg, (size + 1023) // 1024))
        if pkg.conffiles:
            (debian / "conffiles").write_text("".join(f"{c}\n" for c in pkg.conffiles))
        script = postinst_text(pkg)
        if script:
            (debian / "postinst").write_text(script)
            (debian / "postinst").chmod(0o755)
        out = out_dir / pkg.filename
        run_cmd(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root), str(out)])
    return out


def packages_index(entries: list[tuple[str, str, bytes]]) -> str:
    """A ``Packages`` file from (control text, file name, .deb bytes) triples (pure)."""
    stanzas = []
    for control, filename, data in entries:
        fields = control.rstrip("\n")
        stanzas.append(
            f"{fields}\nFilename: ./{filename}\nSize: {len(data)}\n"
            f"MD5sum: {hashlib.md5(data).hexdigest()}\nSHA256: {hashlib.sha256(data).hexdigest()}\n"
        )
    return "\n".join(stanzas)


def release_text(files: dict[str, bytes], date: datetime) -> str:
    """A flat repository's ``Release`` (no signature: the sources line says trusted=yes)."""
    md5 = "".join(f" {hashlib.md5(d).hexdigest()} {len(d)} {n}\n" for n, d in sorted(files.items()))
    sha = "".join(f" {hashlib.sha256(d).hexdigest()} {len(d)} {n}\n" for n, d in sorted(files.items()))
    return (
        f"Origin: {REPO_NAME}\nLabel: {REPO_NAME}\nSuite: lab\nCodename: lab\n"
        f"Date: {format_datetime(date.astimezone(timezone.utc), usegmt=True)}\n"
        "Architectures: all amd64\nDescription: bringup virtual rack stand-in packages\n"
        f"MD5Sum:\n{md5}SHA256:\n{sha}"
    )


def build_repo(dest: Path, catalog: list[PackageDef] | None = None) -> list[Path]:
    """Build every package of the catalog into ``dest`` and index it; returns the .deb paths."""
    if shutil.which("dpkg-deb") is None:
        raise LabError("dpkg-deb is needed to build the lab's apt repository (apt-get install dpkg)")
    catalog = catalog if catalog is not None else load_catalog()
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    debs, entries = [], []
    for pkg in catalog:
        deb = build_deb(pkg, dest)
        debs.append(deb)
        control = run_cmd(["dpkg-deb", "--field", str(deb)])
        entries.append((control, deb.name, deb.read_bytes()))
    index = packages_index(entries).encode()
    compressed = gzip.compress(index, mtime=0)
    (dest / "Packages").write_bytes(index)
    (dest / "Packages.gz").write_bytes(compressed)
    release = release_text({"Packages": index, "Packages.gz": compressed}, datetime.now(timezone.utc))
    (dest / "Release").write_text(release)
    return debs


# -- the HTTP server ----------------------------------------------------------------------------


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        sys.stderr.write(f"{self.address_string()} {format % args}\n")


def serve(directory: Path, bind: str, port_file: Path) -> None:
    """Serve ``directory`` on ``bind`` (a free port), writing the port to ``port_file``."""

    def handler(*args: Any, **kwargs: Any) -> _QuietHandler:
        return _QuietHandler(*args, directory=str(directory), **kwargs)

    server = ThreadingHTTPServer((bind, 0), handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    tmp = port_file.with_suffix(".tmp")
    tmp.write_text(f"{server.server_address[1]}\n")
    tmp.replace(port_file)
    server.serve_forever()


def _server_cmdline(state_dir: Path) -> list[str]:
    return [sys.executable, "-m", "bringup.lab.aptrepo", "--serve", str(state_dir / SUBDIR)]


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


# -- the lab service ----------------------------------------------------------------------------


class AptRepoService:
    """LabService: the stand-in package repository, plus the lab's systemctl on every node."""

    name = "aptrepo"

    def prepare_node(self, state: LabState, node: LabNode, root: Path) -> None:
        target = root / NODE_SYSTEMCTL
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(SYSTEMCTL_SOURCE, target)
        target.chmod(0o755)

    def start(self, state: LabState, timeout: float = 10.0) -> dict[str, Any]:
        if not state.gateway:
            raise LabError("the lab has no gateway address for its apt repository")
        base = Path(state.state_dir) / SUBDIR
        self.stop(Path(state.state_dir))
        build_repo(base / "repo")
        port_file = base / "port"
        port_file.unlink(missing_ok=True)
        env = dict(os.environ)
        project_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [project_root, env.get("PYTHONPATH")]))
        with (base / "http.log").open("ab") as log:
            proc = subprocess.Popen(
                [*_server_cmdline(Path(state.state_dir)), "--bind", state.gateway],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        (base / "server.pid").write_text(f"{proc.pid}\n")
        deadline = time.monotonic() + timeout
        while (port := _read_int(port_file)) is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                tail = (base / "http.log").read_text(errors="replace")[-2000:]
                raise LabError(f"the lab's apt repository server did not start:\n{tail}")
            time.sleep(0.02)
        url = f"http://{state.gateway}:{port}/"
        return lab_inventory_vars(url)

    def stop(self, state_dir: Path) -> list[str]:
        base = Path(state_dir) / SUBDIR
        pid = _read_int(base / "server.pid")
        removed = []
        if pid is not None and cmdline_has(pid, "bringup.lab.aptrepo", str(base)):
            stop_pid(pid)
            removed.append("apt repository server")
        (base / "server.pid").unlink(missing_ok=True)
        (base / "port").unlink(missing_ok=True)
        return removed


def lab_inventory_vars(repo_url: str) -> dict[str, Any]:
    """What the configure playbooks need to run on lab nodes (see docs/configure.md)."""
    return {
        # The lab repository is the nodes' only apt source (their "site mirror").
        "base_apt_repositories": [{"name": REPO_NAME, "uris": repo_url, "suites": "./", "trusted": True}],
        # Nodes are namespaces on the host's kernel: write sysctl, module and boot settings to
        # their files, but never apply them to the running (shared) kernel.
        "bringup_live_kernel": False,
        # A namespace cannot reboot; the play records the reboot as required instead.
        "nvidia_driver_reboot": False,
        "amdgpu_driver_reboot": False,
        # Lab nodes have no container engine in their base image: install the stand-in.
        "container_toolkit_runtime_packages": ["docker.io"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the lab's apt repository (internal).")
    parser.add_argument("--serve", type=Path, required=True, help="the repository state dir")
    parser.add_argument("--bind", required=True)
    args = parser.parse_args(argv)
    serve(args.serve / "repo", args.bind, args.serve / "port")
    return 0


if __name__ == "__main__":
    sys.exit(main())
