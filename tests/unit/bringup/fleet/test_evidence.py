"""Evidence: capped, content-addressed, compressed, read only when asked, pruned."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import event, func, select

from bringup.core.errors import BadInput
from bringup.fleet import evidence
from bringup.fleet.models import CheckResult, EvidenceBlob, utcnow
from bringup.fleet.prune import parse_older_than, prune
from bringup.fleet.store import FleetStore
from tests.paths import SAMPLES

SMI_Q = (SAMPLES / "nvidia_smi_q_8xh100_535_183.txt").read_text()


# ---- pure ---------------------------------------------------------------------------------------


def test_an_output_within_the_cap_is_kept_whole():
    capped = evidence.cap("abc\n", limit=4)
    assert (capped.text, capped.total, capped.dropped) == ("abc\n", 4, 0)


def test_a_long_output_keeps_its_head_and_tail_and_says_how_much_was_cut():
    text = "HEADER\n" + "x" * (3 * evidence.MIB) + "\nVERDICT: FAIL\n"
    capped = evidence.cap(text, limit=evidence.MIB)
    assert capped.text.startswith("HEADER\n") and capped.text.endswith("\nVERDICT: FAIL\n")
    assert capped.total == len(text) and capped.dropped == len(text) - evidence.MIB
    assert "output cut at 1.0 MB: 2.0 MB of 3.0 MB not kept" in capped.text
    assert len(capped.text.encode()) < evidence.MIB + 200


def test_a_cut_through_a_multibyte_character_is_no_error():
    capped = evidence.cap("é" * 1000, limit=101)
    assert capped.dropped > 0 and "output cut" in capped.text


def test_compression_round_trips_and_packs_nvidia_smi_q():
    packed = evidence.compress(SMI_Q)
    assert evidence.decompress(packed) == SMI_Q
    assert len(packed) < len(SMI_Q) / 10
    assert evidence.digest(SMI_Q) == evidence.digest(evidence.decompress(packed))


def test_the_cap_is_configured_in_mib(monkeypatch):
    monkeypatch.setenv(evidence.CAP_ENV, "0.5")
    assert evidence.output_cap() == evidence.MIB // 2
    monkeypatch.setenv(evidence.CAP_ENV, "lots")
    with pytest.raises(BadInput, match="BRINGUP_EVIDENCE_CAP_MB='lots'"):
        evidence.output_cap()


# ---- the store ------------------------------------------------------------------------------------


def _store(url: str, nodes: int = 1, rack: str = "r01") -> FleetStore:
    store = FleetStore(url)
    for i in range(1, nodes + 1):
        store.enroll(f"gpu{i:03d}", rack, "h100-sxm-8x400g")
    return store


def _blobs(store: FleetStore) -> int:
    with store.reading() as s:
        return s.execute(select(func.count()).select_from(EvidenceBlob)).scalar_one()


def test_the_shared_nvidia_smi_q_is_stored_once(store_url):
    """Four checks read one `nvidia-smi -q`; it was stored four times, uncompressed."""
    store = _store(store_url)
    checks = ("gpu_inventory", "gpu_ecc", "gpu_memory", "gpu_versions")
    rows = [{"stage": "preflight", "check": c, "verdict": "PASS", "evidence": SMI_Q} for c in checks]
    saved = store.add_results("gpu001", rows)
    assert _blobs(store) == 1 and len({r.evidence_id for r in saved}) == 1
    store.add_results("gpu001", rows)  # the same output in the next run: still that one blob
    assert _blobs(store) == 1
    with store.reading() as s:
        (size, stored) = s.execute(select(EvidenceBlob.size, func.length(EvidenceBlob.data))).one()
    assert size == len(SMI_Q) and stored < len(SMI_Q) / 10
    latest = store.latest_results("gpu001")
    assert {store.evidence(r) for r in latest} == {SMI_Q}


def test_evidence_over_the_cap_is_stored_cut(store_url, monkeypatch):
    monkeypatch.setenv(evidence.CAP_ENV, "1")
    store = _store(store_url)
    huge = "start\n" + "y" * (5 * evidence.MIB) + "end\n"
    (saved,) = store.add_results(
        "gpu001", [{"stage": "s", "check": "c", "verdict": "PASS", "evidence": huge}]
    )
    text = store.evidence(saved)
    assert (
        text.startswith("start\n") and text.endswith("end\n") and "output cut at 2.0 MB" in text
    )  # both streams of one output fit


def test_no_evidence_is_none():
    store = _store("sqlite://")
    (saved,) = store.add_results("gpu001", [{"stage": "s", "check": "c", "verdict": "PASS"}])
    assert saved.evidence_id is None and store.evidence(saved) is None


class Statements:
    """The SQL statements an engine runs while counting."""

    def __init__(self, store: FleetStore) -> None:
        self.seen: list[str] = []
        event.listen(store.engine, "before_cursor_execute", self._on)

    def _on(self, conn, cursor, statement, *args) -> None:  # noqa: ANN001 - SQLAlchemy's hook
        self.seen.append(statement)

    def queries(self) -> list[str]:
        return [s for s in self.seen if s.lstrip().upper().startswith("SELECT")]


def _history(store: FleetStore, names: list[str], runs: int) -> None:
    for r in range(runs):
        for name in names:
            store.add_results(
                name,
                [
                    {"stage": "preflight", "check": c, "verdict": v, "evidence": f"{name} run {r} {c}"}
                    for c, v in (("gpu_ecc", "PASS"), ("kernel_log", "FAIL" if r % 2 else "PASS"))
                ],
            )


@pytest.mark.parametrize("nodes", [2, 12])
def test_a_racks_latest_results_are_one_query_and_read_no_evidence(store_url, nodes):
    """latest_results read a node's whole history with its evidence, node by node."""
    store = _store(store_url, nodes)
    names = [f"gpu{i:03d}" for i in range(1, nodes + 1)]
    _history(store, names, runs=5)
    counting = Statements(store)
    latest = store.latest_results_of_rack("r01")
    queries = counting.queries()
    assert len(queries) == 2  # the rack's node ids, the newest results: however many nodes
    assert not any("evidence_blobs" in q for q in queries)
    assert set(latest) == set(names)
    for name in names:
        got = {(r.check, r.verdict) for r in latest[name]}
        assert got == {("gpu_ecc", "PASS"), ("kernel_log", "PASS")}  # run 4: the newest
        assert [r.check for r in latest[name]] == ["gpu_ecc", "kernel_log"]
        assert [r.id for r in latest[name]] == [r.id for r in store.latest_results(name)]
    texts = store.evidence_of(latest["gpu002"])
    assert sorted(texts.values()) == ["gpu002 run 4 gpu_ecc", "gpu002 run 4 kernel_log"]


