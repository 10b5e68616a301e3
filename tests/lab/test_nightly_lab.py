"""`burnin nightly` on the virtual rack with its real Slurm (slurmctld on the host, slurmd in every
node), through the real CLI.

Four nodes are burnt in (preflight) and made golden. A node leaves golden the way the health loop
takes it out: drained in Slurm with the reason `burnin health` writes (tests/lab/test_service_lab.py
shows slurmd's own health check doing it), then `burnin sync` fails it; an operator marks it
repaired with `bringup nodes mark-repaired`. Then the nightly, with every stage (the lab's short
durations, as `make demo`):

- a repaired node whose fault is gone is burnt in beside golden partners, comes back golden and
  is resumed in Slurm; the partners are given back too;
- a repaired node that still carries its fault stays drained, its finding the Slurm reason;
- a repaired node an operator drained with their own reason is tested but never resumed;
- two repaired nodes in one night, one still slow in NCCL: each is burnt in beside the golden
  partners, never beside the other (ib pairs, nccl groups); the healthy one comes back golden on
  a soak of its own, the slow one is blamed and stays drained, the partners stay golden;
- a golden node running a real `sbatch` job (--revalidate) is drained and waited for: the job
  completes untouched, then the node is tested;
- two nightlies at once: the second refuses;
- a nightly killed with SIGKILL mid-run, then run again: no node stays drained by the dead run;
- a node whose job outlasts --drain-timeout is skipped with an event and given back, its job
  still running; with --reservation (a real MAINT reservation) nothing is drained, and an
  unknown reservation is refused before any node is touched;
- a nightly stopped with SIGTERM gives its nodes back first (the one under test stays drained);
- a nightly killed after failing a node, holding every node: the next one re-tests its leftover
  beside the golden nodes it held, and the failed node's drain gets its finding;
- `--idle`: each idle golden node is tested by a job in the lowest, preemptible partition; a real
  user job submitted meanwhile preempts node03's at once and starts; node03 stays golden, its
  test recorded as not run; the other nodes' tests ran and were judged; an idle test that fails
  takes its node out of golden, drained with the finding.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from bringup.cli.main import main as bringup_main
from bringup.lab.demo import LAB_SETTINGS
from burnin.cli import main as burnin_main
from tests.lab import conftest
from tests.lab.conftest import golden_lab, node_ssh

pytestmark = pytest.mark.lab  # its tests walk one rack in order: make test keeps a module on one worker

NODES = ["node01", "node02", "node03", "node04"]
HEALTH_REASON = "bringup: gpu_inventory: 7 GPU(s) found, the profile has 8 (nvidia-smi says 7 attached)"
OPERATOR_REASON = "PSU swap, ticket 4711"
SETS = [a for s in LAB_SETTINGS for a in ("--set", s)]
WAIT_S = 120


def slurm(lab, *args: str) -> str:
    return conftest.slurm(lab["state"], *args)


def slurm_nodes(lab) -> dict:
    return conftest.slurm_nodes(lab["state"])


def wait_for(what: str, probe, timeout: float = WAIT_S):
    return conftest.wait_for(what, probe, timeout)


def sbatch_sleep(lab, node: str, seconds: int) -> str:
    """A real user job on ``node`` that sleeps ``seconds``; its job id."""
    argv = ["sbatch", "--parsable", "-N1", "-w", node, "--chdir=/tmp", "-o", "/dev/null"]
    return slurm(lab, *argv, "--wrap", f"sleep {seconds}").strip()


def switch(lab, node: str, fault: str | None) -> None:
    faults = json.dumps({"faults": [fault] if fault else []})
    rc, _, err = node_ssh(lab["state"], node, f"echo '{faults}' > /etc/bringup-lab/faults.json")
    assert rc == 0, err


@pytest.fixture(scope="module")
def nightly_lab(tmp_path_factory):
    with golden_lab(tmp_path_factory, "nightly", "y", NODES) as lab:
        yield lab


def nightly(lab, *args: str) -> tuple[int, list[dict], str]:
    res = lab["runner"].invoke(
        burnin_main, [*lab["base"], "nightly", "--rack", lab["rack"], *SETS, *args, "--json"]
    )
    try:
        out = json.loads(res.stdout)
    except ValueError:
        out = []
    return res.exit_code, out, res.output


def rows(summary: list[dict]) -> dict[str, dict]:
    (night,) = summary
    return {r["node"]: r for r in night["nodes"]}


def health_drain_and_repair(lab, node: str) -> None:
    """Out of golden as the health loop takes a node out, then marked repaired by an operator."""
    slurm(lab, "scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={HEALTH_REASON}")
    res = lab["runner"].invoke(
        burnin_main, [*lab["base"], "sync", "--rack", lab["rack"], "--no-health", "--json"]
    )
    assert res.exit_code == 0, res.output
    assert node in json.loads(res.stdout)["failed"]
    res = lab["runner"].invoke(
        bringup_main, [*lab["base"], "nodes", "mark-repaired", node, "--reason", "GPU reseated"]
    )
    assert res.exit_code == 0, res.output
    assert lab["store"].get_node(node).state == "repair"


def no_drain_left(lab) -> None:
    assert {n: s.label for n, s in slurm_nodes(lab).items() if s.drain} == {}


def test_a_repaired_node_is_burnt_in_beside_golden_partners_comes_back_golden_and_resumed(nightly_lab):
    lab, store = nightly_lab, nightly_lab["store"]
    switch(lab, "node02", "gpu-missing")
    health_drain_and_repair(lab, "node02")
    switch(lab, "node02", None)  # the repair
    started = time.monotonic()
    code, summary, output = nightly(
        lab,
        "--report-dir",
        str(lab["root"] / "reports"),
        "--notify",
        f"cat > {lab['root'] / 'notified.json'}",
    )
    print(f"\nnightly of one node beside two partners, every stage: {time.monotonic() - started:.1f} s")
    print("\n".join(summary[0]["lines"]) if summary else output)
    assert code == 0, output
    by = rows(summary)
    # PASS, or WARN when the kernel log still holds lines of the fault
    assert by["node02"]["role"] == "tested" and by["node02"]["verdict"] in ("PASS", "WARN"), by
    assert (by["node02"]["state_before"], by["node02"]["state_after"]) == ("repair", "golden")
    assert by["node02"]["slurm"] == "resume"
    partners = sorted(n for n, r in by.items() if r["role"] == "partner")
    assert len(partners) == 2 and all(by[p]["slurm"] == "resume" for p in partners)
    run_id = summary[0]["run"]
    # burnt in: every stage ran on node02 in this run, the group stages beside its partners
    stages = {r.stage for r in store.latest_results("node02") if r.run_id == run_id}
    assert stages == {"preflight", "gpu", "pcie", "ib", "nccl"}
    for p in partners:
        assert {r.stage for r in store.latest_results(p) if r.run_id == run_id} == {"ib", "nccl"}
        assert store.get_node(p).state == "golden"
    assert store.get_node("node02").state == "golden"
    no_drain_left(lab)
    sent = json.loads((lab["root"] / "notified.json").read_text())
    assert sent["run"] == run_id and any(
        line.startswith("node02: tested; repair -> golden; ") for line in sent["lines"]
    )
    assert sorted(Path(p).suffix for p in summary[0]["reports"]) == [".html", ".xml"]
    assert store.get_run(run_id).status == "done"


def test_a_repaired_node_that_still_carries_its_fault_stays_drained_with_its_finding(nightly_lab):
    lab, store = nightly_lab, nightly_lab["store"]
    switch(lab, "node04", "gpu-missing")
    health_drain_and_repair(lab, "node04")  # marked repaired, but the GPU is still gone
    code, summary, output = nightly(lab)
    assert code == 1, output
    by = rows(summary)
    run_id = summary[0]["run"]
    assert (by["node04"]["state_after"], by["node04"]["verdict"]) == ("failed", "FAIL"), by
    assert by["node04"]["finding"].startswith("gpu_inventory: 7 GPU(s) found"), by
    node = slurm_nodes(lab)["node04"]
    assert node.drain and node.reason == f"bringup nightly run {run_id}: {by['node04']['finding']}"[:255]
    assert store.get_node("node04").state == "failed"
    assert {n: s.reason for n, s in slurm_nodes(lab).items() if s.drain} == {
        "node04": node.reason
    }  # partners back


def test_a_node_an_operator_drained_is_tested_but_never_resumed(nightly_lab):
    lab, store = nightly_lab, nightly_lab["store"]
    switch(lab, "node04", None)
    res = lab["runner"].invoke(
        bringup_main, [*lab["base"], "nodes", "mark-repaired", "node04", "--reason", "GPU swapped"]
    )
    assert res.exit_code == 0, res.output
    slurm(lab, "scontrol", "update", "NodeName=node04", "State=DRAIN", f"Reason={OPERATOR_REASON}")
    code, summary, output = nightly(lab)
    assert code == 0, output
    by = rows(summary)
    # PASS, or WARN: the kernel log still holds the lines of its earlier fault
    assert by["node04"]["state_after"] == "golden" and by["node04"]["verdict"] in ("PASS", "WARN"), by
    assert by["node04"]["slurm"].startswith("left alone (drained by an operator (root)"), by
    node = slurm_nodes(lab)["node04"]
    assert node.drain and node.reason == OPERATOR_REASON  # never resumed, never rewritten
    assert store.get_node("node04").state == "golden"
    slurm(lab, "scontrol", "update", "NodeName=node04", "State=RESUME")  # the operator's own call
    no_drain_left(lab)


def job_info(lab, job: str) -> dict[str, str]:
    text = slurm(lab, "scontrol", "show", "job", "-o", job)
    return dict(w.split("=", 1) for w in text.split() if "=" in w)


def test_two_repaired_nodes_are_each_tested_beside_partners_and_only_the_bad_one_blamed(nightly_lab):
    """node02 (repaired for good) and node03 (still slow in NCCL) in one night, beside
    the golden node01 and node04. Neither meets the other: the ib stage pairs their ports with the
    partners' only, the nccl stage soaks each in its own group beside a partner. node02 passes on
    its own soak, not from a group node03 failed; node03's group blames node03, not its partner."""
    lab, store = nightly_lab, nightly_lab["store"]
    no_drain_left(lab)
    health_drain_and_repair(lab, "node02")
    switch(lab, "node03", "nccl-slow")
    health_drain_and_repair(lab, "node03")  # marked repaired, still slow
    started = time.monotonic()
    code, summary, output = nightly(lab)
    print(f"\nnightly of two repaired nodes beside two partners: {time.monotonic() - started:.1f} s")
    print("\n".join(summary[0]["lines"]) if summary else output)
    assert code == 1, output
    by, run_id = rows(summary), summary[0]["run"]
    assert {n for n, r in by.items() if r["role"] == "partner"} == {"node01", "node04"}, by
    assert (by["node02"]["state_after"], by["node02"]["slurm"]) == ("golden", "resume"), by
    assert (by["node03"]["state_after"], by["node03"]["verdict"]) == ("failed", "FAIL"), by
    assert by["node03"]["finding"].startswith("nccl_soak: node03 is a bad node"), by
    assert all(store.get_node(n).state == "golden" for n in ("node01", "node02", "node04"))

    def result(node: str, check: str):
        return next(r for r in store.latest_results(node) if r.run_id == run_id and r.check == check)

    for node in ("node02", "node03"):  # every ib session of a tested port was with a partner's
        ports = result(node, "ib_bandwidth").metrics["ports"]
        met = {r["partner"] for p in ports.values() for r in p["rounds"]}
        assert met == {"node01", "node04"}, (node, met)
    soak = result("node02", "nccl_soak")
    assert soak.verdict in ("PASS", "WARN") and "group_soak" not in soak.metrics, soak.metrics
    assert "node03" not in soak.metrics["hosts"] and len(soak.metrics["hosts"]) == 2, soak.metrics
    for partner in ("node01", "node04"):
        assert result(partner, "nccl_soak").verdict in ("PASS", "WARN")
    drained = {n: s.reason for n, s in slurm_nodes(lab).items() if s.drain}
    assert list(drained) == ["node03"] and drained["node03"].startswith(
        f"bringup nightly run {run_id}: nccl_soak"
    )
    switch(lab, "node03", None)  # repaired for real, back through a night
    res = lab["runner"].invoke(
        bringup_main, [*lab["base"], "nodes", "mark-repaired", "node03", "--reason", "NIC reseated"]
    )
    assert res.exit_code == 0, res.output
    code, summary, output = nightly(lab, "--stages", "preflight")
    assert code == 0 and rows(summary)["node03"]["state_after"] == "golden", output
    no_drain_left(lab)


