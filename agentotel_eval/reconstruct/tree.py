"""Spans and logs grouped per trace into a tree whose shape does not depend on arrival order.

OTLP exports in span END order, batches mix traces, exporters retry (duplicates), and a parent can be missing
(not yet arrived, or dropped). So: one copy per (trace, span) chosen by content, children ordered by
(start time, span id), orphans (parent id not in the trace) become roots. Logs are attached to the span whose
id they carry, in time order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import attrgetter

from agentotel_eval.otlp.records import LogRecord, SpanRecord


def _copy_rank(span: SpanRecord) -> tuple:
    """Orders two copies of one span id: the more complete copy (ended later, more data)
    wins, by content only."""
    return (span.end_ns, len(span.attributes), len(span.events), span.status_code, span.name, span.start_ns)


_NONE = object()

#: sort key of spans: (start time, span id) - a C-level getter, it runs for every span
span_order = attrgetter("start_ns", "span_id")


def _log_content(log: LogRecord) -> str:
    """What orders logs of one span with the same time and name, and tells a re-sent copy (equal here: repr is
    stable for the same decoded body) from another record. Computed only for such ties:
    a body can be large."""
    return log.body if isinstance(log.body, str) else repr(log.body)


@dataclass(slots=True, init=False)
class TraceTree:
    trace_id: str
    spans: dict[str, SpanRecord]
    children: dict[str, list[SpanRecord]]
    roots: list[SpanRecord]  # true roots and orphans, in span order
    logs: dict[str, list[LogRecord]]  # span id -> logs in time order

    def __init__(self, trace_id: str) -> None:  # by hand: no factory call per container
        self.trace_id = trace_id
        self.spans, self.children, self.roots, self.logs = {}, {}, [], {}

    def is_orphan(self, span: SpanRecord) -> bool:
        return bool(span.parent_span_id) and span.parent_span_id not in self.spans

    def parent(self, span: SpanRecord) -> SpanRecord | None:
        return self.spans.get(span.parent_span_id) if span.parent_span_id else None


def build_trees(spans: Iterable[SpanRecord], logs: Iterable[LogRecord] = ()) -> list[TraceTree]:
    """One tree per trace id, in trace-id order; duplicates collapsed, children and logs ordered."""
    trees: dict[str, TraceTree] = {}
    trace_id: object = _NONE  # the trace of the previous span: exports group spans by trace
    by_id: dict[str, SpanRecord] = {}
    for span in spans:
        if span.trace_id != trace_id:  # look the tree up once per run of spans of one trace
            trace_id = span.trace_id
            tree = trees.get(trace_id)
            if tree is None:
                tree = trees[trace_id] = TraceTree(trace_id)
            by_id = tree.spans
        known = by_id.get(span.span_id)
        if known is None or _copy_rank(span) > _copy_rank(known):
            by_id[span.span_id] = span
    for tree in trees.values():
        by_id, children = tree.spans, tree.children
        roots = tree.roots
        for span in by_id.values():
            parent = span.parent_span_id
            if parent and parent in by_id and parent != span.span_id:
                kids = children.get(parent)
                if kids is None:
                    children[parent] = [span]
                else:
                    kids.append(span)
            else:
                roots.append(span)
        for kids in children.values():
            if len(kids) > 1:
                kids.sort(key=span_order)
        if len(roots) > 1:
            roots.sort(key=span_order)
    # logs of each span in (time, observed time, event name, content) order, one copy of each record
    by_span: dict[tuple[str, str], dict[tuple[int, int, str], list[LogRecord]]] = {}
    for log in logs:
        tree = trees.get(log.trace_id or "")
        if tree is None or not log.span_id or log.span_id not in tree.spans:
            continue
        heads = by_span.get((tree.trace_id, log.span_id))
        if heads is None:
            heads = by_span[(tree.trace_id, log.span_id)] = {}
        head = (log.timestamp_ns, log.observed_time_ns, log.event_name)
        group = heads.get(head)
        if group is None:
            heads[head] = [log]
        else:
            group.append(log)
    for (trace_id, span_id), heads in by_span.items():
        ordered: list[LogRecord] = []
        for head in sorted(heads):
            group = heads[head]
            if len(group) == 1:
                ordered.append(group[0])
                continue
            unique: dict[str, LogRecord] = {}
            for log in group:
                unique.setdefault(_log_content(log), log)  # a re-sent record: its first copy is kept
            ordered.extend(unique[content] for content in sorted(unique))
        trees[trace_id].logs[span_id] = ordered
    return [trees[t] for t in sorted(trees)] if len(trees) > 1 else list(trees.values())


def unreachable(tree: TraceTree, reached: int) -> list[SpanRecord]:
    """Spans in a parent loop (a -> b -> a: no root leads to them), given how many spans a walk from the roots
    reached; empty (and free) in the normal case. The walker adds the earliest as a root and walks again."""
    if reached >= len(tree.spans):
        return []
    seen: set[str] = set()
    stack = [s.span_id for s in tree.roots]
    while stack:
        span_id = stack.pop()
        if span_id not in seen:
            seen.add(span_id)
            stack.extend(child.span_id for child in tree.children.get(span_id, ()))
    return sorted((s for s in tree.spans.values() if s.span_id not in seen), key=span_order)


def rehome_event_logs(tree: TraceTree, is_llm: Callable[[str], bool]) -> None:
    """Move GenAI event logs recorded against a span that is not an LLM call (OpenLLMetry's event mode gives
    them the application span's id) to the LLM span below it whose time holds the log's: the model call they
    describe. Among several, one of the log's own instrumentation scope first, then the shortest."""
    moved: dict[str, list[LogRecord]] = {}
    for span_id, logs in list(tree.logs.items()):
        if is_llm(span_id):
            continue
        below = [s for s in _descendants(tree, span_id) if is_llm(s.span_id)]
        if not below:
            continue
        kept: list[LogRecord] = []
        for log in logs:
            target = None
            if log.event_name.startswith("gen_ai."):
                holding = [s for s in below if s.start_ns <= log.timestamp_ns <= s.end_ns]
                if holding:
                    target = min(
                        holding,
                        key=lambda s: (s.scope_name != log.scope_name, s.end_ns - s.start_ns, s.span_id),
                    )
            if target is None:
                kept.append(log)
            else:
                moved.setdefault(target.span_id, []).append(log)
        if len(kept) < len(logs):
            tree.logs[span_id] = kept
    for span_id, logs in moved.items():
        tree.logs[span_id] = sorted([*tree.logs.get(span_id, ()), *logs], key=_log_order)


def _log_order(log: LogRecord) -> tuple[int, int, str]:
    return (log.timestamp_ns, log.observed_time_ns, log.event_name)


def _descendants(tree: TraceTree, span_id: str) -> list[SpanRecord]:
    out: list[SpanRecord] = []
    stack = list(tree.children.get(span_id, ()))
    while stack:
        span = stack.pop()
        out.append(span)
        stack.extend(tree.children.get(span.span_id, ()))
    return out
