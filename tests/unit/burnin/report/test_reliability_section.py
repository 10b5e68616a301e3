"""The reliability section of the HTML report: figures, failures over time by component (stacked
bars), MTTF against job size on log axes; inline SVG only, escaped, honest when empty."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone

from burnin.history.figures import JobPlan, reliability
from burnin.history.signals import ComponentFailure, Failure, NodeSignals, Source
from burnin.report.reliability import failures_chart, mttf_chart, reliability_html

END = datetime(2026, 11, 24, tzinfo=timezone.utc)
START = END - timedelta(days=28)


def _signals() -> dict[str, NodeSignals]:
    def comp(day: float, kind: str, part: str, message: str = "fault") -> ComponentFailure:
        return ComponentFailure(
            START + timedelta(days=day), "gpu", "gpu_health", kind, part, message, Source("check_results", 1)
        )

    a = NodeSignals("gpu001", time_in_state={"golden": timedelta(days=28)})
    a.components = [
        comp(1.5, "gpu", "GPU 5"),
        comp(1.7, "hca_port", "mlx5_0 port 1"),
        comp(20.2, "gpu", "GPU 5", "<script>x</script>"),
    ]
    a.failures = [Failure(c.time, "x", Source("events", 1)) for c in a.components]
    b = NodeSignals("gpu002", time_in_state={"golden": timedelta(days=28)})
    b.components = [comp(1.2, "gpu", "GPU 1")]
    b.failures = [Failure(b.components[0].time, "x", Source("events", 2))]
    return {"gpu001": a, "gpu002": b}


def _rel(**kw):
    return reliability(
        _signals(), START, END, rack="r01", gpus_per_node=8, gpus_per_node_source="profile", **kw
    )


def test_failures_over_time_are_stacked_by_component_per_day():
    rel = _rel()
    assert rel.bucket_days == 1 and rel.timeline["gpu"][1] == 2 and rel.timeline["gpu"][20] == 1
    assert rel.timeline["hca_port"][1] == 1 and sum(rel.timeline["hca_port"]) == 1
    svg = failures_chart(rel)
    bars = re.findall(r'<rect class="bar" data-kind="(\w+)"[^>]*height="([\d.]+)"', svg)
    assert sorted(k for k, _ in bars) == ["gpu", "gpu", "hca_port"]
    heights = [float(h) for _, h in bars]
    # day 1 holds the most (2 GPU + 1 HCA port = the scale's top): its stack fills the plot
    assert sorted(heights) == [73.3, 73.3, 146.7] and heights[0] + heights[1] == 220.0
    assert "<title>2026-10-28: 2 gpu</title>" in svg and "gpu (3)" in svg and "hca_port (1)" in svg


def test_a_window_over_two_months_is_counted_per_week():
    rel = reliability(
        _signals(), END - timedelta(days=90), END, rack=None, gpus_per_node=8, gpus_per_node_source="x"
    )
    assert rel.bucket_days == 7 and all(len(v) == 13 for v in rel.timeline.values())
    assert "failures per 7 days" in failures_chart(rel)


def test_mttf_is_a_line_on_log_axes_from_the_rate_the_plan_uses():
    rel = _rel(failure_rate=6.5)
    svg = mttf_chart(rel)
    (points,) = re.findall(r'<polyline class="mttf" points="([^"]+)"', svg)
    xy = [tuple(map(float, p.split(","))) for p in points.split()]
    assert len(xy) == 15  # 8 .. 131,072 GPUs
    # log-log: 1 / (N x r_f) halves with every doubling, so equal steps on both axes
    dx = [b[0] - a[0] for a, b in zip(xy, xy[1:], strict=False)]
    dy = [b[1] - a[1] for a, b in zip(xy, xy[1:], strict=False)]
    assert max(dx) - min(dx) < 0.2 and max(dy) - min(dy) < 0.2 and min(dy) > 0  # (drawn to 0.1 px)
    assert "<title>16,384 GPUs: MTTF 1.8 h</title>" in svg  # the study's worked example
    assert "r_f = 6.5 per 1,000 node-days" in svg and ">128k<" in svg


def test_the_section_is_self_contained_and_escaped():
    html = reliability_html(_rel(failure_rate=6.5, plan=JobPlan(gpus=16000)))
    assert "<script" not in html and "&lt;script&gt;" in html  # a finding's text is escaped
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert html.count("<svg") == 2 and 'id="by-component"' in html and 'id="top-causes"' in html
    assert 'id="ettr"' in html and "E[ETTR]" in html and "Kokolis" in html
    assert "4 failures" in html and "6.5</b> (given with --failure-rate)" in html


def test_no_failures_and_no_node_days_say_so():
    quiet = reliability({}, START, END, rack=None, gpus_per_node=8, gpus_per_node_source="x")
    assert "no component failures" in failures_chart(quiet)
    assert "no failure rate" in mttf_chart(quiet)
    calm = reliability(
        {"n": NodeSignals("n", time_in_state={"golden": timedelta(days=28)})}, START, END,
        rack=None, gpus_per_node=8, gpus_per_node_source="x",
    )  # fmt: skip
    assert calm.rate == 0 and all(h == math.inf for h in calm.mttf_hours.values())
    assert "no failures to measure a rate from" in mttf_chart(calm)


def test_burnin_report_html_carries_the_section(tmp_path):
    from tests.unit.burnin.golden.test_rules import RACK, FleetRack

    fleet = FleetRack(tmp_path)
    fleet.results("gpu001")
    fleet.results("gpu002", fail="gpu")  # golden never: burn-in failed, one component failure
    html = tmp_path / "report.html"
    res = fleet.run("report", "--rack", RACK, "--html", str(html))
    assert res.exit_code == 0, res.output
    page = html.read_text()
    section = page[page.index('<section id="reliability"') :]
    assert "Fleet reliability (last 28 days)" in section
    assert 'id="failures-chart"' in section and 'data-kind="gpu"' in section
    assert 'id="mttf-chart"' in section or 'id="no-mttf"' in section


def test_failures_only_slurm_saw_are_said_and_drawn():
    from burnin.history.jobs import JobRun
    from burnin.history.node_fail import KIND, NodeFailMerge, SlurmFailure

    run = JobRun("812", "NODE_FAIL", START + timedelta(days=3.5), 1, "single-node", Source("sacct", "812"))
    merge = NodeFailMerge([SlurmFailure("gpu002", run.end, [run])], runs_matched=1)
    rel = _rel(slurm=merge, accounting="read: 9 job runs, 1 node events (sacct, sacctmgr)")
    assert rel.failures == 5 and rel.timeline[KIND][3] == 1
    html = reliability_html(rel)
    assert "5 failures (1 of them only in Slurm accounting: jobs ended NODE_FAIL)" in html
    assert f'data-kind="{KIND}"' in failures_chart(rel)
    assert "<li>slurm: NODE_FAIL of a single-node job: 1</li>" in html