def test_a_node_with_no_results_and_another_rack(store_url):
    store = _store(store_url, 2)
    store.enroll("other", "r02", "h100-sxm-8x400g")
    _history(store, ["gpu001", "other"], runs=1)
    assert {k: len(v) for k, v in store.latest_results_of_rack("r01").items()} == {"gpu001": 2, "gpu002": 0}
    assert store.latest_results("gpu002") == []


# ---- prune --------------------------------------------------------------------------------------------


def test_prune_drops_old_evidence_and_keeps_verdicts_findings_and_shared_blobs(store_url):
    store = _store(store_url)
    now = utcnow()
    old, young = now - timedelta(days=200), now - timedelta(days=10)
    finding = [{"message": "Xid 79", "severity": "critical", "action": "RMA"}]
    store.add_result(
        "gpu001", "preflight", "kernel_log", "FAIL", findings=finding, evidence="old dmesg", time=old
    )
    store.add_result("gpu001", "preflight", "gpu_ecc", "PASS", evidence=SMI_Q, time=old)
    store.add_result("gpu001", "preflight", "gpu_ecc", "PASS", evidence=SMI_Q, time=young)  # same blob
    run = store.start_run("configure", "r01")
    store.finish_run(run.id, "done", evidence="PLAY RECAP ...")
    assert _blobs(store) == 2

    dry = prune(store, timedelta(days=180), dry_run=True, now=now)
    assert (dry.results, dry.blobs, dry.raw_bytes) == (2, 1, len("old dmesg")) and dry.dry_run
    assert _blobs(store) == 2 and store.get_run(run.id).evidence == "PLAY RECAP ..."

    done = prune(store, timedelta(days=180), now=now)
    assert (done.results, done.blobs, done.stored_bytes > 0, done.runs) == (2, 1, True, 0)
    assert _blobs(store) == 1  # the young result's nvidia-smi -q stays
    with store.reading() as s:
        rows = s.execute(select(CheckResult).order_by(CheckResult.id)).scalars().all()
    first, second, third = rows
    assert (first.verdict, first.findings, first.evidence_id) == ("FAIL", finding, None)
    assert first.evidence_pruned_at is not None and second.evidence_pruned_at is not None
    assert "evidence pruned" in store.evidence(first) and "bringup store prune" in store.evidence(first)
    assert store.evidence(third) == SMI_Q
    again = prune(store, timedelta(days=180), now=now)
    assert (again.results, again.blobs) == (0, 0)  # nothing left to free


