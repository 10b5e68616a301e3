"""The node-by-stage matrix: one row per node, failures first, one verdict cell per stage, with
filters (verdict, stage, text) and paging in a small inline script. A link can carry them:
``report.html#verdict=FAIL&stage=gpu&find=gpu01&size=250``.

Without the script (a browser with scripts off) every row shows and the filters stay hidden; with
it, a page of rows shows and the rest are ``hidden``, so 1,000 rows cost the browser no layout.
"""

from __future__ import annotations

from burnin.report import NodeReport, RackReport
from burnin.report.page import Section, anchor, esc
from burnin.result import Verdict

VERDICT_CLASS = {Verdict.PASS: "pass", Verdict.WARN: "warn", Verdict.FAIL: "fail", Verdict.UNKNOWN: "unknown"}
PAGE_SIZES = (50, 100, 250, 1000)
MATRIX_CSS = """
.filters { display: flex; gap: 14px; align-items: center; flex-wrap: wrap; margin: 0 0 8px; }
.filters select, .filters input, .filters button { font: inherit; padding: 2px 6px; }
#f-count { color: #555; }
"""

# Plain ES2017, no library. Rows carry data-golden and data-find (lower-case name, state and
# reasons); verdict cells carry data-v; the header's cells carry data-stage.
MATRIX_JS = r"""
(function () {
  var table = document.getElementById('matrix-table');
  if (!table) return;
  var el = function (id) { return document.getElementById(id); };
  var fv = el('f-verdict'), fs = el('f-stage'), ft = el('f-text'), fz = el('f-size'), count = el('f-count');
  var stages = Array.prototype.map.call(table.tHead.rows[0].cells, function (c) {
    return c.getAttribute('data-stage');
  });
  var rows = Array.prototype.map.call(table.tBodies[0].rows, function (tr) {
    var v = {};
    for (var i = 0; i < tr.cells.length; i++) {
      if (stages[i]) v[stages[i]] = tr.cells[i].getAttribute('data-v') || 'none';
    }
    return {tr: tr, golden: tr.getAttribute('data-golden') === '1', find: tr.getAttribute('data-find'), v: v};
  });
  var page = 0, matched = rows;
  function keep(r, verdict, stage, text) {
    if (text && r.find.indexOf(text) < 0) return false;
    if (!verdict) return true;
    if (verdict === 'excluded') return !r.golden;
    if (stage) return r.v[stage] === verdict;
    for (var s in r.v) if (r.v[s] === verdict) return true;
    return false;
  }
  function show() {
    var size = parseInt(fz.value, 10) || 100, pages = Math.max(1, Math.ceil(matched.length / size));
    page = Math.min(Math.max(page, 0), pages - 1);
    var first = page * size, last = Math.min(first + size, matched.length);
    rows.forEach(function (r) { r.tr.hidden = true; });
    for (var i = first; i < last; i++) matched[i].tr.hidden = false;
    count.textContent = matched.length ? 'rows ' + (first + 1) + '-' + last + ' of ' + matched.length +
      ' matching (' + rows.length + ' nodes)' : 'no node matches (' + rows.length + ' nodes)';
    el('f-prev').disabled = page === 0;
    el('f-next').disabled = page >= pages - 1;
  }
  function filter() {
    var verdict = fv.value, stage = fs.value, text = ft.value.trim().toLowerCase();
    matched = rows.filter(function (r) { return keep(r, verdict, stage, text); });
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


def _rank(n: NodeReport) -> tuple[int, int]:
    """Failures first: nodes that do not qualify before those that do, the worst verdict first."""
    worst = max((Verdict(s.verdict).rank for s in n.stages.values() if s.verdict), default=0)
    return (1 if n.golden else 0, -worst)


def _row(report: RackReport, n: NodeReport, linked: dict[str, str]) -> str:
    cells = []
    for stage in report.stages:
        st = n.stages.get(stage)
        required = stage in n.required
        if st is None or st.verdict is None:
            title = "required for golden, never ran" if required else "not run"
            cls = "v v-none required" if required else "v v-none"
            cells.append(f'<td class="{cls}" title="{title}">{"not run" if required else "–"}</td>')
            continue
        when = st.time.strftime("%Y-%m-%d %H:%M") if st.time else "?"
        cells.append(
            f'<td class="v v-{VERDICT_CLASS.get(st.verdict, "unknown")}" data-stage="{esc(stage)}" '
            f'data-v="{esc(st.verdict)}" title="run {st.run_id}, {when}">{esc(st.verdict)}</td>'
        )
    if n.golden:
        # qualifies but not recorded yet: `burnin golden` makes the move
        word = "golden" if n.state == "golden" else "qualifies"
        golden = f'<td class="golden-yes">{word}</td>'
    else:
        golden = f'<td class="golden-no" title="{esc("; ".join(n.reasons))}">no</td>'
    name = esc(n.name)
    link = f'<a href="#{linked[n.name]}">{name}</a>' if n.name in linked else name
    find = esc(" ".join((n.name, n.state, *n.reasons)).lower())
    return (
        f'<tr id="{anchor("node", n.name)}" data-node="{name}" data-golden="{int(n.golden)}" '
        f'data-find="{find}"><th>{link}</th><td>{esc(n.state)}</td>{golden}{"".join(cells)}</tr>'
    )


def matrix_section(report: RackReport, linked: dict[str, str]) -> Section:
    """``linked``: node -> the anchor its name links to (its first problem, or why it is excluded)."""
    order = sorted(range(len(report.nodes)), key=lambda i: (*_rank(report.nodes[i]), i))
    rows = "".join(_row(report, report.nodes[i], linked) for i in order)
    head = "".join(f'<th data-stage="{esc(s)}">{esc(s)}</th>' for s in report.stages)
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
        "".join(f'<span class="v-{c}">{v}</span>' for v, c in VERDICT_CLASS.items())
        + '<span style="background:#9e9e9e">not run</span>'
    )
    body = (
        f"{filters}"
        '<table class="matrix" id="matrix-table"><thead><tr><th>node</th><th>state</th><th>golden</th>'
        f"{head}</tr></thead><tbody>{rows}</tbody></table>"
        f'<p class="legend">{legend} Hatched: a stage the golden rules need that never ran. '
        "Nodes that do not qualify come first, the worst verdict first.</p>"
    )
    return Section("matrix", "Nodes by stage", body, MATRIX_JS)
