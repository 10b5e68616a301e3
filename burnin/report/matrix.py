"""The node-by-check matrix: one compact cell per check (its latest stage run's verdict), the
checks under their stage, sticky headers. Nodes whose rows would be identical (same state, same
golden word, same verdict in every cell) share one row that opens to list them, so 1,000 healthy
nodes are one line and the few that differ stand out; failures first.

Filters (verdict, stage, text) and paging live in a small inline script. A link can carry them:
``report.html#verdict=FAIL&stage=gpu&find=gpu01&size=250``. Without the script (a browser with
scripts off) every row shows and the filters stay hidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from burnin.report import NodeReport, RackReport
from burnin.report.page import Section, anchor, esc
from burnin.result import Verdict

VERDICT_CLASS = {Verdict.PASS: "pass", Verdict.WARN: "warn", Verdict.FAIL: "fail", Verdict.UNKNOWN: "unknown"}
LETTER = {"PASS": "P", "WARN": "W", "FAIL": "F", "UNKNOWN": "U"}
PAGE_SIZES = (50, 100, 250, 1000)
NAMES_SHOWN = 400  # the names a group's row lists; the rest are counted (the find box still finds them)
MATRIX_CSS = """
.filters { display: flex; gap: 14px; align-items: center; flex-wrap: wrap; margin: 0 0 8px; }
.filters select, .filters input, .filters button { font: inherit; padding: 2px 6px; }
#f-count { color: #555; }
table.matrix { font-size: 12px; }
table.matrix th, table.matrix td { padding: 2px 4px; }
table.matrix thead th { position: sticky; top: 0; z-index: 2; background: #f0f0f0; }
table.matrix thead tr.checks th { top: 25px; height: 118px; vertical-align: bottom; padding: 2px 0; }
table.matrix thead tr.stages th { height: 25px; white-space: nowrap; }
table.matrix thead tr.checks th span { writing-mode: vertical-rl; transform: rotate(180deg);
  display: inline-block; max-height: 112px; overflow: hidden; text-overflow: ellipsis; font-weight: 400; }
table.matrix td.v { width: 18px; min-width: 18px; max-width: 18px; padding: 1px 0; font-size: 11px; }
table.matrix tbody th { position: sticky; left: 0; background: #fff; z-index: 1; font-weight: 400;
  min-width: 130px; max-width: 360px; }
table.matrix tbody th details { border: 0; margin: 0; padding: 0; background: none; }
table.matrix tbody th summary { font-weight: 600; }
table.matrix .names { font: 11px/1.5 ui-monospace, Menlo, Consolas, monospace; max-height: 220px;
  overflow-y: auto; word-break: break-all; }
table.matrix td.stage-start, table.matrix th.stage-start { border-left: 2px solid #999; }
"""

# Plain ES2017, no library. Rows carry data-golden, data-count (nodes in the row), data-find
# (lower-case names, states and reasons) and data-sv ("stage=VERDICT ...", the stages that ran).
MATRIX_JS = r"""
(function () {
  var table = document.getElementById('matrix-table');
  if (!table) return;
  var el = function (id) { return document.getElementById(id); };
  var fv = el('f-verdict'), fs = el('f-stage'), ft = el('f-text'), fz = el('f-size'), count = el('f-count');
  var rows = Array.prototype.map.call(table.tBodies[0].rows, function (tr) {
    var v = {};
    (tr.getAttribute('data-sv') || '').split(' ').forEach(function (kv) {
      var i = kv.indexOf('=');
      if (i > 0) v[kv.slice(0, i)] = kv.slice(i + 1);
    });
    return {tr: tr, golden: tr.getAttribute('data-golden') === '1', find: tr.getAttribute('data-find'),
            n: parseInt(tr.getAttribute('data-count'), 10) || 1, v: v};
  });
  var stages = Array.prototype.map.call(fs.options, function (o) { return o.value; }).filter(Boolean);
  var total = rows.reduce(function (a, r) { return a + r.n; }, 0);
  var page = 0, matched = rows;
  function verdictIn(r, stage) { return r.v[stage] || 'none'; }
  function keep(r, verdict, stage, text) {
    if (text && r.find.indexOf(text) < 0) return false;
    if (!verdict) return true;
    if (verdict === 'excluded') return !r.golden;
    if (stage) return verdictIn(r, stage) === verdict;
    return stages.some(function (s) { return verdictIn(r, s) === verdict; });
  }
  function show() {
    var size = parseInt(fz.value, 10) || 100, pages = Math.max(1, Math.ceil(matched.length / size));
    page = Math.min(Math.max(page, 0), pages - 1);
    var first = page * size, last = Math.min(first + size, matched.length);
    rows.forEach(function (r) { r.tr.hidden = true; });
    for (var i = first; i < last; i++) matched[i].tr.hidden = false;
    var nodes = matched.reduce(function (a, r) { return a + r.n; }, 0);
    count.textContent = matched.length ? 'rows ' + (first + 1) + '-' + last + ' of ' + matched.length +
      ' matching, ' + nodes + ' of ' + total + ' nodes' : 'no node matches (' + total + ' nodes)';
    el('f-prev').disabled = page === 0;
    el('f-next').disabled = page >= pages - 1;
  }
  function filter() {
    var verdict = fv.value, stage = fs.value, text = ft.value.trim().toLowerCase();
    matched = rows.filter(function (r) { return keep(r, verdict, stage, text); });
    matched.forEach(function (r) {  // a name searched for: open its row's list of nodes
      var d = r.tr.querySelector('details');
      if (d) d.open = !!text && r.n > 1;
    });
    page = 0;
    show();
  }
  [fv, fs, fz].forEach(function (x) { x.addEventListener('change', filter); });
  ft.addEventListener('input', filter);
  el('f-prev').addEventListener('click', function () { page -= 1; show(); });
  el('f-next').addEventListener('click', function () { page += 1; show(); });
  var map = el('ib-heatmap');
  if (map) map.addEventListener('click', function (e) {
    var node = e.target.getAttribute && e.target.getAttribute('data-node');
    if (!node) return;
    fv.value = ''; ft.value = node.toLowerCase(); filter();
    el('matrix').scrollIntoView();
  });
  // a link may carry filters: report.html#verdict=FAIL&stage=gpu&find=gpu01&size=250
  location.hash.slice(1).split('&').forEach(function (kv) {
    var i = kv.indexOf('='), box = {verdict: fv, stage: fs, find: ft, size: fz}[kv.slice(0, i)];
    try {
      if (i > 0 && box) box.value = decodeURIComponent(kv.slice(i + 1).replace(/\+/g, ' '));
    } catch (e) { /* a malformed link leaves that filter as it was */ }
  });
  el('matrix-filters').hidden = false;
  filter();
})();
"""


@dataclass(frozen=True)
class Column:
    stage: str
    check: str  # "": the stage never ran on any node, so its checks are not known


def columns(report: RackReport) -> list[Column]:
    """Every stage's checks, as the nodes' latest runs of it have them, in stage order."""
    seen: dict[str, set[str]] = {s: set() for s in report.stages}
    for n in report.nodes:
        for stage, st in n.stages.items():
            seen.setdefault(stage, set()).update(r.check for r in st.results)
    return [Column(s, c) for s in report.stages for c in (sorted(seen[s]) or [""])]


def _cell_codes(n: NodeReport, cols: Sequence[Column]) -> tuple[str, ...]:
    """Each column's verdict for this node; 'none!' a required stage that never ran, 'none' a
    stage that did not run, '-' a check its stage's run did not include."""
    out = []
    for col in cols:
        st = n.stages.get(col.stage)
        if st is None or st.verdict is None:
            out.append("none!" if col.stage in n.required else "none")
            continue
        verdict = next((r.verdict for r in st.results if r.check == col.check), None)
        out.append(verdict or (st.verdict if not col.check else "-"))
    return tuple(out)


def _golden_word(n: NodeReport) -> str:
    # qualifies but not recorded yet: `burnin golden` makes the move
    return ("golden" if n.state == "golden" else "qualifies") if n.golden else "no"


@dataclass(frozen=True)
class MatrixRow:
    nodes: tuple[NodeReport, ...]
    codes: tuple[str, ...]

    @property
    def first(self) -> NodeReport:
        return self.nodes[0]

    @property
    def rank(self) -> tuple[int, int, int, str]:
        """Failures first: rows that do not qualify, the worst verdict first, then the biggest."""
        worst = max((Verdict(s.verdict).rank for s in self.first.stages.values() if s.verdict), default=0)
        return (1 if self.first.golden else 0, -worst, -len(self.nodes), self.first.name)


def matrix_rows(report: RackReport, cols: Sequence[Column]) -> list[MatrixRow]:
    """The nodes grouped by identical rows (state, golden word, every cell), failures first."""
    groups: dict[tuple, list[NodeReport]] = {}
    codes: dict[tuple, tuple[str, ...]] = {}
    for n in report.nodes:
        cells = _cell_codes(n, cols)
        key = (n.state, _golden_word(n), cells)
        groups.setdefault(key, []).append(n)
        codes[key] = cells
    return sorted((MatrixRow(tuple(v), codes[k]) for k, v in groups.items()), key=lambda r: r.rank)


def _cell(code: str, col: Column, row: MatrixRow, start: str) -> str:
    """``start``: " stage-start" on a stage's first column."""
    where = f"{col.stage}/{col.check}" if col.check else col.stage
    if code.startswith("none"):
        required = code == "none!"
        title = f"{where}: {'required for golden, never ran' if required else 'not run'}"
        return f'<td class="v v-none{" required" if required else ""}{start}" title="{esc(title)}">·</td>'
    if code == "-":
        return f'<td class="v v-none{start}" title="{esc(where)}: not in this run">–</td>'
    cls = VERDICT_CLASS.get(code, "unknown") + start
    if len(row.nodes) == 1:
        st = row.first.stages[col.stage]
        when = st.time.strftime("%Y-%m-%d %H:%M") if st.time else "?"
        title = f"{where}: {code}, run {st.run_id}, {when}"
    else:
        title = f"{where}: {code} on all {len(row.nodes)} nodes of this row"
    return (
        f'<td class="v v-{cls}" data-stage="{esc(col.stage)}" data-check="{esc(col.check)}" '
        f'data-v="{esc(code)}" title="{esc(title)}">{LETTER.get(code, "?")}</td>'
    )


def _name_cell(row: MatrixRow, linked: dict[str, str]) -> str:
    def link(n: NodeReport) -> str:
        name = esc(n.name)
        return f'<a href="#{linked[n.name]}">{name}</a>' if n.name in linked else name

    if len(row.nodes) == 1:
        return f"<th>{link(row.first)}</th>"
    shown = " ".join(link(n) for n in row.nodes[:NAMES_SHOWN])
    more = len(row.nodes) - NAMES_SHOWN
    shown += f" … and {more} more (find one by name above)" if more > 0 else ""
    return (
        f"<th><details><summary>{len(row.nodes)} nodes</summary>"
        f'<div class="names">{shown}</div></details></th>'
    )


def _row(row: MatrixRow, cols: Sequence[Column], linked: dict[str, str]) -> str:
    n = row.first
    word = _golden_word(n)
    if n.golden:
        golden = f'<td class="golden-yes">{word}</td>'
    else:
        why = "; ".join(n.reasons) if len(row.nodes) == 1 else "see the excluded nodes above"
        golden = f'<td class="golden-no" title="{esc(why)}">no</td>'
    starts = [i == 0 or cols[i - 1].stage != c.stage for i, c in enumerate(cols)]
    cells = "".join(
        _cell(code, col, row, " stage-start" if s else "")
        for code, col, s in zip(row.codes, cols, starts, strict=True)
    )
    stage_verdicts = " ".join(f"{s}={st.verdict}" for s, st in n.stages.items() if st.verdict is not None)
    reasons = dict.fromkeys(r for m in row.nodes for r in m.reasons)
    find = esc(" ".join((*(m.name for m in row.nodes), n.state, *reasons)).lower())
    if len(row.nodes) == 1:
        ident = f' id="{anchor("node", n.name)}" data-node="{esc(n.name)}"'
    else:  # a row of identical nodes: each still found by name (tests, scripts reading the page)
        ident = f' data-members="{esc(" ".join(m.name for m in row.nodes))}"'

    return (
        f'<tr{ident} data-count="{len(row.nodes)}" data-golden="{int(n.golden)}" data-sv="{esc(stage_verdicts)}" '
        f'data-find="{find}">{_name_cell(row, linked)}<td>{esc(n.state)}</td>{golden}{cells}</tr>'
    )


def _head(report: RackReport, cols: Sequence[Column]) -> str:
    spans: dict[str, int] = {}
    for c in cols:
        spans[c.stage] = spans.get(c.stage, 0) + 1
    stages = "".join(
        f'<th class="stage-start" colspan="{k}" data-stage="{esc(s)}">{esc(s)}</th>' for s, k in spans.items()
    )
    checks, last = [], None
    for c in cols:
        cls = ' class="stage-start"' if c.stage != last else ""
        last = c.stage
        label = c.check or "(not run)"
        checks.append(f'<th{cls} title="{esc(c.stage)}/{esc(label)}"><span>{esc(label)}</span></th>')
    return (
        '<thead><tr class="stages"><th rowspan="2">node</th><th rowspan="2">state</th>'
        f'<th rowspan="2">golden</th>{stages}</tr><tr class="checks">{"".join(checks)}</tr></thead>'
    )


def matrix_section(report: RackReport, linked: dict[str, str]) -> Section:
    """``linked``: node -> the anchor its name links to (its first problem, or why it is excluded)."""
    cols = columns(report)
    grouped = matrix_rows(report, cols)
    rows = "".join(_row(r, cols, linked) for r in grouped)
    stage_options = "".join(f'<option value="{esc(s)}">{esc(s)}</option>' for s in report.stages)
    verdicts = "".join(f'<option value="{v}">{v}</option>' for v in ("FAIL", "UNKNOWN", "WARN", "PASS"))
    sizes = "".join(f'<option value="{s}"{" selected" if s == 100 else ""}>{s}</option>' for s in PAGE_SIZES)
    filters = (
        '<div class="filters" id="matrix-filters" hidden>'
        '<label>verdict <select id="f-verdict"><option value="">any</option>'
        f'<option value="excluded">not golden</option>{verdicts}<option value="none">not run</option>'
        "</select></label>"
        f'<label>in stage <select id="f-stage"><option value="">any stage</option>{stage_options}</select></label>'
        '<label>find <input id="f-text" type="search" placeholder="node, state or reason" size="28"></label>'
        f'<label>rows per page <select id="f-size">{sizes}</select></label>'
        '<button id="f-prev" type="button">previous</button><button id="f-next" type="button">next</button>'
        '<span id="f-count"></span></div>'
    )
    legend = (
        "".join(f'<span class="v-{c}">{LETTER[v]} {v}</span>' for v, c in VERDICT_CLASS.items())
        + '<span style="background:#9e9e9e">· not run</span>'
    )
    body = (
        f"{filters}"
        f'<table class="matrix" id="matrix-table" data-nodes="{len(report.nodes)}" data-rows="{len(grouped)}">'
        f"{_head(report, cols)}<tbody>{rows}</tbody></table>"
        f'<p class="legend">{legend} Hatched: a stage the golden rules need that never ran. '
        f"{len(report.nodes)} nodes in {len(grouped)} rows: nodes whose every cell, state and golden word "
        "agree share a row (open it for their names). Rows that do not qualify come first, the worst "
        "verdict first. Hover a cell for its check and run.</p>"
    )
    return Section("matrix", "Nodes by check", body, MATRIX_JS)
