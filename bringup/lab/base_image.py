"""The cached Debian root filesystem that every fake node mounts as its overlay lower layer.

Built once per (suite, package list, recipe) with debootstrap and kept under a key, so a warm
cache makes node start-up a matter of milliseconds. Concurrent callers (pytest-xdist workers)
serialise on an flock; the image is built in a temporary directory and renamed into place, so
the final path exists only when the image is complete.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from bringup.lab.network import LabError, mounts, run_cmd, unmount
from bringup.local.files import flocked

SUITE = "bookworm"
BASE_PACKAGES: tuple[str, ...] = (
    "openssh-server",
    "python3",  # Ansible needs /usr/bin/python3
    "python3-apt",  # Ansible's apt module runs on the node with it
    "iproute2",
    "procps",
    # Multi-node burn-in: OpenMPI + mpi4py for the collective stand-in.
    "openmpi-bin",
    "python3-mpi4py",
    "python3-numpy",
)
# Installed with apt inside the finished tree, with policy-rc.d in place, so their maintainer
# scripts (users, keys) run in a complete system and no daemon starts at build time.
APT_PACKAGES: tuple[str, ...] = ("slurmd", "munge")
# Bump when the post-debootstrap steps below change, so old caches are not reused.
RECIPE_VERSION = "1"
DEFAULT_CACHE_DIR = Path("/var/cache/bringup-lab")

# Only ed25519 host keys (per node, written by nodes.start_node): fast to make, one to trust.
SSHD_CONFIG = """\
# bringup lab node
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
PrintMotd no
MaxStartups 100:30:200
MaxSessions 64
SetEnv PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
"""
# Nodes have no init system: like container images, let packages install without starting daemons.
POLICY_RC_D = "#!/bin/sh\nexit 101\n"
# Keep later installs inside nodes lean too.
DPKG_NODOC = """\
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
"""


def cache_key(suite: str = SUITE, packages: tuple[str, ...] = BASE_PACKAGES + APT_PACKAGES) -> str:
    text = "\n".join([suite, RECIPE_VERSION, *sorted(packages)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --- the mirror comes from the host's apt configuration ---------------------------------------


def _deb822_stanzas(text: str) -> list[dict[str, str]]:
    stanzas, current = [], {}
    key = None
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        if not line.strip():
            if current:
                stanzas.append(current)
            current, key = {}, None
        elif line[0].isspace() and key:
            current[key] += " " + line.strip()
        elif ":" in line:
            key, value = line.split(":", 1)
            key = key.strip().lower()
            current[key] = value.strip()
    if current:
        stanzas.append(current)
    return stanzas


def _one_line_entries(text: str) -> list[tuple[str, str, str]]:
    """(type, uri, suite) from sources.list one-line format, options in [...] dropped."""
    entries = []
    for line in text.splitlines():
        line = re.sub(r"\[[^\]]*\]", " ", line.split("#", 1)[0]).split()  # type: ignore[assignment]
        if len(line) >= 3:
            entries.append((line[0], line[1], line[2]))
    return entries


def find_mirror(suite: str = SUITE, apt_dir: Path = Path("/etc/apt")) -> str:
    """The first Debian archive URI the host's apt uses for ``suite`` (e.g. .../debian)."""
    candidates: list[str] = []
    for path in sorted((apt_dir / "sources.list.d").glob("*.sources")):
        for st in _deb822_stanzas(path.read_text()):
            if st.get("enabled", "yes").lower() == "no" or "deb" not in st.get("types", "").split():
                continue
            if suite in st.get("suites", "").split():
                candidates += st.get("uris", "").split()
    for path in [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*.list"))]:
        if path.is_file():
            candidates += [
                uri for typ, uri, s in _one_line_entries(path.read_text()) if typ == "deb" and s == suite
            ]
    for uri in candidates:
        if uri.startswith(("http://", "https://", "file:")):
            return uri.rstrip("/")
    raise LabError(
        f"no apt source for suite {suite!r} in {apt_dir}/sources.list(.d): cannot tell debootstrap "
        "which mirror to use"
    )


def _apt_proxy_env() -> dict[str, str]:
    """Honour an apt proxy (Acquire::http::Proxy) the host may need to reach its mirror."""
    env = dict(os.environ)
    if shutil.which("apt-config"):
        out = subprocess.run(
            ["apt-config", "shell", "P", "Acquire::http::Proxy"], capture_output=True, text=True
        ).stdout
        m = re.match(r"P='([^']+)'", out.strip())
        if m:
            env["http_proxy"] = m.group(1)
    return env


# --- building -----------------------------------------------------------------------------------


def _remove_tree(path: Path) -> None:
    """rm -rf that first unmounts anything a crashed debootstrap left mounted inside."""
    prefix = str(path) + "/"
    for _, target, _ in sorted(mounts(), key=lambda m: m[1].count("/"), reverse=True):
        if target.startswith(prefix):
            unmount(target)
    if path.exists():
        run_cmd(["rm", "-rf", "--one-file-system", str(path)], timeout=300)


def _finish_rootfs(root: Path) -> None:
    """Make the debootstrapped tree a lean, keyless node template."""
    for key in glob.glob(str(root / "etc/ssh/ssh_host_*")):
        os.unlink(key)  # every node gets its own key
    (root / "etc/ssh/sshd_config.d").mkdir(exist_ok=True)
    (root / "etc/ssh/sshd_config.d/bringup-lab.conf").write_text(SSHD_CONFIG)
    policy = root / "usr/sbin/policy-rc.d"
    policy.write_text(POLICY_RC_D)
    policy.chmod(0o755)
    (root / "etc/dpkg/dpkg.cfg.d").mkdir(exist_ok=True)
    (root / "etc/dpkg/dpkg.cfg.d/bringup-lab-nodoc").write_text(DPKG_NODOC)
    # No apt sources: nodes must not reach the Internet; the lab adds its own local repository.
    (root / "etc/apt/sources.list").write_text("")
    for pattern in (
        "var/cache/apt/archives/*.deb",
        "var/cache/apt/*.bin",
        "var/lib/apt/lists/*_*",
        "var/log/*.log",
        "var/log/apt/*",
        "usr/share/doc/*/*",
        "usr/share/man/*",
        "usr/share/info/*",
        "usr/share/locale/*",
        "etc/hostname",
        "etc/resolv.conf",
    ):
        for p in glob.glob(str(root / pattern)):
            # Some doc dirs are symlinks to others, so an entry may already be gone.
            with contextlib.suppress(FileNotFoundError):
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p)
                elif not p.endswith("/copyright"):
                    os.unlink(p)
    (root / "root/.ssh").mkdir(mode=0o700, exist_ok=True)
    (root / "usr/local/bin").mkdir(parents=True, exist_ok=True)
    (root / "etc/bringup-lab-base").write_text(
        f"suite={SUITE}\nrecipe={RECIPE_VERSION}\npackages={' '.join(BASE_PACKAGES + APT_PACKAGES)}\n"
    )


