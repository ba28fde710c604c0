"""The report of a scored run (``details``), in two parts: what the run's shape determines, and
the run's own checks.

A ``Report`` is built from an alignment: every step's row (path, kind, label, depth, modifiers, the calls it
took, its status, the chosen alternative of an ``any_of``), which calls are extra, the violations that do not
read arguments (``max_calls``, ``extra_forbidden``, ``parallel_split``, ``turns_merged``), and each call's
step. None of that reads an argument value: two runs whose calls have the same tools, pass and fail the same
steps' matchers and (where turns matter) come from LLM turns alike, have the same report. What does read
values is filled in for each run (``Report.details``): the argument checks of the calls a step took and of its
near misses, and the forbid rules. Shared parts are frozen (``agentotel_eval.frozen``), so results that share
them cannot change each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentotel_eval.frozen import FrozenDict, FrozenList, freeze
from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory.align import Alignment
from agentotel_eval.trajectory.checks import Checker, RawCheck, expected_texts, plan_of
from agentotel_eval.trajectory.spec import Step, TrajectorySpec

MATCHED, PARTIAL, MISSING, SKIPPED, NOT_TAKEN = "matched", "partial", "missing", "skipped", "not_taken"
_NEAR_MISSES = 3
_NO_CALLS, _NO_CHECKS = FrozenList(), FrozenDict()


@dataclass(frozen=True, slots=True)
class _ToolRow:
    """A tool step's row that shows argument checks: completed for each run."""

    head: Mapping[str, Any]  # the row up to its calls
    step: Step
    took: tuple[int, ...]  # the calls it took, when its checks are shown
    checked: bool  # whether the row has ``checks`` (it took calls)
    near: tuple[
        tuple[int, str | None], ...
    ]  # near misses: a call of its tool, and the step that took it if any
    status: str


def _static_row(rows: dict[int, Mapping[str, Any]], step: Step, depth: int) -> Mapping[str, Any]:
    """What a step's row says whatever the run, built once per spec (``rows``: those built so far)."""
    row = rows.get(id(step))
    if row is None:
        built: dict[str, Any] = {"path": step.path, "kind": step.kind, "label": step.label, "depth": depth}
        if step.id is not None:
            built["id"] = step.id
        if step.optional:
            built["optional"] = True
        if (step.count_min, step.count_max) != (1, 1):
            built["count"] = (
                {"min": step.count_min}
                if step.count_max is None
                else {"min": step.count_min, "max": step.count_max}
            )
        if step.weight is not None:
            built["weight"] = step.weight
        row = rows[id(step)] = freeze(built)
    return row


def _leaves_under(spec: TrajectorySpec, step: Step) -> tuple[int, ...]:
    under = spec.memo.setdefault("leaves_under", {})
    known: tuple[int, ...] | None = under.get(id(step))
    if known is None:
        leaf_of = plan_of(spec).leaf_of
        known = under[id(step)] = tuple(leaf_of[id(s)] for s in step.walk() if s.kind == "tool")
    return known


def _status(took: int, need: int, taken: bool) -> str:
    if not taken:
        return NOT_TAKEN if not took else MATCHED
    if need == 0:
        return MATCHED if took else SKIPPED
    return MATCHED if took >= need else PARTIAL if took else MISSING


