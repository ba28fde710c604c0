"""A run's score against a trajectory spec, with everything a person needs to see why.

score = matched required weight / required weight (along the chosen alternative of each ``any_of``); with
``extra = "penalize"`` the F1 of that and of precision (matched calls / all calls). Violations fail the run
whatever the score: a forbidden call, more calls than ``max_calls``, an extra call under ``extra = "forbid"``,
a ``parallel`` group split over LLM turns. ``details`` is JSON-ready: every step with the calls it took (or
missing) and each constrained key's verdict and reason, the extra calls, and the violations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentotel_eval.frozen import freeze
from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory.align import Alignment, KeyCheck, align
from agentotel_eval.trajectory.spec import Step, TrajectorySpec

MATCHED, PARTIAL, MISSING, SKIPPED, NOT_TAKEN = "matched", "partial", "missing", "skipped", "not_taken"
_NEAR_MISSES = 3


@dataclass(frozen=True, slots=True)
class TrajectoryOutcome:
    score: float
    recall: float
    precision: float
    violations: tuple[dict[str, Any], ...]
    details: dict[str, Any] = field(repr=False)
    alignment: Alignment = field(repr=False)

    @property
    def passed_checks(self) -> bool:
        return not self.violations


def _check_json(check: KeyCheck) -> dict[str, Any]:
    out = {"key": check.key, "ok": check.verdict, "expected": check.expected}
    if check.reason:
        out["reason"] = check.reason
    return out


class _Report:
    """Walks the spec once with the alignment, giving each step its status, calls and checks."""

    def __init__(self, spec: TrajectorySpec, calls: Sequence[ToolCall], alignment: Alignment) -> None:
        self.calls, self.alignment, self.memo = calls, alignment, spec.memo
        leaf_of = spec.memo.get("leaf_of")
        if leaf_of is None:
            leaf_of = spec.memo["leaf_of"] = {id(step): k for k, step in enumerate(alignment.leaves)}
        self.leaf_of: dict[int, int] = leaf_of
        self.taken: dict[int, list[int]] = {}
        for j, leaf in enumerate(alignment.taken_by):
            if leaf is not None:
                self.taken.setdefault(leaf, []).append(j)
        self.rows: list[dict[str, Any]] = []
        self.missing: list[dict[str, Any]] = []

    def walk(self, step: Step, depth: int, need: int, taken: bool) -> tuple[str, list[int]]:
        """Adds the rows of ``step`` and below; ``need`` is how many calls it must take (repeats of its groups
        multiply), ``taken`` whether its ``any_of`` alternatives (if any above) chose it."""
        row = dict(self._static_row(step, depth))
        self.rows.append(row)
        need = need * step.least
        if step.kind == "tool":
            leaf = self.leaf_of[id(step)]
            took = self.taken.get(leaf, [])
            row["calls"] = took
            if took:
                row["checks"] = {str(j): [_check_json(c) for c in self.alignment.checks(j)] for j in took
                                 if step.args is not None}
            status = self._status(len(took), need, taken)
            if status in (MISSING, PARTIAL):
                near = self._near_misses(step, leaf)
                if near:
                    row["near_misses"] = near
                self.missing.append(row)
            row["status"] = status
            return status, took
        chosen = None
        if step.kind == "any_of":
            for k, member in enumerate(step.members):
                if any(self.taken.get(leaf) for leaf in self._leaves_under(member)):
                    chosen = k
                    break
            if chosen is not None:
                row["chosen"] = chosen
        statuses: list[str] = []
        took_all: list[int] = []
        for k, member in enumerate(step.members):
            member_taken = taken and (step.kind != "any_of" or k == chosen)
            status, took = self.walk(member, depth + 1, need, member_taken)
            took_all.extend(took)
            if member.least > 0 or status not in (SKIPPED, NOT_TAKEN):
                statuses.append(status)
        row["calls"] = sorted(took_all)
        if not taken:
            row["status"] = NOT_TAKEN
        elif need == 0 or (step.kind == "any_of" and any(m.least == 0 for m in step.members)):
            row["status"] = MATCHED if took_all else SKIPPED
        elif step.kind == "any_of":
            row["status"] = statuses[chosen] if chosen is not None else MISSING
        elif all(s in (MATCHED, SKIPPED) for s in statuses):
            row["status"] = MATCHED
        else:
            row["status"] = PARTIAL if took_all else MISSING
        if row["status"] == MISSING and step.kind == "any_of":
            self.missing.append(row)
        return row["status"], took_all

    def _static_row(self, step: Step, depth: int) -> dict[str, Any]:
        """What a step's row says whatever the run: built once per spec (rows are copied from it)."""
        rows = self.memo.setdefault("rows", {})
        row = rows.get(id(step))
        if row is None:
            row = {"path": step.path, "kind": step.kind, "label": step.label, "depth": depth}
            if step.id is not None:
                row["id"] = step.id
            if step.optional:
                row["optional"] = True
            if (step.count_min, step.count_max) != (1, 1):
                row["count"] = {"min": step.count_min} if step.count_max is None else {"min": step.count_min,
                                                                                       "max": step.count_max}
            if step.weight is not None:
                row["weight"] = step.weight
            rows[id(step)] = row
        return row

    def _leaves_under(self, step: Step) -> tuple[int, ...]:
        under = self.memo.setdefault("leaves_under", {})
        known = under.get(id(step))
        if known is None:
            known = under[id(step)] = tuple(self.leaf_of[id(s)] for s in step.walk() if s.kind == "tool")
        return known

    @staticmethod
    def _status(took: int, need: int, taken: bool) -> str:
        if not taken:
            return NOT_TAKEN if not took else MATCHED
        if need == 0:
            return MATCHED if took else SKIPPED
        return MATCHED if took >= need else PARTIAL if took else MISSING

    def _near_misses(self, step: Step, leaf: int) -> list[dict[str, Any]]:
        """Calls of the step's tool it did not take, with the checks that kept them out."""
        out: list[dict[str, Any]] = []
        ctx = self.alignment.context
        for j, call in enumerate(self.calls):
            if call.name != step.tool or self.alignment.taken_by[j] == leaf:
                continue
            checks = ctx.checks(step, j, self.alignment.bindings[j])
            other = self.alignment.taken_by[j]
            entry: dict[str, Any] = {"call": j, "checks": [_check_json(c) for c in checks if c.verdict is not True]}
            if other is not None:
                entry["taken_by"] = self.alignment.leaves[other].path
            out.append(entry)
            if len(out) == _NEAR_MISSES:
                break
        return out


