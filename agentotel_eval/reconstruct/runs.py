"""Which spans are agent runs, and which LLM and tool spans belong to each.

Rules (docs/reconstruction.md), applied to one trace tree:

1. Every span carrying a run marker opens a run scope; every tool-execution span opens a tool scope. Each
   LLM / tool span belongs to the nearest enclosing scope (a tool span that is also a run marker is a call of
   the outer run AND the root of its own).
2. An orphan (its parent id is not in the trace) is owned by the innermost run span that encloses it in time,
   or tool span when one of them holds LLM calls (a sub-agent's spans); failing that it stays at top level.
   So a missing middle span does not move calls out of their run.
3. A tool scope whose own spans include an LLM call and tool-call evidence is an agent run hidden inside a
   tool (agent-as-tool with no run marker: OpenInference LangChain tags the sub-graph as a CHAIN): it becomes
   an implicit run; so does one whose tool spans record other calls than its own (call ids of their own, or
   other tools with other arguments: a sub-agent whose model calls are not recorded as LLM spans). Any other
   tool scope dissolves: the runs inside it move up, but its own tool and LLM spans are the tool's internals
   (a helper it called, or the same call recorded by a second instrumentation), not calls of the agent.
4. Wrappers collapse: a run scope with no LLM or tool span of its own and exactly one nested run is the same
   run (a workflow span around one agent; OpenLLMetry tagging two spans for one run). A content-free run with
   several nested runs (a multi-agent workflow) is a container, not a run of its own: its nested runs are.
5. Evidence outside every run (tool spans, or LLM spans that requested tools, or LLM spans offered tools under
   an application span of their own) makes a fallback run anchored at the trace's root (plain client loops; an
   application span with no GenAI attributes, whose agent needed no tool or whose capture recorded no call).
   An application calling a model with no tools offered is no agent run.
6. A run with no LLM or tool span and no nested run is dropped when another run of the trace holds them
   (OpenLLMetry-JS tags every LangChain runnable as a workflow, and with the parent links lost each one is
   an empty span beside the calls).
7. A step is not a run: a nested run whose LLM calls requested tools, with no tool span and no run of its own,
   inside a run that executes tools itself, is one step of that run (OpenLIT marks every LangGraph step as an
   ``invoke_agent`` span; the tools it asks for run beside it). Its LLM spans join the enclosing run. A real
   sub-agent runs the tools it requests inside its own span. Inside a tool span that runs tools itself, such
   steps are a sub-agent's (a delegating tool whose agent OpenLIT records as steps): with them the tool scope
   is an agent loop (rule 3), and its own run.
8. A recorded conversation is a run: in a trace with no run otherwise, the span (not an LLM or tool span)
   whose output is the conversation with the most tool calls (a pipeline instrumentation tracing an agent as
   one plain step) is a run, anchored on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct.context import RecordedCall
from agentotel_eval.reconstruct.spans import NO_ROLE, Role
from agentotel_eval.reconstruct.transcripts import find_transcript
from agentotel_eval.reconstruct.tree import TraceTree, span_order, unreachable


@dataclass(slots=True, eq=False, init=False)
class Scope:
    """A run (or, during detection, a tool span) and the spans it owns directly."""

    span: SpanRecord | None  # None for the trace's top level
    kind: str  # run | tool | top
    convention: str
    parent: Scope | None  # during detection only: cleared once the runs are found
    chain: list[SpanRecord]  # collapsed wrapper spans, outermost first
    llm_spans: list[SpanRecord]
    tool_spans: list[SpanRecord]
    children: list[Scope]
    internal: list[SpanRecord]  # tool/LLM spans inside a (non-agent) tool span
    roots: list[SpanRecord]  # top level only: roots that brought evidence
    container_span_id: str | None  # the multi-agent workflow span this run sits in, if any

    def __init__(
        self,
        span: SpanRecord | None,
        kind: str,
        convention: str,
        parent: Scope | None = None,
        chain: list[SpanRecord] | None = None,
    ) -> None:
        # by hand: one scope per run and tool span, and the generated __init__ calls a factory per list
        self.span, self.kind, self.convention, self.parent = span, kind, convention, parent
        self.chain = [] if chain is None else chain
        self.llm_spans, self.tool_spans, self.children, self.internal, self.roots = [], [], [], [], []
        self.container_span_id = None

    @property
    def has_content(self) -> bool:
        return bool(self.llm_spans or self.tool_spans)

    @property
    def anchor(self) -> SpanRecord:
        return self.chain[0]


@dataclass(slots=True)
class TraceRuns:
    runs: list[Scope]  # emitted runs, in (start, span id) order
    parent_run: dict[int, Scope | None]  # id(run) -> nearest emitted enclosing run
    llm_parent: dict[str, str]  # LLM span id -> nearest LLM ancestor span id (same inference recorded twice)


def find_runs(
    tree: TraceTree,
    roles: dict[str, Role],
    requests_tools: Callable[[SpanRecord], bool],
    offers_tools: Callable[[SpanRecord], bool] = lambda span: False,
    recorded_call: Callable[[SpanRecord], RecordedCall | None] = lambda span: None,
) -> TraceRuns:
    """The runs of one trace. ``requests_tools(llm_span)`` says whether an LLM span's output asked for tools,
    ``offers_tools(llm_span)`` whether the model was offered any, ``recorded_call(tool_span)``
    the call it records."""
    extra_children = _reattach_orphans(tree, roles)
    attached, by_parent = extra_children.attached, extra_children.by_parent
    top = Scope(None, "top", "root")
    scopes: list[Scope] = []
    llm_parent: dict[str, str] = {}
    stack: list[tuple[SpanRecord, Scope, SpanRecord, str | None]] = []
    for root in reversed(tree.roots):
        if root.span_id not in attached:
            stack.append((root, top, root, None))
    reached: set[str] = set()  # re-attached orphans actually walked
    walked = 0
    children_of = tree.children.get
    role_of = roles.get
    push = stack.append
    while True:
        while stack:
            span, owner, root, llm_above = stack.pop()
            span_id = span.span_id
            walked += 1
            if attached and span_id in attached:
                reached.add(span_id)
            kids = children_of(span_id, ())
            if by_parent and (extra := by_parent.get(span_id)):
                kids = sorted([*kids, *extra], key=span_order)
            inner, below = owner, llm_above
            role = role_of(span_id)
            if (
                role is not None
            ):  # a run, tool or LLM span (a span with none passes its scope on to its children)
                llm, tool, run = role.llm, role.tool, role.run
                if llm:  # (an LLM span is never a tool span: one of them at most, see classify)
                    owner.llm_spans.append(span)
                    if llm_above:
                        llm_parent[span_id] = llm_above
                    below = span_id
                elif tool:
                    owner.tool_spans.append(span)
                if owner is top and (tool is not None or llm is not None):  # evidence outside every run
                    top.roots.append(root)
                if run or (tool and kids):  # a leaf tool span owns nothing: no scope for it
                    inner = Scope(span, "run" if run else "tool", run or tool or "", owner, [span])
                    owner.children.append(inner)
                    scopes.append(inner)
            if kids:
                for child in reversed(kids):
                    push((child, inner, root, below))
        lost = sorted((tree.spans[i] for i in attached - reached), key=span_order) if attached else None
        if (
            lost
        ):  # orphans re-attached under each other (a time-containment loop): walk the earliest as a root
            attached.discard(lost[0].span_id)
            for kids in by_parent.values():
                if lost[0] in kids:
                    kids.remove(lost[0])
            push((lost[0], top, lost[0], None))
            continue
        if walked >= len(tree.spans):
            break  # every span reached: no parent loop (the normal case)
        looped = unreachable(tree, walked)
        if not looped:
            break
        cut = looped[0]  # a parent loop (a -> b -> a): cut it at its earliest span, which becomes a root
        siblings = tree.children.get(cut.parent_span_id or "", [])
        if cut in siblings:
            siblings.remove(cut)
        tree.roots.append(cut)
        tree.roots.sort(key=span_order)
        push((cut, top, cut, None))
    for scope in reversed(scopes):  # innermost first
        if scope.kind == "tool":
            _resolve_tool_scope(scope, tree, requests_tools, recorded_call)
    emitted: list[Scope] = []
    parent_run: dict[int, Scope | None] = {}
    if top.tool_spans or (
        top.llm_spans
        and (
            any(requests_tools(s) for s in top.llm_spans)
            or (
                any(not roles.get(r.span_id, NO_ROLE).llm for r in top.roots)
                and any(map(offers_tools, top.llm_spans))
            )
        )
    ):
        anchor = min(top.roots, key=span_order)
        if tree.is_orphan(anchor):  # its parent is missing: the trace's true root that was open when it began
            holders = [
                r for r in tree.roots if not r.parent_span_id and r.start_ns <= anchor.start_ns <= r.end_ns
            ]
            if holders:
                anchor = min(holders, key=span_order)
        top.kind, top.span, top.chain = "run", anchor, [anchor]
    steps: dict[int, set[str]] = {}  # id(run) -> the span names of the steps folded into it
    for scope in scopes:
        if scope.kind == "run" and scope.parent is not None:
            _fold_step(scope, requests_tools, steps)
    _emit(top, None, None, emitted, parent_run)
    if len(emitted) > 1:  # drop runs with nothing in them, when another run holds the evidence
        kept = [
            s
            for s in emitted
            if s.llm_spans or s.tool_spans or any(parent_run.get(id(o)) is s for o in emitted)
        ]
        if kept and len(kept) < len(emitted):
            emitted = kept
    for (
        scope
    ) in scopes:  # the parent links were only for the walk: without them (a parent <-> children cycle)
        scope.parent = None  # the trace's scopes are freed by reference counting, not left to the cyclic GC
    if len(emitted) > 1:
        emitted.sort(key=lambda s: span_order(s.anchor))
    return TraceRuns(emitted, parent_run, llm_parent)


def transcript_runs(tree: TraceTree, roles: dict[str, Role]) -> TraceRuns | None:
    """Rule 8: the run of a trace that has none otherwise but whose steps recorded a
    conversation with tool calls."""
    found = [t for root in tree.roots if (t := find_transcript(tree, root, roles)) is not None]
    if not found:
        return None
    best = max(found, key=lambda t: (len(t.requests), span_order(t.span)))
    scope = Scope(best.span, "run", "transcript", None, [best.span])
    return TraceRuns([scope], {id(scope): None}, {})


def _resolve_tool_scope(
    scope: Scope,
    tree: TraceTree,
    requests_tools: Callable[[SpanRecord], bool],
    recorded_call: Callable[[SpanRecord], RecordedCall | None] = lambda span: None,
) -> None:
    """An agent loop inside a tool becomes an implicit run; otherwise the tool scope
    merges into its parent."""
    assert scope.parent is not None and scope.span is not None
    if not scope.llm_spans and scope.tool_spans and _other_calls_inside(scope, recorded_call):
        kids = tree.children.get(scope.span.span_id, [])
        anchor = kids[0] if len(kids) == 1 and not any(kids[0] is t for t in scope.tool_spans) else scope.span
        scope.kind, scope.convention, scope.chain = "run", "implicit", [anchor]
        return
    if scope.tool_spans and not scope.llm_spans:  # its model calls may be in step spans (rule 7) under it
        steps = [c for c in scope.children if _step_like(c)]
        if any(requests_tools(s) for c in steps for s in c.llm_spans):
            for step in steps:
                scope.llm_spans.extend(step.llm_spans)
                scope.internal.extend(step.internal)
                scope.children.remove(step)
                step.kind = "step"
    if scope.llm_spans and (scope.tool_spans or any(requests_tools(s) for s in scope.llm_spans)):
        kids = tree.children.get(scope.span.span_id, [])
        anchor = kids[0] if len(kids) == 1 else scope.span  # the sub-agent's own span when there is one
        scope.kind, scope.convention, scope.chain = "run", "implicit", [anchor]
        return
    parent = scope.parent
    parent.internal.extend((*scope.tool_spans, *scope.llm_spans, *scope.internal))
    at = parent.children.index(scope)
    parent.children[at : at + 1] = scope.children
    for child in scope.children:
        child.parent = parent


def _other_calls_inside(scope: Scope, recorded_call: Callable[[SpanRecord], RecordedCall | None]) -> bool:
    """Whether tool spans under this one record other calls than this one: call ids a model gave them, or
    other tools with other arguments. An agent ran inside this tool and made them, even when its model calls
    are not recorded as such (LlamaIndex's own OpenTelemetry: a sub-agent's ``FunctionAgent.run`` inside a
    tool; CrewAI's OpenInference wrappers: a coworker's tools inside ``Delegate work to coworker``)."""
    assert scope.span is not None
    own = recorded_call(scope.span)
    if own is None:
        return False
    for span in scope.tool_spans:
        inner = recorded_call(span)
        if inner is not None and inner.other_than(own):
            return True
    return False


def _step_like(scope: Scope) -> bool:
    """A run scope that holds model calls and nothing else: a step of the loop around it (rule 7)."""
    return scope.kind == "run" and bool(scope.llm_spans) and not scope.tool_spans and not scope.children


def _fold_step(
    scope: Scope, requests_tools: Callable[[SpanRecord], bool], steps: dict[int, set[str]]
) -> None:
    """Rule 7: a step of the enclosing run (its LLM calls asked for tools that run beside it) joins that run,
    and so do the later spans of the same step name (the last step answers without asking for tools)."""
    parent = scope.parent
    if (
        parent is None
        or parent.kind != "run"
        or not parent.tool_spans
        or scope.tool_spans
        or scope.children
        or not scope.llm_spans
        or scope.span is None
    ):
        return
    name = scope.span.name
    if name not in steps.get(id(parent), ()) and not any(requests_tools(s) for s in scope.llm_spans):
        return
    steps.setdefault(id(parent), set()).add(name)
    parent.llm_spans.extend(scope.llm_spans)
    parent.internal.extend(scope.internal)
    parent.children.remove(scope)
    scope.kind = "step"


def _emit(
    scope: Scope,
    enclosing: Scope | None,
    container: str | None,
    out: list[Scope],
    parent_run: dict[int, Scope | None],
) -> None:
    """Collapse wrappers, drop containers, and list runs with their nearest emitted enclosing run."""
    if scope.kind == "run":
        # (``has_content`` spelled out here: this runs for every run)
        while (
            not (scope.llm_spans or scope.tool_spans)
            and len(scope.children) == 1
            and scope.children[0].kind == "run"
        ):
            inner = scope.children[0]
            scope.chain.extend(inner.chain)
            scope.llm_spans, scope.tool_spans, scope.children = (
                inner.llm_spans,
                inner.tool_spans,
                inner.children,
            )
            for child in scope.children:
                child.parent = scope
        if len(scope.children) > 1 and not (
            scope.llm_spans or scope.tool_spans
        ):  # multi-agent workflow: a container
            for child in scope.children:
                _emit(child, enclosing, scope.anchor.span_id, out, parent_run)
            return
        scope.container_span_id = container
        out.append(scope)
        parent_run[id(scope)] = enclosing
        enclosing = scope
    for child in scope.children:
        _emit(child, enclosing, None, out, parent_run)


@dataclass(slots=True, init=False)
class _Reattached:
    by_parent: dict[str, list[SpanRecord]]
    attached: set[str]

    def __init__(self) -> None:  # by hand: one per trace, no factory calls
        self.by_parent, self.attached = {}, set()


def _reattach_orphans(tree: TraceTree, roles: dict[str, Role]) -> _Reattached:
    """Orphans go under the innermost enclosing (in time) run span, or tool span running an agent inside;
    never under their own descendants.

    A plain tool span owns no orphan: an orphan tool span inside an overlapping parallel tool span would
    otherwise pass for that tool's internals. Orphans holding LLM calls are placed first, so a tool span that
    receives a sub-agent's LLM calls then counts as running an agent for the other orphans.
    """
    out = _Reattached()
    spans = tree.spans
    for root in tree.roots:  # (a loop, not a comprehension, for the usual case: no orphan at all)
        if root.parent_span_id and root.parent_span_id not in spans:
            break
    else:
        return out
    orphans = [r for r in tree.roots if r.parent_span_id and r.parent_span_id not in spans]  # tree.is_orphan
    runs = [s for s in tree.spans.values() if roles.get(s.span_id, NO_ROLE).run]
    tools = [s for s in tree.spans.values() if (r := roles.get(s.span_id, NO_ROLE)).tool and not r.run]
    agent_tools = [t for t in tools if _holds_llm(tree, roles, t)]
    with_llm = [o for o in orphans if _holds_llm(tree, roles, o)]
    # a run span with nothing under it (OpenLIT's LangGraph step span beside the agent doing the work) takes
    # an orphan only when no other run encloses it
    idle = {r.span_id for r in runs if not tree.children.get(r.span_id)}
    for orphan in (*with_llm, *(o for o in orphans if not any(o is w for w in with_llm))):
        holds_llm = any(orphan is w for w in with_llm)
        best: SpanRecord | None = None
        for target in (*runs, *(tools if holds_llm else agent_tools)):
            if (
                target.start_ns > orphan.start_ns
                or target.end_ns < orphan.end_ns
                or _descends_from(tree, target, orphan)
            ):
                continue
            if best is None or (target.span_id in idle, target.end_ns - target.start_ns, target.span_id) < (
                best.span_id in idle,
                best.end_ns - best.start_ns,
                best.span_id,
            ):
                best = target
        if best is not None:
            out.by_parent.setdefault(best.span_id, []).append(orphan)
            out.attached.add(orphan.span_id)
            if (
                holds_llm
                and roles.get(best.span_id, NO_ROLE).tool
                and not any(best is t for t in agent_tools)
            ):
                agent_tools.append(best)
    return out


def _holds_llm(tree: TraceTree, roles: dict[str, Role], span: SpanRecord) -> bool:
    stack = [span]
    while stack:
        current = stack.pop()
        if roles.get(current.span_id, NO_ROLE).llm:
            return True
        stack.extend(tree.children.get(current.span_id, ()))
    return False


def _descends_from(tree: TraceTree, span: SpanRecord, ancestor: SpanRecord) -> bool:
    seen: set[str] = set()
    current: SpanRecord | None = span
    while current is not None and current.span_id not in seen:
        if current.span_id == ancestor.span_id:
            return True
        seen.add(current.span_id)
        current = tree.parent(current)
    return False