def test_a_golden_node_running_a_job_is_drained_and_waited_for_then_tested(nightly_lab):
    lab, store = nightly_lab, nightly_lab["store"]
    job = sbatch_sleep(lab, "node03", 20)
    wait_for("the job running on node03", lambda: job_info(lab, job)["JobState"] == "RUNNING", 60)
    code, summary, output = nightly(lab, "--revalidate", "100", "--drain-timeout", "5m")
    assert code == 0, output
    by = rows(summary)
    assert set(by) == set(NODES) and all(
        r["role"] == "tested" and r["state_after"] == "golden" for r in by.values()
    ), by
    info = job_info(lab, job)
    assert (info["JobState"], info["ExitCode"]) == ("COMPLETED", "0:0"), info  # untouched
    ended = datetime.fromisoformat(info["EndTime"]).astimezone(timezone.utc)  # slurmctld's local time
    first = min(r.time for r in store.latest_results("node03") if r.run_id == summary[0]["run"])
    assert first.replace(tzinfo=timezone.utc) >= ended, (first, ended)
    drained = next(
        e for e in store.history("node03") if e.kind == "nightly" and e.run_id == summary[0]["run"]
    )
    assert drained.time.replace(tzinfo=timezone.utc) < ended  # drained while the job ran
    no_drain_left(lab)


