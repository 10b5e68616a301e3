"""The agent ramdisk: a Debian cloud kernel + static busybox + virtio modules + the agent script.

Booted over PXE, it brings up the NIC it booted from, and phones home the node's own view of
itself (MACs, SMBIOS serial and UUID, disks) to the boot server (agent.sh). About 1.2 MB of
initramfs next to an 8 MB kernel.

The kernel comes from Debian's package, downloaded and unpacked into a cache directory
(``apt-get download`` + ``dpkg-deb -x``): nothing is installed on the host. The result is
cached under a directory named by a hash of everything that goes into it, so a CI run builds
it once.

    python -m bringup.provision.pxe.ramdisk [--cache DIR]     # prints the directory
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bringup.core.errors import UserError
from bringup.local.files import flocked

KERNEL_FLAVOUR = "cloud-amd64"
# What the agent needs: the NIC (virtio in the lab; real NIC drivers would be added here) and
# block devices so disks show up in the report.
MODULES = ("virtio_net", "virtio_pci", "virtio_blk", "virtio_scsi", "sd_mod", "nvme")
BUSYBOX = Path("/bin/busybox")
AGENT_SCRIPT = Path(__file__).with_name("agent.sh")
BUILD_VERSION = "1"  # bump when the layout below changes

UDHCPC_SCRIPT = """#!/bin/sh
case "$1" in
    deconfig) ip addr flush dev "$interface" ;;
    bound|renew)
        ip addr flush dev "$interface"
        ip addr add "$ip/${mask:-24}" dev "$interface"
        [ -n "$router" ] && ip route add default via "${router%% *}" dev "$interface"
        ;;