class _Walk:
    """Walks the spec once with the alignment, giving each step its status and calls."""

    def __init__(self, spec: TrajectorySpec, calls: Sequence[ToolCall], alignment: Alignment) -> None:
        self.spec, self.calls, self.alignment = spec, calls, alignment
        self.leaf_of = plan_of(spec).leaf_of
        self.static: dict[int, Mapping[str, Any]] = spec.memo.setdefault("rows", {})
        self.taken: dict[int, list[int]] = {}
        for j, leaf in enumerate(alignment.taken_by):
            if leaf is not None:
                self.taken.setdefault(leaf, []).append(j)
        self.rows: list[Mapping[str, Any] | _ToolRow] = []

    def walk(self, step: Step, depth: int, need: int, taken: bool) -> tuple[str, list[int]]:
        """Adds the rows of ``step`` and below; ``need`` is how many calls it must take (repeats of its groups
        multiply), ``taken`` whether its ``any_of`` alternatives (if any above) chose it."""
        static = _static_row(self.static, step, depth)
        need = need * step.least
        if step.kind == "tool":
            took = self.taken.get(self.leaf_of[id(step)], [])
            status = _status(len(took), need, taken)
            near = self._near_misses(step) if status in (MISSING, PARTIAL) else ()
            if (took and step.args is not None) or near:
                self.rows.append(
                    _ToolRow(
                        FrozenDict(static, calls=FrozenList(took)),
                        step,
                        tuple(took) if step.args is not None else (),
                        bool(took),
                        near,
                        status,
                    )
                )
            elif took:
                self.rows.append(FrozenDict(static, calls=FrozenList(took), checks=_NO_CHECKS, status=status))
            else:
                self.rows.append(FrozenDict(static, calls=_NO_CALLS, status=status))
            return status, took
        row = dict(static)
        at = len(self.rows)
        self.rows.append(row)  # replaced by its frozen form once its members are walked
        chosen = None
        if step.kind == "any_of":
            for k, member in enumerate(step.members):
                if any(self.taken.get(leaf) for leaf in _leaves_under(self.spec, member)):
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
        row["calls"] = FrozenList(sorted(took_all))
        if not taken:
            status = NOT_TAKEN
        elif need == 0 or (step.kind == "any_of" and any(m.least == 0 for m in step.members)):
            status = MATCHED if took_all else SKIPPED
        elif step.kind == "any_of":
            status = statuses[chosen] if chosen is not None else MISSING
        elif all(s in (MATCHED, SKIPPED) for s in statuses):
            status = MATCHED
        else:
            status = PARTIAL if took_all else MISSING
        row["status"] = status
        self.rows[at] = FrozenDict(row)
        return status, took_all

    def _near_misses(self, step: Step) -> tuple[tuple[int, str | None], ...]:
        """Calls of the step's tool it did not take (their checks are the run's: filled in by ``details``)."""
        out: list[tuple[int, str | None]] = []
        leaf, alignment = self.leaf_of[id(step)], self.alignment
        for j, call in enumerate(self.calls):
            if call.name != step.tool or alignment.taken_by[j] == leaf:
                continue
            other = alignment.taken_by[j]
            out.append((j, alignment.leaves[other].path if other is not None else None))
            if len(out) == _NEAR_MISSES:
                break
        return tuple(out)


def _fixed_violations(
    spec: TrajectorySpec, calls: Sequence[ToolCall], alignment: Alignment, extra: Sequence[int]
) -> list[dict[str, Any]]:
    """The violations that read no argument: all but ``forbidden``, in the order they are reported."""
    out: list[dict[str, Any]] = []
    if spec.max_calls is not None and len(calls) > spec.max_calls:
        out.append(
            {
                "type": "max_calls",
                "calls": len(calls),
                "max": spec.max_calls,
                "message": f"{len(calls)} calls, more than max_calls = {spec.max_calls}",
            }
        )
    if spec.extra == "forbid" and extra:
        names = ", ".join(f"#{j + 1} {calls[j].name}" for j in extra[:5]) + (" …" if len(extra) > 5 else "")
        out.append(
            {
                "type": "extra_forbidden",
                "calls": list(extra),
                "message": f'{len(extra)} call(s) the spec does not match, with extra = "forbid": {names}',
            }
        )
    for path, j in alignment.splits:
        out.append(
            {
                "type": "parallel_split",
                "step": path,
                "call": j,
                "message": f"parallel group {path} was split over LLM turns (call #{j + 1})",
            }
        )
    if spec.separate_turns:
        out.extend(_merged_turns(spec, calls, alignment))
    return out


