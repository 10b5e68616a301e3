"""run_script keeps every byte a node prints, against a real SSH server (paramiko's, on 127.0.0.1).

sshd may send a command's exit status before the last of its output (it does under load: the
output-bound lab test lost the last ~50 kB of 100 MB in CI), so the client must read to the end
of the stream, not stop at the exit status.
"""

from __future__ import annotations

import threading
import time

from bringup.ssh.fanout import SshTarget, run_script
from tests.unit.bringup.ssh import test_fanout_hostkeys as base

client_key = base.client_key  # the fixture: a client key file


class _StatusFirst(base._Server):
    """Answers ``bash -s`` with a line, then the exit status, then more output, then EOF."""

    def check_channel_exec_request(self, channel, command):  # noqa: ANN001 - paramiko's signature
        def answer() -> None:
            while channel.recv(4096):
                pass
            channel.sendall(b"first\n")
            channel.sendall_stderr(b"warn 1\n")
            channel.send_exit_status(3)
            time.sleep(0.5)  # the exit status is surely in before the rest
            channel.sendall(b"x" * 200_000 + b"\nlast\n")
            channel.sendall_stderr(b"warn 2\n")
            channel.shutdown_write()
            channel.close()

        threading.Thread(target=answer, daemon=True).start()
        return True


def test_output_sent_after_the_exit_status_is_kept(client_key):
    with base.ssh_server(_StatusFirst) as served:
        target = SshTarget("n1", "127.0.0.1", port=served["port"], key_file=client_key, host_key_policy="off")
        res = run_script(target, "true\n", 20)
    assert (res.rc, res.error) == (3, "")
    assert res.stdout == b"first\n" + b"x" * 200_000 + b"\nlast\n"
    assert res.stderr == b"warn 1\nwarn 2\n"


def test_a_channel_that_never_ends_after_its_status_still_ends_at_the_time_limit(client_key):
    class _NeverEnds(base._Server):
        def check_channel_exec_request(self, channel, command):  # noqa: ANN001
            def answer() -> None:
                while channel.recv(4096):
                    pass
                channel.send_exit_status(0)  # ... and never EOF nor close (a process holding it)

            threading.Thread(target=answer, daemon=True).start()
            return True

    with base.ssh_server(_NeverEnds) as served:
        target = SshTarget("n1", "127.0.0.1", port=served["port"], key_file=client_key, host_key_policy="off")
        res = run_script(target, "true\n", 3)
    assert res.rc == 0
    assert res.error == "time limit of 3 s ran out after the command exited (rc 0): its output never ended"