esac
exit 0
"""


class RamdiskError(UserError, RuntimeError):
    """The ramdisk could not be built (the message says which step and why)."""


@dataclass(frozen=True)
class Ramdisk:
    directory: Path
    kernel_version: str

    @property
    def kernel(self) -> Path:
        return self.directory / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.directory / "initrd.gz"


def default_cache_dir() -> Path:
    return Path(os.environ.get("BRINGUP_CACHE_DIR", "/var/cache/bringup"))


# -- pure helpers ---------------------------------------------------------------------------


def parse_modules_dep(text: str) -> dict[str, list[str]]:
    """modules.dep -> {module name: [its path, then its dependencies' paths]} (pure)."""
    deps: dict[str, list[str]] = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        path, _, rest = line.partition(":")
        deps[module_name(path)] = [path, *rest.split()]
    return deps


def module_name(path: str) -> str:
    base = path.rsplit("/", 1)[-1]
    base = re.sub(r"\.ko(\.(xz|gz|zst))?$", "", base)
    return base.replace("-", "_")


def load_order(wanted: Iterable[str], deps: dict[str, list[str]]) -> list[str]:
    """Module paths in an order insmod accepts: every dependency before its user (pure).

    Modules built into the kernel are not in modules.dep and are skipped; so are unknown names.
    """
    order: list[str] = []
    by_path = {entries[0]: name for name, entries in deps.items()}

    def visit(name: str, stack: tuple[str, ...]) -> None:
        if name in stack or name not in deps:
            return
        path = deps[name][0]
        if path in order:
            return
        for dep in deps[name][1:]:
            visit(by_path.get(dep, module_name(dep)), (*stack, name))
        order.append(path)

    for name in wanted:
        visit(name.replace("-", "_"), ())
    return order


def newc_archive(
    entries: list[tuple[str, int, bytes]], devices: dict[str, tuple[int, int]] | None = None
) -> bytes:
    """A cpio "newc" archive of (path, mode, data) entries; directories have empty data, and
    ``devices`` gives (major, minor) for device nodes (pure)."""
    out = io.BytesIO()
    devices = devices or {}

    def header(name: str, mode: int, size: int, ino: int) -> None:
        encoded = name.encode() + b"\0"
        major, minor = devices.get(name, (0, 0))
        fields = [ino, mode, 0, 0, 1, 0, size, 0, 0, major, minor, len(encoded), 0]
        out.write(b"070701" + b"".join(f"{v:08x}".encode() for v in fields))
        out.write(encoded)
        out.write(b"\0" * (-(110 + len(encoded)) % 4))

    for ino, (name, mode, data) in enumerate(entries, start=1):
        header(name, mode, len(data), ino)
        out.write(data)
        out.write(b"\0" * (-len(data) % 4))
    header("TRAILER!!!", 0, 0, 0)
    return out.getvalue()


def content_key(parts: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:16]


# -- the kernel -------------------------------------------------------------------------------


def _run(args: list[str], cwd: Path | None = None, timeout: float = 600) -> str:
    try:
        proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise RamdiskError(f"{args[0]} is not installed (Debian: apt-get install dpkg apt)") from None
    except subprocess.TimeoutExpired:
        raise RamdiskError(f"{' '.join(args)} took longer than {timeout:.0f} s") from None
    if proc.returncode != 0:
        raise RamdiskError(f"{' '.join(args)} failed: {(proc.stderr or proc.stdout).strip()[-800:]}")
    return proc.stdout


def kernel_package(flavour: str = KERNEL_FLAVOUR) -> str:
    """The versioned kernel package the ``linux-image-<flavour>`` metapackage points at."""
    out = _run(["apt-cache", "depends", f"linux-image-{flavour}"])
    for line in out.splitlines():
        m = re.search(r"Depends:\s*(linux-image-\d\S*-" + re.escape(flavour) + r")\s*$", line)
        if m:
            return m.group(1)
    raise RamdiskError(f"apt-cache knows no kernel for linux-image-{flavour} (run apt-get update)")


def ensure_kernel(cache: Path, package: str | None = None) -> Path:
    """Download and unpack the kernel package once; returns the unpacked tree (cached)."""
    return ensure_package(cache / "kernel", package or kernel_package())


def ensure_package(directory: Path, package: str) -> Path:
    """Download and unpack a Debian package once into ``directory/<package>`` (nothing is
    installed on the host); returns the unpacked tree (cached)."""
    directory.mkdir(parents=True, exist_ok=True)
    tree = directory / package
    if (tree / ".complete").exists():
        return tree
    with flocked(directory / f"{package}.lock"):
        if (tree / ".complete").exists():
            return tree
        with tempfile.TemporaryDirectory(dir=directory) as tmp:
            work = Path(tmp)
            os.chmod(work, 0o755)  # apt drops to _apt for downloads when it can
            _run(["apt-get", "download", "-q", package], cwd=work)
            debs = sorted(work.glob(f"{package}_*.deb"))
            if not debs:
                raise RamdiskError(f"apt-get download {package} produced no .deb")
            unpacked = work / "tree"
            _run(["dpkg-deb", "-x", str(debs[0]), str(unpacked)])
            (unpacked / ".complete").write_text(debs[0].name + "\n")
            shutil.rmtree(tree, ignore_errors=True)
            unpacked.rename(tree)
    return tree


def _kernel_parts(tree: Path) -> tuple[str, Path, Path]:
    vmlinuz = sorted((tree / "boot").glob("vmlinuz-*"))
    if not vmlinuz:
        raise RamdiskError(f"no vmlinuz in {tree}/boot")
    version = vmlinuz[0].name.removeprefix("vmlinuz-")
    moddir = tree / "lib" / "modules" / version
    if not moddir.is_dir():
        moddir = tree / "usr" / "lib" / "modules" / version
    return version, vmlinuz[0], moddir


def module_depends(data: bytes) -> list[str]:
    """The ``depends=`` list of a kernel module's .modinfo strings (pure)."""
    m = re.search(rb"(?:^|\0)depends=([^\0]*)\0", data)
    return [d for d in m.group(1).decode().split(",") if d] if m else []


def module_deps(moddir: Path, wanted: Iterable[str]) -> dict[str, list[str]]:
    """{name: [relative path, dependency paths...]} for ``wanted`` and what they need, read from
    the modules themselves (the package ships no modules.dep: depmod runs at install time)."""
    paths = {module_name(p.name): p for p in moddir.rglob("*.ko*")}
    deps: dict[str, list[str]] = {}
    todo = [w.replace("-", "_") for w in wanted]
    while todo:
        name = todo.pop()
        if name in deps or name not in paths:
            continue
        path = paths[name]
        data = path.read_bytes()
        if path.name.endswith(".gz"):
            data = gzip.decompress(data)
        needs = module_depends(data)
        deps[name] = [
            str(path.relative_to(moddir)),
            *(str(paths[n].relative_to(moddir)) for n in needs if n in paths),
        ]
        todo += needs
    return deps


# -- the ramdisk ----------------------------------------------------------------------------------


def _initrd_entries(moddir: Path, modules: list[str]) -> list[tuple[str, int, bytes]]:
    dirs = ["bin", "sbin", "dev", "proc", "sys", "tmp", "run", "etc", "etc/bringup", "lib", "lib/modules"]
    entries: list[tuple[str, int, bytes]] = [(d, stat.S_IFDIR | 0o755, b"") for d in dirs]
    entries.append(("dev/console", stat.S_IFCHR | 0o600, b""))  # init's stdout before devtmpfs
    entries.append(("bin/busybox", stat.S_IFREG | 0o755, BUSYBOX.read_bytes()))
    for applet in ("sh", "mount", "insmod", "mkdir"):
        entries.append((f"bin/{applet}", stat.S_IFLNK | 0o777, b"busybox"))
    entries.append(("init", stat.S_IFREG | 0o755, AGENT_SCRIPT.read_bytes()))
    entries.append(("etc/bringup/udhcpc.sh", stat.S_IFREG | 0o755, UDHCPC_SCRIPT.encode()))
    names = []
    for rel in modules:
        data = (moddir / rel).read_bytes()
        if rel.endswith(".xz") or rel.endswith(".zst"):
            raise RamdiskError(f"compressed module {rel}: busybox insmod needs plain .ko or .ko.gz")
        if rel.endswith(".gz"):
            data, rel = gzip.decompress(data), rel[:-3]
        flat = rel.rsplit("/", 1)[-1]
        entries.append((f"lib/modules/{flat}", stat.S_IFREG | 0o644, data))
        names.append(flat)
    entries.append(("etc/bringup/modules", stat.S_IFREG | 0o644, ("\n".join(names) + "\n").encode()))
    return entries


def build_ramdisk(
    cache: Path | None = None,
    package: str | None = None,
    extra: Sequence[tuple[str, int, bytes]] = (),
) -> Ramdisk:
    """Build (or find in the cache) the agent kernel + initrd; returns where they are.

    ``extra``: more (path, mode, data) entries for the initrd, after the agent's own (each
    directory before what it holds); an executable in ``etc/bringup/boot.d/`` runs at boot
    before the report is sent. A variant's entries are part of its cache key."""
    cache = (cache or default_cache_dir()).resolve()
    cache.mkdir(parents=True, exist_ok=True)
    if not BUSYBOX.exists():
        raise RamdiskError(f"{BUSYBOX} is missing (Debian: apt-get install busybox-static)")
    tree = ensure_kernel(cache, package)
    version, vmlinuz, moddir = _kernel_parts(tree)
    dep_file = moddir / "modules.dep"
    deps = parse_modules_dep(dep_file.read_text()) if dep_file.exists() else module_deps(moddir, MODULES)
    modules = load_order(MODULES, deps)
    key = content_key(
        [
            BUILD_VERSION.encode(),
            version.encode(),
            (tree / ".complete").read_bytes(),
            BUSYBOX.read_bytes(),
            AGENT_SCRIPT.read_bytes(),
            UDHCPC_SCRIPT.encode(),
            "\n".join(modules).encode(),
            *(f"{path}:{mode:o}".encode() + b"\0" + data for path, mode, data in extra),
        ]
    )
    out = cache / "ramdisk" / key
    if (out / ".complete").exists():
        return Ramdisk(out, version)
    with flocked(cache / "ramdisk" / f"{key}.lock"):
        if (out / ".complete").exists():
            return Ramdisk(out, version)
        tmp = Path(tempfile.mkdtemp(dir=cache / "ramdisk"))
        try:
            entries = [*_initrd_entries(moddir, modules), *extra]
            archive = newc_archive(entries, {"dev/console": (5, 1)})
            (tmp / "initrd.gz").write_bytes(gzip.compress(archive, 9, mtime=0))
            shutil.copyfile(vmlinuz, tmp / "vmlinuz")
            for f in tmp.iterdir():
                f.chmod(0o644)
            tmp.chmod(0o755)
            (tmp / ".complete").write_text(f"{version}\n")
            shutil.rmtree(out, ignore_errors=True)
            tmp.rename(out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return Ramdisk(out, version)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the bringup agent ramdisk (cached).")
    parser.add_argument(
        "--cache", type=Path, default=None, help="cache directory (default /var/cache/bringup)"
    )
    args = parser.parse_args(argv)
    try:
        rd = build_ramdisk(args.cache)
    except RamdiskError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(rd.directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
