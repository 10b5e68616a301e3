"""One run of playbooks/site.yml through ansible-runner's Python API.

The private data dir (inventory, artifacts) is a temporary directory: what matters is kept
elsewhere, Ansible's full stdout as the run's evidence in the fleet store and the per-host
outcomes on the node records. Events are folded as they arrive (``event_handler``), so a
400-node run holds one small outcome per host in memory, not every event.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bringup.configure.outcome import EventFolder, HostOutcome
from bringup.core.errors import BadInput, UserError

PLAYBOOK = "site.yml"
DEFAULT_BATCH = 32
# One task's limit (Ansible's TASK_TIMEOUT). The slowest task of site.yml is the DOCA-OFED /
# driver install with its DKMS kernel-module builds: minutes on a healthy node and mirror. Half
# an hour means it hangs (a mirror that never answers, an apt/dpkg lock that is never released).
DEFAULT_TASK_TIMEOUT = 1800
# The whole run's limit grows with the number of batches (the play's `serial`): each batch
# gets the time of a slow full install with room to spare.
PER_BATCH_TIMEOUT = 2 * DEFAULT_TASK_TIMEOUT


def default_timeout(hosts: int, batch: int) -> int:
    """The overall time limit of a run over ``hosts`` in batches of ``batch``, in seconds."""
    return PER_BATCH_TIMEOUT * max(1, -(-hosts // max(batch, 1)))


class NotInstalled(UserError, FileNotFoundError):
    """ansible-playbook or the playbooks are not where this run looks for them."""


def default_playbook_dir() -> Path:
    """``$BRINGUP_PLAYBOOKS_DIR``, else the checkout's playbooks/ (next to the bringup package)."""
    env = os.environ.get("BRINGUP_PLAYBOOKS_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "playbooks"


def ansible_path() -> str:
    """PATH for ansible-runner, this Python environment's bin first: ansible-runner starts
    ``ansible-playbook`` by name, and a virtualenv need not be activated."""
    here = Path(sys.executable).parent
    if not (here / "ansible-playbook").is_file() and shutil.which("ansible-playbook") is None:
        raise NotInstalled("ansible-playbook not found (pip install ansible-core)")
    return os.pathsep.join([str(here), os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")])


@dataclass
class PlaybookResult:
    status: str  # ansible-runner's: successful | failed | timeout | canceled
    rc: int
    outcomes: dict[str, HostOutcome]
    stdout: str  # Ansible's whole output, the run's evidence


def run_playbook(
    inventory: dict[str, Any],
    hosts: Sequence[str],
    *,
    playbook_dir: Path | None = None,
    tags: Sequence[str] = (),
    check: bool = False,
    batch: int = DEFAULT_BATCH,
    extravars: dict[str, Any] | None = None,
    on_event: Callable[[HostOutcome], None] | None = None,
    timeout: int | None = None,
    task_timeout: int = DEFAULT_TASK_TIMEOUT,
) -> PlaybookResult:
    """Run the playbook on ``hosts`` of ``inventory``; ``on_event`` sees each touched host.

    ``timeout`` bounds the whole run (default: :func:`default_timeout`), ``task_timeout`` each
    task; a host the overall limit cut short is ``timed-out``, one whose task hit its limit
    ``failed`` in that task.
    """
    import ansible_runner  # imported here: it is slow to import and only this command needs it

    playbook_dir = (playbook_dir or default_playbook_dir()).resolve()
    if not (playbook_dir / PLAYBOOK).is_file():
        raise NotInstalled(f"no {PLAYBOOK} in {playbook_dir} (set BRINGUP_PLAYBOOKS_DIR)")
    if batch < 1:
        raise BadInput("--batch must be at least 1")
    if timeout is None:
        timeout = default_timeout(len(hosts), batch)
    if timeout < 1 or task_timeout < 1:
        raise BadInput("time limits must be at least 1 s")
    folder = EventFolder(hosts)

    def handle(event: dict[str, Any]) -> bool:
        outcome = folder.feed(event)
        if outcome is not None and on_event is not None:
            on_event(outcome)
        return True  # keep the event in the (temporary) artifacts

    with tempfile.TemporaryDirectory(prefix="bringup-configure-") as tmp:
        private = Path(tmp)
        (private / "inventory").mkdir()
        # The inventory may name SSH keys and site URLs: readable by us only.
        inv_path = private / "inventory" / "hosts.json"
        inv_path.write_text(json.dumps(inventory, indent=1))
        inv_path.chmod(0o600)
        cmdline = "--check" if check else None
        env = {
            "PATH": ansible_path(),
            "ANSIBLE_CONFIG": str(playbook_dir / "ansible.cfg"),
            "ANSIBLE_NOCOLOR": "1",
            # Host keys checked: each node's against the store's keys (configure/hostkeys.py).
            "ANSIBLE_HOST_KEY_CHECKING": "True",
            "ANSIBLE_LOCAL_TEMP": str(private / "tmp"),
            # SSH multiplexing sockets of this run only: a master left from an earlier run (up to
            # ControlPersist) must never serve a host that has since been re-imaged or renumbered.
            "ANSIBLE_SSH_CONTROL_PATH_DIR": str(private / "cp"),
            "ANSIBLE_TASK_TIMEOUT": str(task_timeout),
        }
        runner = ansible_runner.run(
            private_data_dir=str(private),
            project_dir=str(playbook_dir),
            playbook=PLAYBOOK,
            inventory=str(inv_path),
            extravars={"bringup_serial": batch, **(extravars or {})},
            tags=",".join(tags) if tags else None,
            cmdline=cmdline,
            forks=min(max(batch, 1), 64),
            envvars=env,
            event_handler=handle,
            quiet=True,
            timeout=timeout,
            settings={"suppress_ansible_output": True},
        )
        stdout = runner.stdout.read() if runner.stdout else ""
    stopped = f"the overall time limit of {timeout} s ran out" if runner.status == "timeout" else None
    return PlaybookResult(runner.status, int(runner.rc or 0), folder.finish(stopped), stdout)