def _merged_turns(
    spec: TrajectorySpec, calls: Sequence[ToolCall], alignment: Alignment
) -> list[dict[str, Any]]:
    """Top-level steps whose calls came from one LLM turn (``separate_turns``): one
    violation per such turn."""
    top = spec.memo.get("top_of_leaf")
    if top is None:
        leaf_of = plan_of(spec).leaf_of
        top = spec.memo["top_of_leaf"] = {
            leaf_of[id(s)]: k
            for k, member in enumerate(spec.root.members)
            for s in member.walk()
            if s.kind == "tool"
        }
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
            out.append(
                {
                    "type": "turns_merged",
                    "steps": paths,
                    "call": first_call[turn],
                    "message": (
                        f"{' and '.join(paths)} came in one LLM turn (call #{first_call[turn] + 1} on); "
                        f"each is a turn of its own (separate_turns)"
                    ),
                }
            )
    return out


def _has_parallel(spec: TrajectorySpec) -> bool:
    known = spec.memo.get("has_parallel")
    if known is None:
        known = spec.memo["has_parallel"] = any(s.kind == "parallel" for s in spec.steps())
    return bool(known)


def turns_matter(spec: TrajectorySpec) -> bool:
    """Whether a run's LLM turns change its report (a ``parallel`` group, or ``separate_turns``)."""
    return spec.separate_turns or _has_parallel(spec)


def _frozen_written(spec: TrajectorySpec) -> Any:
    """The written spec, frozen once: every result carries it, and freezing a result skips what is frozen."""
    known = spec.memo.get("frozen_written")
    if known is None:
        known = spec.memo["frozen_written"] = freeze(spec.written)
    return known


def _check_json(key: str, verdict: Any, reason: str, expected: Mapping[str, str]) -> dict[str, Any]:
    out = {"key": key, "ok": verdict, "expected": expected.get(key, "")}
    if reason:
        out["reason"] = reason
    return out