def _violations(spec: TrajectorySpec, calls: Sequence[ToolCall], alignment: Alignment,
                extra: list[int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    ctx = alignment.context
    for j, call in enumerate(calls):
        for rule in spec.forbid:
            if call.name != rule.tool:
                continue
            checks = ctx.checks(rule, j, alignment.bindings[j])
            if any(c.verdict is False for c in checks):
                continue
            undecided = [c.key for c in checks if c.verdict is None]
            violation = {"type": "forbidden", "call": j, "rule": rule.path,
                         "message": f"call #{j + 1} {call.name} is forbidden ({rule.path})"}
            if undecided:  # the rule's arguments were not recorded: it may not apply, so it is not a violation
                continue
            out.append(violation)
            break
    if spec.max_calls is not None and len(calls) > spec.max_calls:
        out.append({"type": "max_calls", "calls": len(calls), "max": spec.max_calls,
                    "message": f"{len(calls)} calls, more than max_calls = {spec.max_calls}"})
    if spec.extra == "forbid" and extra:
        names = ", ".join(f"#{j + 1} {calls[j].name}" for j in extra[:5]) + (" …" if len(extra) > 5 else "")
        out.append({"type": "extra_forbidden", "calls": extra,
                    "message": f"{len(extra)} call(s) the spec does not match, with extra = \"forbid\": {names}"})
    for path, j in alignment.splits:
        out.append({"type": "parallel_split", "step": path, "call": j,
                    "message": f"parallel group {path} was split over LLM turns (call #{j + 1})"})
    if spec.separate_turns:
        out.extend(_merged_turns(spec, calls, alignment))
    return out


def _merged_turns(spec: TrajectorySpec, calls: Sequence[ToolCall], alignment: Alignment) -> list[dict[str, Any]]:
    """Top-level steps whose calls came from one LLM turn (``separate_turns``): one violation per such turn."""
    top = spec.memo.get("top_of_leaf")
    if top is None:
        leaf_of = {id(step): k for k, step in enumerate(alignment.leaves)}
        top = spec.memo["top_of_leaf"] = {leaf_of[id(s)]: k for k, member in enumerate(spec.root.members)
                                          for s in member.walk() if s.kind == "tool"}
    steps_of: dict[Any, list[int]] = {}
    first_call: dict[Any, int] = {}
    for j, leaf in enumerate(alignment.taken_by):
        turn = calls[j].llm_turn
        if leaf is None or turn is None:
            continue
        step = top[leaf]
        steps = steps_of.setdefault(turn, [])
        if step not in steps:
            steps.append(step)
        first_call.setdefault(turn, j)
    out = []
    for turn, steps in steps_of.items():
        if len(steps) > 1:
            paths = [spec.root.members[k].path for k in steps]
            out.append({"type": "turns_merged", "steps": paths, "call": first_call[turn],
                        "message": f"{' and '.join(paths)} came in one LLM turn (call #{first_call[turn] + 1} on); "
                                   f"each is a turn of its own (separate_turns)"})
    return out


def _call_row(j: int, call: ToolCall, step: str | None) -> dict[str, Any]:
    # keys with no value are left out, not written as null: a row's JSON is checked for NaN only when it holds one
    row: dict[str, Any] = {"index": j, "tool": call.name}
    if step is not None:
        row["step"] = step
    if call.llm_turn is not None:
        row["turn"] = call.llm_turn
    return row


def _frozen_written(spec: TrajectorySpec) -> Any:
    """The written spec, frozen once: every result carries it, and freezing a result skips what is frozen."""
    known = spec.memo.get("frozen_written")
    if known is None:
        known = spec.memo["frozen_written"] = freeze(spec.written)
    return known


def _has_parallel(spec: TrajectorySpec) -> bool:
    known = spec.memo.get("has_parallel")
    if known is None:
        known = spec.memo["has_parallel"] = any(s.kind == "parallel" for s in spec.steps())
    return bool(known)


def score_trajectory(spec: TrajectorySpec, calls: Sequence[ToolCall], threshold: float = 1.0,
                     budget: int | None = None) -> TrajectoryOutcome:
    """Score ``calls`` (in run order, with their LLM turns) against ``spec`` (``budget``: the alignment's work
    budget, ``align.WORK_BUDGET`` unless given)."""
    alignment = align(spec, calls, budget)
    extra = [j for j, leaf in enumerate(alignment.taken_by) if leaf is None]
    matched_calls = len(calls) - len(extra)
    recall = alignment.recall
    precision = matched_calls / len(calls) if calls else 1.0
    if spec.extra == "penalize":
        score = 0.0 if recall + precision == 0 else 2 * recall * precision / (recall + precision)
    else:
        score = recall
    report = _Report(spec, calls, alignment)
    for member in spec.root.members:
        report.walk(member, 0, 1, True)
    violations = _violations(spec, calls, alignment, extra)
    details: dict[str, Any] = {
        "score": score, "recall": recall, "precision": precision,
        "matched_weight": float(alignment.matched_weight), "required_weight": alignment.required / alignment.unit,
        "extra_mode": spec.extra, "threshold": threshold,
        "steps": report.rows,
        "calls": [_call_row(j, call, alignment.leaves[leaf].path if leaf is not None else None)
                  for j, (call, leaf) in enumerate(zip(calls, alignment.taken_by, strict=True))],
        "extra": extra,
        "violations": violations,
        "spec": _frozen_written(spec),
    }
    if spec.preset:
        details["preset"] = spec.preset
    if alignment.approximate is not None:  # the score is a lower bound: a real alignment, maybe not the best
        details["approximate"] = True
        details["approximate_reason"] = alignment.approximate
    if any(c.llm_turn is None for c in calls) and (_has_parallel(spec) or spec.separate_turns):
        details["turns_not_recorded"] = True  # a parallel group cannot be checked for calls with no turn
    details["reason"] = reason_text(details, calls)
    return TrajectoryOutcome(score, recall, precision, tuple(violations), details, alignment)


def _fmt(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")


def reason_text(details: dict[str, Any], calls: Sequence[ToolCall]) -> str:
    """One paragraph: the score's parts, what is missing and why, extra calls, violations."""
    parts = [f"Matched {_fmt(details['matched_weight'])} of {_fmt(details['required_weight'])} required weight"]
    if details["extra_mode"] == "penalize":
        parts[0] += f"; precision {_fmt(details['precision'])} ({len(calls) - len(details['extra'])} of " \
                    f"{len(calls)} calls matched), F1 {_fmt(details['score'])}"
    parts[0] += "."
    missing = [r for r in details["steps"] if r["status"] in (MISSING, PARTIAL) and r["kind"] == "tool"]
    missing += [r for r in details["steps"] if r["status"] == MISSING and r["kind"] == "any_of"]
    if missing:
        shown = []
        for row in missing[:4]:
            text = f"{row['path']} {row['label']}" + (" (partly)" if row["status"] == PARTIAL else "")
            for near in row.get("near_misses", ())[:1]:
                failing = near["checks"][:1]
                if failing:
                    text += f" [call #{near['call'] + 1}: {failing[0]['key']}: {failing[0].get('reason', 'failed')}]"
                elif "taken_by" in near:
                    text += f" [call #{near['call'] + 1} went to {near['taken_by']}]"
            shown.append(text)
        parts.append("Missing: " + "; ".join(shown) + (" …" if len(missing) > 4 else "") + ".")
    if details["extra"]:
        counts: dict[str, int] = {}
        for j in details["extra"]:
            counts[calls[j].name] = counts.get(calls[j].name, 0) + 1
        listed = ", ".join(name if n == 1 else f"{name} ×{n}" for name, n in counts.items())
        penalised = {"ignore": "not penalised", "penalize": "penalised", "forbid": "forbidden"}[details["extra_mode"]]
        parts.append(f"Extra calls ({penalised}): {listed}.")
    if details.get("approximate"):
        parts.append(f"Approximate: {details['approximate_reason']}.")
    if details["violations"]:
        parts.append("Violations: " + "; ".join(v["message"] for v in details["violations"][:4])
                     + (" …" if len(details["violations"]) > 4 else "") + ".")
    return " ".join(parts)
