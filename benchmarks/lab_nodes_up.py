#!/usr/bin/env python3
"""Wall-clock time of start_nodes(N) and of stopping them, with the base image cached.

Usage (root): .venv/bin/python benchmarks/lab_nodes_up.py [--nodes 20] [--repeat 3]
"Up" ends when every node's sshd accepts TCP connections; a full SSH login to each node is
timed separately (paramiko, sequential). The base build, if needed, is timed but not counted.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import paramiko
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bringup.lab.base_image import ensure_base_image
from bringup.lab.naming import LabNames, new_run_id
from bringup.lab.network import create_network, destroy_network, sweep
from bringup.lab.nodes import start_nodes, stop_nodes


def _key(tmp: Path) -> tuple[Path, str]:
    key = Ed25519PrivateKey.generate()
    path = tmp / "id_ed25519"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        )
    )
    path.chmod(0o600)
    pub = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return path, pub.decode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    t0 = time.monotonic()
    base = ensure_base_image()
    print(f"base image ready in {time.monotonic() - t0:.2f} s: {base}")

    ups, downs, logins = [], [], []
    for i in range(args.repeat):
        names = LabNames(new_run_id())
        with tempfile.TemporaryDirectory(prefix=f"{names.prefix}-bench-") as tmp:
            state = Path(tmp)
            key_file, pub = _key(state)
            net = create_network(names)
            try:
                t0 = time.monotonic()
                nodes = start_nodes(names, net, args.nodes, base, state, pub)
                up = time.monotonic() - t0

                t0 = time.monotonic()
                for node in nodes:
                    client = paramiko.SSHClient()
                    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
                    client.connect(node.ip, username="root", key_filename=str(key_file),
                                   look_for_keys=False, allow_agent=False, timeout=10)  # fmt: skip
                    client.exec_command("true")[1].channel.recv_exit_status()
                    client.close()
                login = time.monotonic() - t0

                t0 = time.monotonic()
                stop_nodes(nodes)
                down = time.monotonic() - t0
            finally:
                sweep(names.prefix, state)
                destroy_network(names)
        ups.append(up)
        downs.append(down)
        logins.append(login)
        print(
            f"run {i + 1}: {args.nodes} nodes up {up:.2f} s, ssh login to all {login:.2f} s, down {down:.2f} s"
        )
    print(
        f"median of {args.repeat}: up {statistics.median(ups):.2f} s, "
        f"ssh login to all {statistics.median(logins):.2f} s, down {statistics.median(downs):.2f} s"
    )


if __name__ == "__main__":
    main()