class Report:
    """What a run's shape determines of its result (see the module's docstring); ``details`` completes it."""

    __slots__ = (
        "approximate",
        "bindings",
        "call_steps",
        "extra",
        "forbid_calls",
        "head",
        "kept",
        "near_misses",
        "precision",
        "reason",
        "recall",
        "rows",
        "score",
        "tail",
        "violations",
        "work",
    )

    def __init__(self, spec: TrajectorySpec, calls: Sequence[ToolCall], alignment: Alignment) -> None:
        # the alignment without the run's checked calls: a kept report holds nothing of the run's values
        self.kept = (
            alignment.leaves,
            alignment.taken_by,
            alignment.earned,
            alignment.splits,
            alignment.bindings,
            alignment.required,
            alignment.unit,
        )
        self.bindings, self.approximate, self.work = alignment.bindings, alignment.approximate, alignment.work
        extra = [j for j, leaf in enumerate(alignment.taken_by) if leaf is None]
        recall = alignment.recall
        precision = (len(calls) - len(extra)) / len(calls) if calls else 1.0
        if spec.extra == "penalize":
            score = 0.0 if recall + precision == 0 else 2 * recall * precision / (recall + precision)
        else:
            score = recall
        self.score, self.recall, self.precision = score, recall, precision
        walk = _Walk(spec, calls, alignment)
        for member in spec.root.members:
            walk.walk(member, 0, 1, True)
        self.rows = tuple(walk.rows)
        self.near_misses = any(isinstance(row, _ToolRow) and row.near for row in self.rows)
        self.extra = FrozenList(extra)
        self.call_steps = tuple(
            alignment.leaves[leaf].path if leaf is not None else None for leaf in alignment.taken_by
        )
        forbid = plan_of(spec).forbid_by_tool
        self.forbid_calls = tuple(j for j, call in enumerate(calls) if call.name in forbid)
        fixed = _fixed_violations(spec, calls, alignment, extra)
        self.violations: tuple[dict[str, Any], ...] = tuple(freeze(v) for v in fixed)
        self.head: dict[str, Any] = {
            "score": score,
            "recall": recall,
            "precision": precision,
            # ratios of integers, correctly rounded: float(alignment.matched_weight),
            # without making a Fraction
            "matched_weight": sum(alignment.earned) / alignment.unit,
            "required_weight": alignment.required / alignment.unit,
            "extra_mode": spec.extra,
        }
        tail: dict[str, Any] = {}
        if spec.preset:
            tail["preset"] = spec.preset
        if (
            alignment.approximate is not None
        ):  # the score is a lower bound: a real alignment, maybe not the best
            tail["approximate"] = True
            tail["approximate_reason"] = alignment.approximate
        if any(c.llm_turn is None for c in calls) and turns_matter(spec):
            tail["turns_not_recorded"] = True  # a parallel group cannot be checked for calls with no turn
        self.tail = tail
        #: the reason in words, when no argument check of the run can change it (set by the
        #: first run's scoring)
        self.reason: str | None = None

    @property
    def reason_is_fixed(self) -> bool:
        """Whether the reason reads nothing filled in per run (near misses' checks, forbid rules)."""
        return not self.near_misses and not self.forbid_calls

    def alignment(self, checker: Checker) -> Alignment:
        """The alignment this report was made from, for a run of its shape (``checker``: that run's calls)."""
        return Alignment(*self.kept, checker, self.approximate, self.work)

    def details(
        self, spec: TrajectorySpec, calls: Sequence[ToolCall], checker: Checker, threshold: float
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The run's ``details`` (without ``reason``) and violations: this report, with the run's checks."""
        plan, bindings = checker.plan, self.bindings
        rows: list[Mapping[str, Any]] = []
        for row in self.rows:
            if type(row) is not _ToolRow:
                rows.append(row)  # type: ignore[arg-type]
                continue
            step = row.step
            expected = expected_texts(plan, step)
            filled = dict(row.head)
            if row.checked:
                filled["checks"] = {
                    str(j): [_check_json(k, v, r, expected) for k, v, r in checker.raw(step, j, bindings[j])]
                    for j in row.took
                }
            if row.near:
                near = []
                for j, other in row.near:
                    entry: dict[str, Any] = {
                        "call": j,
                        "checks": [
                            _check_json(k, v, r, expected)
                            for k, v, r in checker.raw(step, j, bindings[j])
                            if v is not True
                        ],
                    }
                    if other is not None:
                        entry["taken_by"] = other
                    near.append(entry)
                filled["near_misses"] = near
            filled["status"] = row.status
            rows.append(filled)
        violations = [*_forbidden(calls, checker, bindings, self.forbid_calls), *self.violations]
        call_rows = []
        for j, (call, step_path) in enumerate(zip(calls, self.call_steps, strict=True)):
            # keys with no value are left out, not written as null: a row's JSON is checked for NaN only when
            # it holds one
            call_row: dict[str, Any] = {"index": j, "tool": call.name}
            if step_path is not None:
                call_row["step"] = step_path
            if call.llm_turn is not None:
                call_row["turn"] = call.llm_turn
            call_rows.append(call_row)
        details = {
            **self.head,
            "threshold": threshold,
            "steps": rows,
            "calls": call_rows,
            "extra": self.extra,
            "violations": violations,
            "spec": _frozen_written(spec),
            **self.tail,
        }
        return details, violations


def _forbidden(
    calls: Sequence[ToolCall], checker: Checker, bindings: Sequence[Sequence[int]], candidates: Sequence[int]
) -> list[dict[str, Any]]:
    """A ``forbidden`` violation for each call (of ``candidates``: those of a tool a rule names) that a forbid
    rule's arguments match; a rule whose arguments were not recorded may not apply, so it is no violation."""
    out: list[dict[str, Any]] = []
    rules_of = checker.plan.forbid_by_tool
    for j in candidates:
        call = calls[j]
        for rule in rules_of[call.name]:
            found: list[RawCheck] = checker.raw(rule, j, bindings[j])
            if any(verdict is not True for _, verdict, _ in found):
                continue
            out.append(
                {
                    "type": "forbidden",
                    "call": j,
                    "rule": rule.path,
                    "message": f"call #{j + 1} {call.name} is forbidden ({rule.path})",
                }
            )
            break
    return out