def start_nightly(lab, *args: str) -> subprocess.Popen:
    burnin = Path(sys.executable).parent / "burnin"
    return subprocess.Popen(
        [str(burnin), *lab["base"], "nightly", "--rack", lab["rack"], *SETS, *args, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def mid_test(lab, node: str):
    """The running night has drained NODE with its reason and is burning it in."""
    s = slurm_nodes(lab)[node]
    return s.reason.startswith("bringup nightly run ") and lab["store"].get_node(node).state == "burnin" and s


def test_two_nightlies_at_once_the_second_refuses(nightly_lab):
    lab = nightly_lab
    health_drain_and_repair(lab, "node01")
    first = start_nightly(lab)
    try:
        wait_for("the first nightly burning node01 in", lambda: mid_test(lab, "node01"))
        code, _, output = nightly(lab)
        assert code == 2 and f"another nightly of rack {lab['rack']} is running" in output, output
    finally:
        out, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    assert rows(json.loads(out))["node01"]["state_after"] == "golden"
    no_drain_left(lab)


def test_a_nightly_killed_mid_run_leaves_no_node_drained_by_it_after_the_next(nightly_lab):
    lab, store = nightly_lab, nightly_lab["store"]
    health_drain_and_repair(lab, "node03")
    first = start_nightly(lab)
    try:
        wait_for("the nightly burning node03 in", lambda: mid_test(lab, "node03"))
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=60)
    dead = {n: s.reason for n, s in slurm_nodes(lab).items() if s.drain}
    assert "node03" in dead and all(r.startswith("bringup nightly run ") for r in dead.values()), dead
    dead_run = int(dead["node03"].split()[3])
    code, summary, output = nightly(lab)
    assert code == 0, output
    by = rows(summary)
    assert by["node03"]["role"] == "tested" and by["node03"]["state_after"] == "golden", by
    assert store.get_run(dead_run).status == "abandoned"
    no_drain_left(lab)


def squeue(lab) -> list[dict[str, str]]:
    text = slurm(lab, "squeue", "-h", "-o", "%i|%T|%N|%j|%P")
    keys = ("job", "state", "node", "name", "partition")
    return [dict(zip(keys, line.split("|"), strict=True)) for line in text.splitlines() if line]


def test_idle_tests_are_preempted_by_a_user_job_and_count_as_not_run(nightly_lab):
    lab, store = nightly_lab, nightly_lab["store"]
    no_drain_left(lab)
    night = start_nightly(lab, "--idle", "--stages", "preflight,gpu", "--set", "diag.stress_minutes=0.75")
    try:
        idle_job = wait_for(
            "node03's idle test running",
            lambda: next(
                (
                    j
                    for j in squeue(lab)
                    if j["node"] == "node03"
                    and j["name"].startswith("bringup-idle-run")
                    and j["state"] == "RUNNING"
                ),
                None,
            ),
        )
        assert idle_job["partition"] == lab["state"].inventory_vars["slurm_idle_partition"]
        user = sbatch_sleep(lab, "node03", 2)
        wait_for(
            "the user's job started", lambda: job_info(lab, user)["JobState"] in ("RUNNING", "COMPLETED"), 60
        )
        assert job_info(lab, idle_job["job"])["JobState"] == "PREEMPTED"
    finally:
        out, err = night.communicate(timeout=600)
    assert night.returncode == 0, err + out
    (summary,) = json.loads(out)
    by = {r["node"]: r for r in summary["nodes"]}
    assert set(by) == set(NODES) and all(r["role"] == "idle" for r in by.values()), by
    assert (by["node03"]["verdict"], by["node03"]["state_after"]) == ("not run", "golden"), by
    assert by["node03"]["finding"].startswith(f"job {idle_job['job']} preempted"), by
    for node in ("node01", "node02", "node04"):
        assert by[node]["verdict"] in ("PASS", "WARN") and by[node]["state_after"] == "golden", by
        assert {r.stage for r in store.latest_results(node) if r.run_id == summary["run"]} == {
            "preflight",
            "gpu",
        }
    assert store.get_node("node03").state == "golden"
    assert not [r for r in store.latest_results("node03") if r.run_id == summary["run"]]  # never a pass
    (event,) = [e for e in store.history("node03") if e.run_id == summary["run"] and e.kind == "nightly"]
    assert event.details["status"] == "not run" and event.details["job_state"] == "PREEMPTED"
    assert job_info(lab, user)["ExitCode"] == "0:0"
    no_drain_left(lab)


def test_a_node_still_busy_at_the_drain_timeout_is_skipped_with_an_event_and_given_back(nightly_lab):
    lab, store = nightly_lab, nightly_lab["store"]
    no_drain_left(lab)
    job = sbatch_sleep(lab, "node01", 300)
    try:
        wait_for("the job running on node01", lambda: job_info(lab, job)["JobState"] == "RUNNING", 60)
        code, summary, output = nightly(
            lab, "--revalidate", "100", "--drain-timeout", "5s", "--stages", "preflight"
        )
        assert code == 0, output
        by, run_id = rows(summary), summary[0]["run"]
        assert (by["node01"]["role"], by["node01"]["state_after"]) == ("skipped", "golden"), by
        assert by["node01"]["finding"] == "still running jobs after 5 s: skipped tonight", by
        assert by["node01"]["slurm"] == "resume", by  # its drain was the night's: given back
        assert all(by[n]["role"] == "tested" and by[n]["state_after"] == "golden" for n in NODES[1:]), by
        assert not [r for r in store.latest_results("node01") if r.run_id == run_id]  # never tested
        (event,) = [e for e in store.history("node01") if e.run_id == run_id and "skipped" in e.reason]
        assert event.reason == f"nightly run {run_id}: still running jobs after 5 s: skipped tonight"
        assert job_info(lab, job)["JobState"] == "RUNNING"  # the user's job untouched
        no_drain_left(lab)
    finally:
        slurm(lab, "scancel", job)


def test_inside_a_maintenance_reservation_nothing_is_drained(nightly_lab):
    lab, store = nightly_lab, nightly_lab["store"]
    no_drain_left(lab)
    name = f"maint-{lab['rack']}"
    slurm(
        lab, "scontrol", "create", "reservation", f"ReservationName={name}", "StartTime=now",
        "Duration=60", "Nodes=ALL", "Users=root", "Flags=MAINT",
    )  # fmt: skip
    try:
        code, summary, output = nightly(
            lab, "--reservation", name, "--revalidate", "25", "--stages", "preflight"
        )
        assert code == 0, output
        by, run_id = rows(summary), summary[0]["run"]
        (tested,) = [n for n, r in by.items() if r["role"] == "tested"]
        assert by[tested]["state_after"] == "golden" and by[tested]["slurm"] == "-", by
        assert {r.stage for r in store.latest_results(tested) if r.run_id == run_id} == {"preflight"}
        assert not [e for e in store.history(tested) if e.run_id == run_id and "drained" in e.reason]
        no_drain_left(lab)
    finally:
        slurm(lab, "scontrol", "delete", f"ReservationName={name}")


def test_a_nightly_stopped_with_sigterm_gives_its_nodes_back_first(nightly_lab):
    """systemd's TimeoutStartSec stops a night with SIGTERM: the run ends `interrupted`, the
    partners are resumed, the node it was testing stays drained as not proven (never resumed
    untested), and the next night re-tests it."""
    lab, store = nightly_lab, nightly_lab["store"]
    no_drain_left(lab)
    health_drain_and_repair(lab, "node02")
    night = start_nightly(lab)
    try:
        wait_for("the nightly burning node02 in", lambda: mid_test(lab, "node02"))
    finally:
        night.send_signal(signal.SIGTERM)
        night.communicate(timeout=300)
    drained = {n: s.reason for n, s in slurm_nodes(lab).items() if s.drain}
    assert list(drained) == ["node02"], drained  # the partners were given back
    run_id = int(drained["node02"].split()[3].rstrip(":"))
    assert drained["node02"].startswith(f"bringup nightly run {run_id}: not proven"), drained
    assert store.get_run(run_id).status == "interrupted"
    assert store.get_node("node02").state != "golden"
    code, summary, output = nightly(lab)
    assert code == 0, output
    assert rows(summary)["node02"]["state_after"] == "golden"
    no_drain_left(lab)


def test_an_idle_test_that_fails_takes_the_node_out_drained_with_its_finding(nightly_lab):
    lab, store = nightly_lab, nightly_lab["store"]
    no_drain_left(lab)
    switch(lab, "node04", "gpu-missing")
    code, summary, output = nightly(lab, "--idle", "--stages", "preflight")
    assert code == 1, output
    by, run_id = rows(summary), summary[0]["run"]
    assert (by["node04"]["verdict"], by["node04"]["state_after"]) == ("FAIL", "failed"), by
    assert by["node04"]["finding"].startswith("gpu_inventory: 7 GPU(s) found, the profile has 8"), by
    assert store.get_node("node04").state == "failed"
    drained = {n: s.reason for n, s in slurm_nodes(lab).items() if s.drain}
    assert drained == {"node04": f"bringup nightly run {run_id}: {by['node04']['finding']}"[:255]}, drained
    assert all(by[n]["state_after"] == "golden" for n in NODES[:3]), by
    # back, as an operator would bring it: repaired, then a night
    switch(lab, "node04", None)
    res = lab["runner"].invoke(
        bringup_main, [*lab["base"], "nodes", "mark-repaired", "node04", "--reason", "GPU reseated"]
    )
    assert res.exit_code == 0, res.output
    code, summary, output = nightly(lab, "--stages", "preflight")
    assert code == 0 and rows(summary)["node04"]["state_after"] == "golden", output
    no_drain_left(lab)


def failed_under_a_live_night(lab, node: str):
    """The running night has failed NODE (in the store) and still holds its bare drain."""
    s = slurm_nodes(lab)[node]
    bare = s.reason.startswith("bringup nightly run ") and ":" not in s.reason
    return bare and lab["store"].get_node(node).state == "failed" and s


def test_a_node_failed_by_a_killed_nightly_is_kept_drained_with_its_finding(nightly_lab):
    """Killed after it failed node04 but before giving it back: the next night keeps node04
    drained and gives it the finding as its reason, as the dead night would have."""
    lab, store = nightly_lab, nightly_lab["store"]
    no_drain_left(lab)
    switch(lab, "node04", "gpu-missing")
    health_drain_and_repair(lab, "node04")  # marked repaired, still faulty
    health_drain_and_repair(lab, "node02")
    first = start_nightly(lab)
    try:  # node04 fails the single-node stages; node02 goes on to ib and nccl beside the partners
        wait_for("node04 failed while the night goes on", lambda: failed_under_a_live_night(lab, "node04"))
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=60)
    dead_run = int(slurm_nodes(lab)["node04"].reason.split()[3])
    code, summary, output = nightly(lab)
    assert code == 0, output
    by = rows(summary)
    assert by["node02"]["state_after"] == "golden", by
    node = slurm_nodes(lab)["node04"]
    assert node.drain and node.reason.startswith(
        f"bringup nightly run {dead_run}: gpu_inventory: 7 GPU(s) found, the profile has 8"
    ), node.reason
    assert store.get_node("node04").state == "failed"
    again = nightly(lab)  # nothing more to do: the reason is not rewritten every night
    assert again[0] == 0 and slurm_nodes(lab)["node04"].reason == node.reason, again[2]
    switch(lab, "node04", None)  # repaired for real, back through a night
    res = lab["runner"].invoke(
        bringup_main, [*lab["base"], "nodes", "mark-repaired", "node04", "--reason", "GPU swapped"]
    )
    assert res.exit_code == 0, res.output
    code, summary, output = nightly(lab, "--stages", "preflight")
    assert code == 0 and rows(summary)["node04"]["state_after"] == "golden", output
    no_drain_left(lab)