def _build(target: Path) -> None:
    mirror = find_mirror(SUITE)
    run_cmd(
        [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(BASE_PACKAGES)}",
            "--components=main",
            SUITE,
            str(target),
            mirror,
        ],
        timeout=1800,
        env=_apt_proxy_env(),
    )
    _apt_install(target, mirror, APT_PACKAGES)
    _finish_rootfs(target)


def _apt_install(root: Path, mirror: str, packages: tuple[str, ...]) -> None:
    """apt-get install inside the tree, daemons kept from starting, sources removed afterwards."""
    if not packages:
        return
    policy = root / "usr/sbin/policy-rc.d"
    policy.write_text(POLICY_RC_D)
    policy.chmod(0o755)
    (root / "etc/apt/sources.list").write_text(f"deb {mirror} {SUITE} main\n")
    if Path("/etc/resolv.conf").exists():
        shutil.copy2("/etc/resolv.conf", root / "etc/resolv.conf")
    env = {**_apt_proxy_env(), "DEBIAN_FRONTEND": "noninteractive"}
    run_cmd(["mount", "-t", "proc", "proc", str(root / "proc")])
    try:
        apt = ["chroot", str(root), "apt-get", "-qq", "-o", "Dpkg::Use-Pty=0"]
        run_cmd([*apt, "update"], timeout=600, env=env)
        run_cmd([*apt, "install", "-y", "--no-install-recommends", *packages], timeout=1200, env=env)
        run_cmd([*apt, "clean"], env=env)
    finally:
        unmount(str(root / "proc"))


def ensure_base_image(cache_dir: Path = DEFAULT_CACHE_DIR) -> Path:
    """Return the cached base rootfs, building it first if needed (blocks while another builds)."""
    key = cache_key()
    final = cache_dir / f"base-{key}"
    if final.is_dir():  # rename is atomic: existing means complete
        return final
    cache_dir.mkdir(parents=True, exist_ok=True)
    with flocked(cache_dir / f"base-{key}.lock"):
        if final.is_dir():  # another worker built it while we waited
            return final
        for stale in cache_dir.glob(f".build-{key}-*"):
            _remove_tree(stale)  # a crashed build; we hold the lock, so nobody else owns it
        tmp = Path(tempfile.mkdtemp(prefix=f".build-{key}-", dir=cache_dir))
        try:
            tmp.chmod(0o755)  # the tree's "/": package scripts run as other users must enter it
            _build(tmp)
            os.rename(tmp, final)
        except BaseException:
            with contextlib.suppress(Exception):
                _remove_tree(tmp)
            raise
    return final