def test_prune_drops_a_runs_own_old_output(store_url):
    store = _store(store_url)
    run = store.start_run("configure", "r01")
    store.finish_run(run.id, "done", evidence="PLAY RECAP " + "ok " * 100)
    out = prune(store, timedelta(hours=1), now=utcnow() + timedelta(days=2))
    assert out.runs == 1 and out.run_bytes > 300
    assert "evidence pruned" in store.get_run(run.id).evidence


@pytest.mark.parametrize("text", ["180", "0d", "-5d", "1y", "d"])
def test_prune_ages_that_are_refused(text):
    with pytest.raises(BadInput, match="--older-than"):
        parse_older_than(text)


def test_prune_ages():
    assert parse_older_than("180d") == timedelta(days=180)
    assert parse_older_than("26w") == timedelta(weeks=26)
    assert parse_older_than("48H") == timedelta(hours=48)


def test_0003_moves_existing_evidence_into_shared_blobs(store_url):
    """A store at 0002 (evidence in check_results.evidence) upgraded: every text is in a blob,
    the same text once, the column gone; on SQLite and PostgreSQL."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine, inspect, text

    from bringup.fleet import schema

    engine = create_engine(store_url)
    config = Config()
    config.set_main_option("script_location", str(schema.MIGRATIONS_DIR))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0002")
        conn.execute(
            text(
                "INSERT INTO nodes (name, rack, profile, state, macs, hardware, ssh_host_keys, created_at, "
                "updated_at) VALUES ('n1', 'r01', 'p', 'burnin', '[]', '{}', '[]', '2026-11-01 00:00:00+00', "
                "'2026-11-01 00:00:00+00')"
            )
        )
        node_id = conn.execute(text("SELECT id FROM nodes")).scalar_one()
        for check, evidence_text in (
            ("gpu_ecc", SMI_Q),
            ("gpu_memory", SMI_Q),
            ("kernel_log", "dmesg"),
            ("x", None),
        ):
            conn.execute(
                text(
                    'INSERT INTO check_results (node_id, stage, "check", verdict, metrics, findings, evidence, time) '
                    "VALUES (:n, 'preflight', :c, 'PASS', '{}', '[]', :e, '2026-11-01 00:00:00+00')"
                ),
                {"n": node_id, "c": check, "e": evidence_text},
            )
    engine.dispose()
    store = FleetStore(store_url)
    latest = {r.check: r for r in store.latest_results("n1")}
    assert store.evidence(latest["gpu_ecc"]) == store.evidence(latest["gpu_memory"]) == SMI_Q
    assert latest["gpu_ecc"].evidence_id == latest["gpu_memory"].evidence_id
    assert store.evidence(latest["kernel_log"]) == "dmesg" and store.evidence(latest["x"]) is None
    assert _blobs(store) == 2
    with store.engine.connect() as conn:
        assert "evidence" not in {c["name"] for c in inspect(conn).get_columns("check_results")}


def test_a_runs_own_output_is_capped_too(monkeypatch):
    monkeypatch.setenv(evidence.CAP_ENV, "1")
    store = _store("sqlite://")
    run = store.start_run("configure", "r01")
    ansible = "PLAY [all]\n" + "ok: [n1]\n" * 1_000_000 + "PLAY RECAP\n"
    kept = store.finish_run(run.id, "done", evidence=ansible).evidence
    assert (
        kept.startswith("PLAY [all]\n") and kept.endswith("PLAY RECAP\n") and "output cut at 2.0 MB" in kept
    )
