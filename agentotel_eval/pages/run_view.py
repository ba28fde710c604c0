"""One run: input and output, expected against called tools as an aligned timeline, each call with the evidence
it was rebuilt from, every evaluation, and the trace's span tree."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentotel_eval.access.queries import RunDetail
from agentotel_eval.pages.alignment import EXTRA, MATCHED, MISSING, OUT_OF_ORDER, Alignment, Column, align
from agentotel_eval.pages.markup import Links, esc, fmt_duration_ns, fmt_score, fmt_time, json_block

_CELL_W, _CELL_H, _GAP, _LEFT = 132, 30, 14, 78
_TOP_Y, _BOTTOM_Y = 22, 104
_CALLED = "called"  # a call of a run without expectations: nothing to align against
_KIND_LABEL = {MISSING: "missing", EXTRA: "extra", OUT_OF_ORDER: "out of order", MATCHED: "", _CALLED: ""}


def _cut(name: str, width: int = 17) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def alignment_svg(alignment: Alignment, failed: Sequence[bool] = ()) -> str:
    """The timeline: expected calls on the top row, called ones below; a matched pair shares a column and is
    joined, an out-of-order pair is joined across columns; missing, extra and failed calls are marked."""
    n = len(alignment.columns)
    width = _LEFT + max(n, 1) * (_CELL_W + _GAP)
    height = _BOTTOM_Y + _CELL_H + 26
    parts = [f'<svg class="alignment" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             'aria-label="expected tools against called tools"><title>expected against called tools</title>',
             f'<text class="row-label" x="4" y="{_TOP_Y + 19}">expected</text>',
             f'<text class="row-label" x="4" y="{_BOTTOM_Y + 19}">called</text>']

    def centre(k: int) -> float:
        return _LEFT + k * (_CELL_W + _GAP) + _CELL_W / 2

    links = []
    for k, col in enumerate(alignment.columns):
        if col.kind == MATCHED:
            links.append(f'<line class="link matched" x1="{centre(k)}" y1="{_TOP_Y + _CELL_H}" x2="{centre(k)}" '
                         f'y2="{_BOTTOM_Y}"/>')
        elif col.kind == OUT_OF_ORDER and col.expected is not None and col.partner is not None:
            links.append(f'<line class="link out_of_order" x1="{centre(k)}" y1="{_TOP_Y + _CELL_H}" '
                         f'x2="{centre(col.partner)}" y2="{_BOTTOM_Y}"><title>out of order: '
                         f"{esc(alignment.expected[col.expected])}</title></line>")
    parts.extend(links)
    for k, col in enumerate(alignment.columns):
        x = _LEFT + k * (_CELL_W + _GAP)
        for row, index, y in (("expected", col.expected, _TOP_Y), ("called", col.called, _BOTTOM_Y)):
            if index is None:
                continue
            name = (alignment.expected if row == "expected" else alignment.called)[index]
            error = row == "called" and index < len(failed) and failed[index]
            classes = f"cell {col.kind}{' error' if error else ''}"
            label = _KIND_LABEL[col.kind]
            note_y = y - 5 if row == "expected" else y + _CELL_H + 13
            note = []
            if label:
                note.append(label)
            if error:
                note.append("error")
            parts.append(
                f'<g class="{classes}" data-row="{row}" data-kind="{col.kind}" data-index="{index}" '
                f'data-tool="{esc(name)}"{" data-error=true" if error else ""}><title>{row} #{index + 1}: '
                f'{esc(name)}{" (" + ", ".join(note) + ")" if note else ""}</title>'
                f'<rect x="{x}" y="{y}" width="{_CELL_W}" height="{_CELL_H}" rx="5"/>'
                f'<text x="{x + _CELL_W / 2}" y="{y + 19}" text-anchor="middle">{esc(_cut(name))}</text>'
                + (f'<text class="mark" x="{x + _CELL_W / 2}" y="{note_y}" text-anchor="middle">'
                   f'{esc(" · ".join(note))}</text>' if note else "")
                + "</g>")
    parts.append("</svg>")
    return "".join(parts)


def _alignment_section(detail: RunDetail) -> str:
    called = list(detail.run.get("tools_called") or [])
    failed = [c.get("status") == "error" for c in detail.calls]
    if detail.expected is None:
        alignment = Alignment((), tuple(called), tuple(Column(_CALLED, None, j) for j in range(len(called))))
        summary = ('<p class="muted">This run has no expected tools: set <code>gen_ai.agent.expected_tools</code> '
                   "on its span, or an <code>[[expectations]]</code> rule or dataset in the collector's config.</p>")
        svg = alignment_svg(alignment, failed)
        return f'<section id="alignment"><h2>Called tools</h2>{summary}<div class="scroll">{svg}</div></section>'
    alignment = align(detail.expected, called)
    counts = {k: alignment.count(k) for k in (MATCHED, MISSING, EXTRA, OUT_OF_ORDER)}
    summary = (f'<p class="summary" data-matched="{counts[MATCHED]}" data-missing="{counts[MISSING]}" '
               f'data-extra="{counts[EXTRA]}" data-out-of-order="{counts[OUT_OF_ORDER]}">'
               f'<span class="chip pass">{counts[MATCHED]} matched</span> '
               f'<span class="chip kind-missing">{counts[MISSING]} missing</span> '
               f'<span class="chip kind-extra">{counts[EXTRA]} extra</span> '
               f'<span class="chip kind-out_of_order">{counts[OUT_OF_ORDER]} out of order</span> '
               f'<span class="muted">expected tools from {esc(_source_label(detail.expected_source))}</span></p>')
    return (f'<section id="alignment"><h2>Expected against called</h2>{summary}'
            f'<div class="scroll">{alignment_svg(alignment, failed)}</div></section>')


def _source_label(source: str) -> str:
    """Where the expectation came from, in words (the scorer records span_attribute, rule:NAME, dataset:FILE:LINE)."""
    if source == "span_attribute":
        return "the run's span"
    kind, _, rest = source.partition(":")
    if kind == "rule":
        return f"the expectation rule {rest!r}"
    if kind == "dataset":
        return f"the dataset {rest}"
    return source


def _evidence(call: dict[str, Any], diagnostics: dict[str, Any] | None) -> str:
    sources = call.get("sources") or {}
    by_source: dict[str, list[str]] = {}
    for field, how in sorted(sources.items()):
        if how:
            by_source.setdefault(str(how), []).append(str(field))
    items = [f"<li>from <b>{esc(how)}</b>: {esc(', '.join(fields))}</li>" for how, fields in by_source.items()]
    entries = (diagnostics or {}).get("calls") or []
    seq = int(call.get("seq") or 0)
    entry = entries[seq] if seq < len(entries) else {}
    if entry.get("execution_span"):
        items.append(f'<li>execution span <code>{esc(entry["execution_span"])}</code></li>')
    if entry.get("request_span"):
        items.append(f'<li>requested in LLM span <code>{esc(entry["request_span"])}</code></li>')
    for discarded in entry.get("discarded") or ():
        field, _, rest = str(discarded).partition(":")
        source, _, why = rest.partition(":")
        items.append(f"<li>discarded {esc(field)} from {esc(source)}: {esc(why)}</li>")
    if not items:
        return '<p class="muted">No evidence recorded for this call (a run stored before diagnostics existed).</p>'
    return f'<ul class="evidence">{"".join(items)}</ul>'


def _calls_section(detail: RunDetail) -> str:
    if not detail.calls:
        return '<section id="calls"><h2>Tool calls</h2><p class="empty">This run made no tool call.</p></section>'
    diagnostics = detail.run.get("diagnostics")
    items = []
    for call in detail.calls:
        status = call.get("status") or "ok"
        error = f'<p class="error-text">{esc(call["error"])}</p>' if call.get("error") else ""
        items.append(
            f'<details class="call" open data-status="{esc(status)}"><summary><span class="seq">'
            f'{int(call.get("seq") or 0) + 1}</span> <code class="tool">{esc(call.get("tool_name"))}</code> '
            f'<span class="chip {"fail" if status == "error" else "pass"}">{esc(status)}</span>'
            f'<span class="muted"> {esc(fmt_time(call.get("start_time")))}'
            f'{" · call id " + esc(call["call_id"]) if call.get("call_id") else ""}</span></summary>{error}'
            f'<div class="grid2"><div><h4>arguments</h4>{json_block(call.get("arguments"))}</div>'
            f'<div><h4>result</h4>{json_block(call.get("result"))}</div></div>'
            f"<h4>evidence</h4>{_evidence(call, diagnostics)}</details>")
    return f'<section id="calls"><h2>Tool calls ({len(detail.calls)})</h2>{"".join(items)}</section>'


def _judge_errors(details: dict[str, Any]) -> str:
    errors = details.get("errors") or []
    if not errors:
        return ""
    items = "".join(f"<li><b>{esc(e.get('type'))}</b> {esc(e.get('description'))}</li>" for e in errors
                    if isinstance(e, dict))
    return f'<ul class="findings">{items}</ul>'


def _evaluations_section(detail: RunDetail) -> str:
    if not detail.evaluations:
        return ('<section id="evaluations"><h2>Evaluations</h2><p class="empty">Not scored yet (scores are written '
                "when the run's trace completes).</p></section>")
    rows = []
    for e in detail.evaluations:
        details: dict[str, Any] = e["details"] if isinstance(e.get("details"), dict) else {}
        result = ("pass" if e.get("success") else "fail") if e.get("status") == "ok" else e.get("status")
        cost = f"${float(e['cost_usd']):.5f}" if e.get("cost_usd") else ""
        model = f'<div class="muted">{esc(e["model"])} {cost}</div>' if e.get("model") else ""
        rows.append(
            f'<tr data-metric="{esc(e["metric"])}"><td><code>{esc(e["metric"])}</code>{model}</td>'
            f'<td class=num>{fmt_score(e.get("score"))}</td><td class=num>{fmt_score(e.get("threshold"))}</td>'
            f'<td><span class="chip {esc(result)}">{esc(result)}</span></td>'
            f'<td class="reason">{esc(e.get("reason"))}{_judge_errors(details)}</td>'
            f'<td class="muted nowrap">{esc(e.get("source"))}</td></tr>')
    return ('<section id="evaluations"><h2>Evaluations</h2><table class="data"><thead><tr><th>metric</th>'
            "<th>score</th><th>threshold</th><th>result</th><th>reason</th><th>source</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></section>")


def _span_tree(detail: RunDetail, links: Links) -> str:
    spans = detail.spans
    if not spans:
        return ""
    ids = {s["span_id"] for s in spans}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for s in spans:
        parent = s["parent_span_id"] if s["parent_span_id"] in ids else None
        children.setdefault(parent, []).append(s)
    starts = [int(s["start_time_unix_nano"] or 0) for s in spans]
    ends = [int(s["end_time_unix_nano"] or 0) for s in spans]
    t0, t1 = min(starts), max(ends)
    total = max(t1 - t0, 1)
    run_span = detail.run["span_id"]
    rows: list[str] = []
    stack: list[tuple[dict[str, Any], int]] = [(s, 0) for s in reversed(children.get(None, []))]
    while stack:
        span, depth = stack.pop()
        start, end = int(span["start_time_unix_nano"] or t0), int(span["end_time_unix_nano"] or t0)
        left = 100 * (start - t0) / total
        width = max(100 * (end - start) / total, 0.4)
        marks = ""
        if span["span_id"] == run_span:
            marks = ' <span class="chip">this run</span>'
        elif span["span_id"] in detail.trace_runs:
            href = links.run(detail.run["trace_id"], span["span_id"]) if links.run is not None else ""
            label = f"run: {esc(detail.trace_runs[span['span_id']])}"
            marks = f' <a class="chip" href="{esc(href)}">{label}</a>' if href else f' <span class="chip">{label}</span>'
        error = span.get("status_code") == "ERROR"
        rows.append(
            f'<tr class="{"current" if span["span_id"] == run_span else ""}{" error" if error else ""}">'
            f'<td class="depth-{min(depth, 16)}" title="{esc(span.get("scope_name") or "")}">'
            f'{esc(span["name"])}{marks}</td><td class="muted">{esc((span.get("kind") or "").lower())}</td>'
            f'<td class=num>{fmt_duration_ns(start, end)}</td><td class="waterfall">{_bar(left, width, error)}</td>'
            f'<td><code class="muted">{esc(span["span_id"])}</code></td></tr>')
        stack.extend((c, depth + 1) for c in reversed(children.get(span["span_id"], [])))
    more = '<p class="muted">Only the first spans are shown.</p>' if detail.spans_truncated else ""
    return ('<section id="spans"><h2>Span tree</h2><table class="data spans"><thead><tr><th>span</th><th>kind</th>'
            f"<th>duration</th><th>timeline</th><th>span id</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"{more}</section>")


def _bar(left: float, width: float, error: bool) -> str:
    """A span's place in the trace's time, as SVG (percent positions; no inline style, which the pages' policy
    forbids)."""
    return (f'<svg class="bar" width="100%" height="8" role="img" aria-label="span timing"><rect class="span-bar'
            f'{" bad" if error else ""}" x="{left:.2f}%" y="0" width="{width:.2f}%" height="8" rx="2"/></svg>')


def _diagnostics_section(run: dict[str, Any]) -> str:
    diagnostics = run.get("diagnostics") or {}
    items = []
    if diagnostics.get("frameworks"):
        items.append(f"<li>framework plumbing read: {esc(', '.join(diagnostics['frameworks']))}</li>")
    for r in diagnostics.get("requests_without_execution") or ():
        items.append(f"<li>requested, never executed: <code>{esc(r.get('name'))}</code> (LLM span "
                     f"<code>{esc(r.get('llm_span'))}</code>)</li>")
    for span_id in diagnostics.get("executions_without_request") or ():
        items.append(f"<li>executed without a request in the LLM output: span <code>{esc(span_id)}</code></li>")
    if diagnostics.get("calls_not_recorded"):
        items.append(f"<li>{esc(diagnostics['calls_not_recorded'])}</li>")
    for entry in diagnostics.get("ignored") or ():
        items.append(f"<li>ignored span <code>{esc(entry.get('span_id'))}</code> {esc(entry.get('name'))}: "
                     f"{esc(entry.get('why'))}</li>")
    if not items:
        return ""
    return (f'<section id="reconstruction"><h2>How this run was read</h2><p class="muted">Convention '
            f'{esc(run.get("convention") or "?")}; <code>agentotel-eval explain {esc(run["trace_id"])}</code> '
            f'prints the same.</p><ul>{"".join(items)}</ul></section>')


def run_body(detail: RunDetail, links: Links) -> str:
    run = detail.run
    status = run.get("status") or "ok"
    parent = ""
    if run.get("parent_run_span_id") and links.run is not None:
        parent = (f' · inside run <a href="{esc(links.run(run["trace_id"], run["parent_run_span_id"]))}">'
                  f'{esc(detail.trace_runs.get(run["parent_run_span_id"], run["parent_run_span_id"]))}</a>')
    error = f'<p class="error-text">{esc(run["error"])}</p>' if run.get("error") else ""
    head = (
        f'<div class="toolbar"><h1>{esc(run.get("agent_name") or "(unnamed)")} '
        f'<span class="chip {"fail" if status == "error" else "pass"}">{esc(status)}</span></h1></div>'
        f'<p class="ids">trace <code id="trace-id">{esc(run["trace_id"])}</code> '
        f'<button type="button" class="copy" data-copy="{esc(run["trace_id"])}">copy</button> · span '
        f'<code>{esc(run["span_id"])}</code> · {esc(run.get("service_name") or "-")} · '
        f'{esc(fmt_time(run.get("start_time")))} UTC · {esc(run.get("span_name") or "")}{parent}</p>{error}'
        f'<div class="grid2"><section><h2>Input</h2>{json_block(run.get("input"))}</section>'
        f'<section><h2>Output</h2>{json_block(run.get("output"))}</section></div>'
    )
    return (head + _alignment_section(detail) + _evaluations_section(detail) + _calls_section(detail)
            + _diagnostics_section(run) + _span_tree(detail, links))
