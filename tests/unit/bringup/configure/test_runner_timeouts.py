"""Configure's time limits, with real ansible-playbook runs on this machine (local connection).

A task that hangs (a package mirror that never answers, a DKMS build stuck on a lock) must not
hold the rack's configure run for ever: Ansible's task timeout fails that host's task, and the
overall limit stops the play, leaving every host it had not finished as ``timed-out``, never
``ok``.
"""

from __future__ import annotations

from pathlib import Path

from bringup.configure.outcome import EventFolder
from bringup.configure.runner import default_timeout, run_playbook

SLEEPER = """\
- hosts: all
  gather_facts: false
  tasks:
    - name: Quick step
      ansible.builtin.command: "true"
    - name: Hang like a dead mirror
      ansible.builtin.command: sleep {seconds}
"""


def _playbooks(tmp_path: Path, seconds: int) -> Path:
    d = tmp_path / "playbooks"
    d.mkdir()
    (d / "site.yml").write_text(SLEEPER.format(seconds=seconds))
    (d / "ansible.cfg").write_text("[defaults]\nretry_files_enabled = false\n")
    return d


def _inventory(names: list[str]) -> dict:
    import sys

    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    return {"all": {"hosts": {n: dict(local) for n in names}}}


def test_a_hung_task_fails_its_host_at_the_task_timeout(tmp_path):
    result = run_playbook(
        # The task limit holds for "Quick step" too: 10 s, which a loaded 2-core machine needs
        # (2 s ran out in the quick step with the load average at 9).
        _inventory(["n1"]),
        ["n1"],
        playbook_dir=_playbooks(tmp_path, 60),
        task_timeout=10,
        timeout=100,
    )
    outcome = result.outcomes["n1"]
    assert outcome.status == "failed"
    assert outcome.task == "Hang like a dead mirror"
    assert "timed out after 10 second" in outcome.message.lower()


def test_the_overall_limit_stops_the_play_and_no_unfinished_host_is_ok(tmp_path):
    result = run_playbook(
        _inventory(["n1", "n2"]),
        ["n1", "n2"],
        playbook_dir=_playbooks(tmp_path, 60),
        task_timeout=100,
        # Long enough for ansible-playbook to start and run "Quick step" on a loaded 2-core
        # machine (4 s ran out during the quick step once, with the lab's tests running beside).
        timeout=15,
    )
    assert result.status == "timeout"
    for name in ("n1", "n2"):
        outcome = result.outcomes[name]
        # Both ran "Quick step" (ok) and were cut in the hang: before, finish() called them ok.
        assert outcome.status == "timed-out", outcome
        assert "overall time limit of 15 s" in outcome.message
        assert "Hang like a dead mirror" in outcome.message


def test_finish_after_a_stop_never_calls_a_pending_host_ok():
    folder = EventFolder(["a", "b"])
    folder.feed({"event": "runner_on_ok", "event_data": {"host": "a", "task": "Quick step", "res": {}}})
    outcomes = folder.finish(stopped="the overall time limit of 9 s ran out")
    assert outcomes["a"].status == "timed-out" and "during site: Quick step" in outcomes["a"].message
    assert outcomes["b"].status == "timed-out" and "before this host was reached" in outcomes["b"].message


def test_the_default_overall_limit_grows_with_the_batches():
    assert default_timeout(hosts=32, batch=32) < default_timeout(hosts=33, batch=32)
    assert default_timeout(hosts=1000, batch=32) == 32 * default_timeout(hosts=1, batch=32)