def test_an_unknown_reservation_is_refused_before_any_node_is_touched(nightly_lab):
    """--reservation with a name Slurm does not have (a typo) would test nodes jobs still land on."""
    lab, store = nightly_lab, nightly_lab["store"]
    no_drain_left(lab)
    before = {n: {r.id for r in store.latest_results(n)} for n in NODES}
    code, summary, output = nightly(
        lab, "--reservation", "no-such-resv", "--revalidate", "25", "--stages", "preflight"
    )
    assert code == 3 and "no-such-resv" in output, output
    assert summary == [] and {n: {r.id for r in store.latest_results(n)} for n in NODES} == before
    no_drain_left(lab)


def test_a_reservation_that_leaves_out_nodes_the_night_holds_is_refused_before_any_is_touched(nightly_lab):
    """Inside a reservation nothing is drained: nodes the night would test or hold as partners
    outside it could take a user's job mid-test. The night is refused, naming them."""
    lab, store = nightly_lab, nightly_lab["store"]
    no_drain_left(lab)
    name = f"part-{lab['rack']}"
    slurm(
        lab, "scontrol", "create", "reservation", f"ReservationName={name}", "StartTime=now",
        "Duration=60", "Nodes=node01,node02", "Users=root", "Flags=MAINT",
    )  # fmt: skip
    before = {n: {r.id for r in store.latest_results(n)} for n in NODES}
    try:
        code, summary, output = nightly(
            lab, "--reservation", name, "--revalidate", "100", "--stages", "preflight"
        )
        assert code == 3, output
        assert f"reservation {name!r} does not cover node03, node04" in output, output
        assert summary == [] and {n: {r.id for r in store.latest_results(n)} for n in NODES} == before
        assert {n: store.get_node(n).state for n in NODES} == dict.fromkeys(NODES, "golden")
        no_drain_left(lab)
    finally:
        slurm(lab, "scontrol", "delete", f"ReservationName={name}")
