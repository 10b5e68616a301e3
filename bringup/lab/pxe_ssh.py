"""The PXE lab's agent ramdisk with an SSH server, so provisioned VMs can be burned in pinned.

The product's agent ramdisk installs nothing and runs no sshd: the host keys its phone-home
reports (agent.sh ``host_keys``, from ``/etc/ssh/ssh_host_*_key.pub``) are empty, and nothing
could SSH to a PXE-booted VM. This variant adds Debian's dropbear (``dropbear-bin`` and its two
libraries, downloaded and unpacked like the kernel: nothing is installed on the host; the rest
of what ``ldd`` names is copied from this Debian host) and a boot hook that, before the agent
reports, makes a fresh ed25519 host key, writes its public line where the agent reads host keys
and starts dropbear with root's login key authorized. So the real agent reports a real key,
provisioning records it, and burn-in must find exactly that key on the VM (RejectPolicy).

``lab-rekey`` (run on the VM over SSH) gives it another host key and restarts dropbear: a node
whose key changed without a re-provisioning. Built once per input (the product's cache key
covers every extra file).
"""

from __future__ import annotations

import re
import stat
import subprocess
from pathlib import Path

from bringup.lab.network import LabError
from bringup.local.files import flocked
from bringup.provision.pxe.ramdisk import Ramdisk, build_ramdisk, ensure_package

PACKAGES = ("dropbear-bin", "libtomcrypt1", "libtommath1")  # the rest (libc, zlib, gmp): the host's
PROGRAMS = {"usr/sbin/dropbear": "sbin/dropbear", "usr/bin/dropbearkey": "bin/dropbearkey"}
LIB_DIR = "lib/x86_64-linux-gnu"
KEY_NAME = "id_ed25519"

HOOK = """#!/bin/sh
# The lab's SSH server: a host key made at boot (another with "rekey"), its public line where the
# agent reads host keys (so the phone-home reports it), then dropbear, key logins only.
KEY=/etc/dropbear/dropbear_ed25519_host_key
PIDFILE=/run/dropbear.pid
if [ "$1" = rekey ] && [ -r "$PIDFILE" ]; then
    pid=$(cat "$PIDFILE")
    kill "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    rm -f "$KEY"
fi
[ -r "$KEY" ] || dropbearkey -t ed25519 -f "$KEY" >/dev/null 2>&1
dropbearkey -y -f "$KEY" | grep '^ssh-ed25519 ' | cut -d' ' -f1-2 >/etc/ssh/ssh_host_ed25519_key.pub
dropbear -r "$KEY" -s -p 22 -P "$PIDFILE"
echo "bringup-lab: dropbear on port 22 with host key $(cat /etc/ssh/ssh_host_ed25519_key.pub)"
"""
REKEY = "#!/bin/sh\nexec /etc/bringup/boot.d/50-dropbear rekey\n"
# The product runs its scripts with `bash -s`; busybox ash runs them here.
BASH = '#!/bin/sh\nexec /bin/sh "$@"\n'


def parse_ldd(text: str) -> list[tuple[str, str]]:
    """``ldd`` output -> [(the name the program asks for, the file that satisfies it)] (pure).

    The vDSO (no file) is left out; a library ldd could not find is an error naming it."""
    found: list[tuple[str, str]] = []
    for line in text.splitlines():
        line = line.strip()
        if "not found" in line:
            raise LabError(f"ldd: {line}")
        m = re.match(r"(\S+) => (/\S+) \(0x[0-9a-f]+\)$", line) or re.match(
            r"((/\S+)) \(0x[0-9a-f]+\)$", line
        )
        if m:
            found.append((m.group(1), m.group(2)))
    return found


def login_key(cache: Path) -> tuple[Path, str]:
    """The key root logs in to PXE lab VMs with (made once, kept in the lab cache so the ramdisk
    that authorizes it is built once): its private file and public line."""
    from bringup.lab.nodes import ed25519_keypair

    directory = cache / "pxe-ssh"
    private = directory / KEY_NAME
    with flocked(cache / "pxe-ssh.lock"):
        if not private.exists():
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            secret, public = ed25519_keypair()
            tmp = directory / f"{KEY_NAME}.tmp"
            tmp.write_bytes(secret)
            tmp.chmod(0o600)
            (directory / f"{KEY_NAME}.pub").write_bytes(public + b" bringup-pxe-lab\n")
            tmp.rename(private)
    public_line = (directory / f"{KEY_NAME}.pub").read_text().strip()
    return private, public_line


def _libraries(trees: list[Path], programs: list[Path]) -> dict[str, bytes]:
    """{path in the ramdisk: content} of every library the programs load, and the loader."""
    env = {"LD_LIBRARY_PATH": ":".join(str(t / "usr" / LIB_DIR) for t in trees), "PATH": "/usr/bin:/bin"}
    libs: dict[str, bytes] = {}
    for program in programs:
        out = subprocess.run(
            ["ldd", str(program)], capture_output=True, text=True, env=env, timeout=60, check=False
        )
        if out.returncode != 0:
            raise LabError(f"ldd {program} failed: {(out.stderr or out.stdout).strip()}")
        for name, path in parse_ldd(out.stdout):
            where = name.lstrip("/") if name.startswith("/") else f"{LIB_DIR}/{name}"
            libs[where] = Path(path).read_bytes()  # a symlink's target, under the name asked for
    return libs


def ssh_entries(cache: Path, authorized_key: str) -> list[tuple[str, int, bytes]]:
    """The initrd entries the SSH server adds (directories before their files)."""
    trees = [ensure_package(cache / "packages", p) for p in PACKAGES]
    sources = {}
    for src, dest in PROGRAMS.items():
        found = [t / src for t in trees if (t / src).exists()]
        if not found:
            raise LabError(f"{src} is not in {', '.join(PACKAGES)}")
        sources[dest] = found[0]
    libs = _libraries(trees, list(sources.values()))
    d, f, x = stat.S_IFDIR | 0o755, stat.S_IFREG | 0o644, stat.S_IFREG | 0o755
    dirs = ["etc/bringup/boot.d", "etc/dropbear", "etc/ssh", "lib64", LIB_DIR]
    entries: list[tuple[str, int, bytes]] = [(p, d, b"") for p in dirs]
    entries += [("root", stat.S_IFDIR | 0o700, b""), ("root/.ssh", stat.S_IFDIR | 0o700, b"")]
    entries.append(
        ("root/.ssh/authorized_keys", stat.S_IFREG | 0o600, authorized_key.strip().encode() + b"\n")
    )
    entries += [(dest, x, src.read_bytes()) for dest, src in sorted(sources.items())]
    entries += [(path, x, data) for path, data in sorted(libs.items())]
    entries += [
        ("etc/passwd", f, b"root:x:0:0:root:/root:/bin/sh\n"),
        ("etc/shadow", stat.S_IFREG | 0o600, b"root:*:19000:0:99999:7:::\n"),
        ("etc/group", f, b"root:x:0:\n"),
        ("etc/shells", f, b"/bin/sh\n"),
        ("etc/nsswitch.conf", f, b"passwd: files\ngroup: files\nshadow: files\n"),
        ("bin/bash", x, BASH.encode()),
        ("bin/lab-rekey", x, REKEY.encode()),
        ("etc/bringup/boot.d/50-dropbear", x, HOOK.encode()),
    ]
    return entries


def build_ssh_ramdisk(cache: Path, authorized_key: str) -> Ramdisk:
    """The agent ramdisk plus the SSH server (cached by the hash of all it holds)."""
    return build_ramdisk(cache, extra=ssh_entries(cache, authorized_key))
