"""Results that a later trace feeds back for calls an earlier trace asked for.

A plain client loop with no application span makes each LLM call its own trace: the call the model asks for in
one trace has its result, and its failure (a tool message ``Error: ...``), only in the next trace's request.
Each trace is assembled on its own, so the asking trace's call is written with no result and status ``ok``.
This keeps such traces (bounded) and, when a later trace of the same conversation feeds back a result for one
of their calls, rebuilds the earlier trace together with it (``reconstruct`` completes a request-only call
from the later traces it is given) and hands it on again, to replace what was written for it. The same
conversation: the later trace's input holds the result under the call's id (and, when it names the call, under
its tool name), the user request that started the asking run, and both come from the same service (call ids
are not unique everywhere: some frameworks number them per run).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agentotel_eval.collector.process.completed import CompletedTrace
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct.declared import Conventions
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.reconstruct.pipeline import FedBack, results_fed_back

Reconstruct = Callable[[Sequence[SpanRecord], Sequence[LogRecord]], list[AgentRun]]

#: traces kept waiting for a result, at most, and the spans they hold at most (the oldest go first)
MAX_WAITING_TRACES = 512
MAX_WAITING_SPANS = 20_000
#: a later trace further from the asking one than this (span time) is not looked at for its results
MAX_GAP_NS = 15 * 60 * 1_000_000_000


@dataclass(slots=True)
class _Asked:
    trace: CompletedTrace  # as first completed (its spans and logs; its window)
    call_ids: set[str]  # its calls that have no result yet
    names: dict[str, str]  # call id -> tool name, of those calls
    inputs: frozenset[str]  # the user requests that started its runs
    service: str | None
    answers: list[CompletedTrace] = field(default_factory=list)  # the later traces that fed some back

    @property
    def spans(self) -> int:
        return len(self.trace.spans) + sum(len(t.spans) for t in self.answers)


def waiting_call_ids(runs: Sequence[AgentRun]) -> set[str]:
    """The call ids of calls rebuilt from the model's request alone that got no result
    from anything recorded."""
    return {
        c.call_id
        for run in runs
        for c in run.tool_calls
        if c.call_id and c.output is None and (c.sources or {}).get("status") == "default"
    }


class LaterResults:
    """See the module docstring. ``complete`` is called with each completed trace, in completion order. A
    trace stays known (bounded, oldest out first) after its calls got their results, so that completed again
    (a late span) it is rebuilt with them again."""

    def __init__(self, reconstruct: Reconstruct, conventions: Conventions) -> None:
        self._reconstruct = reconstruct
        self._conventions = conventions
        self._asked: OrderedDict[str, _Asked] = OrderedDict()
        self._by_call: dict[str, str] = {}  # call id still without a result -> the trace that asked for it
        self._spans = 0
        #: earlier traces rebuilt with a later trace's results
        self.rebuilt = 0

    def complete(self, trace: CompletedTrace) -> list[CompletedTrace]:
        """The earlier traces this one gives results to, rebuilt with it (with ``replace``); ``trace`` itself
        rebuilt with the later traces known to answer it when it is completed again; in that order."""
        out: list[CompletedTrace] = []
        known = self._asked.get(trace.trace_id)
        if known is not None and known.answers:  # completed again (a late span): with what was fed back since
            out.append(dataclasses.replace(trace, runs=self._runs_with(trace, known.answers)))
        if self._by_call:
            fed = results_fed_back(trace.spans, trace.logs, self._conventions)
            service = _service(trace)
            asking = {
                t
                for c, name in fed.results.items()
                if (t := self._by_call.get(c)) is not None
                and t != trace.trace_id
                and self._same_conversation(self._asked[t], c, name, fed, service)
            }
            for trace_id in sorted(asking, key=lambda t: self._asked[t].trace.lo_ns):
                asked = self._asked.get(trace_id)  # (gone when answering an earlier one made room)
                if asked is not None and trace.lo_ns - asked.trace.hi_ns <= MAX_GAP_NS:
                    out.append(self._answer(asked, trace))
        if known is None:
            self._keep(trace)
        return out

    @staticmethod
    def _same_conversation(
        asked: _Asked, call_id: str, name: str | None, fed: FedBack, service: str | None
    ) -> bool:
        return (
            asked.service == service
            and (name is None or asked.names.get(call_id) == name)
            and not asked.inputs.isdisjoint(fed.user_texts)
        )

    def _answer(self, asked: _Asked, later: CompletedTrace) -> CompletedTrace:
        asked.answers.append(later)
        self._spans += len(later.spans)
        runs = self._runs_with(asked.trace, asked.answers)
        self.rebuilt += 1
        for call_id in asked.call_ids - waiting_call_ids(runs):
            asked.call_ids.discard(call_id)
            if self._by_call.get(call_id) == asked.trace.trace_id:
                del self._by_call[call_id]
        self._bound()
        return dataclasses.replace(asked.trace, runs=runs, replace=True)

    def _runs_with(self, trace: CompletedTrace, later: list[CompletedTrace]) -> tuple[AgentRun, ...]:
        spans = [*trace.spans, *(s for t in later for s in t.spans)]
        logs = [*trace.logs, *(r for t in later for r in t.logs)]
        return tuple(r for r in self._reconstruct(spans, logs) if r.trace_id == trace.trace_id)

    def _keep(self, trace: CompletedTrace) -> None:
        ids = waiting_call_ids(trace.runs)
        inputs = frozenset(r.input.strip() for r in trace.runs if r.input)
        if not ids or not inputs:  # (no request recorded: nothing tells its conversation's later traces)
            return
        names = {c.call_id: c.name for r in trace.runs for c in r.tool_calls if c.call_id in ids}
        self._asked[trace.trace_id] = _Asked(trace, set(ids), names, inputs, _service(trace))
        self._spans += len(trace.spans)
        for call_id in ids:
            self._by_call[call_id] = trace.trace_id
        self._bound()

    def _bound(self) -> None:
        while self._asked and (len(self._asked) > MAX_WAITING_TRACES or self._spans > MAX_WAITING_SPANS):
            _, oldest = self._asked.popitem(last=False)
            self._spans -= oldest.spans
            for call_id in oldest.call_ids:
                if self._by_call.get(call_id) == oldest.trace.trace_id:
                    del self._by_call[call_id]


def _service(trace: CompletedTrace) -> str | None:
    return next((s.service_name for s in trace.spans if s.service_name), None)


def merge(completed: list[CompletedTrace], redone: Sequence[CompletedTrace]) -> None:
    """Traces rebuilt with a later trace's results: in place of their entry in this batch, else added (their
    rows written before are replaced)."""
    at = {t.trace_id: i for i, t in enumerate(completed)}
    for trace in redone:
        i = at.get(trace.trace_id)
        if i is None:
            at[trace.trace_id] = len(completed)
            completed.append(trace)
        else:  # not written yet: whether it replaces rows is still its own
            completed[i] = dataclasses.replace(trace, replace=completed[i].replace)
