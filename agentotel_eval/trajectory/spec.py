"""A trajectory spec: what a run's tool calls should look like, read from its written form (TOML or JSON).

    {"extra": "ignore", "max_calls": 12, "forbid": [{"tool": "delete_account"}],
     "steps": [{"id": "who", "tool": "find_user", "args": {"zip": {"$regex": "\\\\d{5}"}}},
               {"any_of": [{"tool": "get_user_details"}, {"tool": "search_users"}]},
               {"parallel": [{"tool": "get_order"}, {"tool": "get_product", "optional": true}]}]}

A step is one tool call (``tool``), or a group: ``steps`` (in order), ``unordered`` (any order), ``parallel``
(any order, from one LLM turn), ``any_of`` (one of the alternatives). Any step takes ``optional``, ``count =
{min, max}``, ``weight`` and ``id``. ``preset`` with ``expected_tools`` spells a peer's mode in one line
(``agentotel_eval.trajectory.presets``). Everything is checked when read, so a spec that loads scores.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentotel_eval.trajectory.matchers import Nested, Ref, SpecError, _plain, compile_keys

GROUPS = ("steps", "unordered", "parallel", "any_of")
KINDS = ("tool", *GROUPS)
EXTRA_MODES = ("ignore", "penalize", "forbid")
_MODIFIERS = ("optional", "count", "weight", "id")
_TOOL_KEYS = ("args", "strict_args")
_TOP_KEYS = (
    "steps",
    "extra",
    "max_calls",
    "forbid",
    "threshold",
    "preset",
    "expected_tools",
    "separate_turns",
)

__all__ = [
    "CONFIG_LIMITS",
    "EXTRA_MODES",
    "KINDS",
    "UNTRUSTED_LIMITS",
    "SpecError",
    "SpecLimits",
    "Step",
    "TrajectorySpec",
    "parse_spec",
]


@dataclass(frozen=True, slots=True)
class SpecLimits:
    """How large a spec may be. A spec that arrives with a run (a span attribute, a dataset line) is held to
    ``UNTRUSTED_LIMITS``: the alignment's work is bounded whatever the spec, but reading and keeping a spec is
    not, and a legitimate spec is far smaller. The operator's own config, and specs in code,
    get ``CONFIG_LIMITS``."""

    name: str
    steps: int  # tool steps and groups, forbid rules included
    depth: int  # groups inside groups
    alternatives: int  # members of one any_of
    spec_bytes: int  # the spec as JSON text
    nesting: int  # JSON objects and arrays inside each other (groups, and objects in argument matchers)


UNTRUSTED_LIMITS = SpecLimits(
    "a spec from a span or a dataset", steps=200, depth=8, alternatives=16, spec_bytes=64 * 1024, nesting=48
)
CONFIG_LIMITS = SpecLimits(
    "a spec from the config or code",
    steps=5000,
    depth=32,
    alternatives=256,
    spec_bytes=4 * 1024 * 1024,
    nesting=160,
)


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a spec: a tool call (``kind == "tool"``) or a group of ``members``."""

    kind: str
    path: str  # where it is written, e.g. "steps[2].parallel[1]"
    tool: str | None = None
    args: Nested | None = None
    members: tuple[Step, ...] = ()
    optional: bool = False
    count_min: int = 1
    count_max: int | None = 1  # None: no upper bound
    weight: float | None = None  # None: 1 for a tool, the members' required weight for a group
    id: str | None = None

    @property
    def label(self) -> str:
        return self.tool if self.kind == "tool" and self.tool is not None else self.kind

    @property
    def least(self) -> int:
        """How many times the step must happen: 0 when optional."""
        return 0 if self.optional else self.count_min

    @property
    def refs(self) -> tuple[Ref, ...]:
        return self.args.refs if self.args is not None else ()

    def walk(self) -> Iterator[Step]:
        yield self
        for member in self.members:
            yield from member.walk()


@dataclass(frozen=True, slots=True)
class TrajectorySpec:
    """A read spec. ``written`` is the form it was read from (shown, stored, and read
    again to the same spec)."""

    root: Step
    extra: str = "ignore"
    max_calls: int | None = None
    forbid: tuple[Step, ...] = ()
    threshold: float | None = None
    preset: str | None = None
    written: Mapping[str, Any] = field(default_factory=dict, compare=False)
    #: no two top-level steps' calls come from one LLM turn (agentevals' strict mode compares
    #: message by message)
    separate_turns: bool = False
    #: what scoring derives from the spec alone (its weights), kept for the next run it scores
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def steps(self) -> Iterator[Step]:
        """Every step, groups before their members, in written order."""
        for member in self.root.members:
            yield from member.walk()

    @property
    def ids(self) -> dict[str, Step]:
        return {s.id: s for s in self.steps() if s.id is not None}

    def to_json(self) -> str:
        return json.dumps(self.written, sort_keys=False, separators=(",", ":"))

    def __repr__(self) -> str:
        return f"TrajectorySpec({self.to_json()})"

    def __reduce__(self) -> tuple[Any, ...]:
        # compiled matchers are closures: a spec crosses a process boundary as its written
        # form, read again there
        return parse_spec, (self.written,)


def _unknown(keys: Any, known: tuple[str, ...], where: str) -> None:
    for key in keys:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(known)}"
            raise SpecError(f"{where}: unknown key {key!r}{hint}")


def _count(value: Any, where: str) -> tuple[int, int | None]:
    if not isinstance(value, Mapping):
        raise SpecError(f"{where}.count: write count = {{ min = N, max = M }}, got {value!r}")
    _unknown(value, ("min", "max"), f"{where}.count")
    low, high = value.get("min", 1), value.get("max")
    for name, number in (("min", low), ("max", high)):
        if number is not None and (isinstance(number, bool) or not isinstance(number, int) or number < 0):
            raise SpecError(f"{where}.count.{name} must be a whole number >= 0, got {number!r}")
    if high is not None and (high < low or high == 0):
        raise SpecError(f"{where}.count: max ({high}) must be at least min ({low}) and at least 1")
    return low, high


class _Budget:
    """Counts steps as they are read, against the limits."""

    def __init__(self, limits: SpecLimits) -> None:
        self.limits, self.steps = limits, 0

    def step(self, where: str, depth: int) -> None:
        limits = self.limits
        self.steps += 1
        if self.steps > limits.steps:
            raise SpecError(
                f"{where}: more than {limits.steps} steps; {limits.name} may have at most "
                f"{limits.steps} (limit: steps)"
            )
        if depth > limits.depth:
            raise SpecError(
                f"{where}: groups nested {depth} deep; {limits.name} may nest them at most "
                f"{limits.depth} deep (limit: depth)"
            )


def _step(value: Any, where: str, budget: _Budget, depth: int = 0) -> Step:
    budget.step(where, depth)
    if isinstance(value, str):
        value = {"tool": value}
    if not isinstance(value, Mapping):
        raise SpecError(f'{where}: a step is a table such as {{ tool = "name" }}, got {value!r}')
    kinds = [k for k in KINDS if k in value]
    if not kinds:  # a misspelt kind ("tol") is the likeliest cause: name it
        _unknown(value, (*KINDS, *_MODIFIERS, *_TOOL_KEYS), where)
    if len(kinds) != 1:
        what = f"has {', '.join(kinds)}" if kinds else "has none"
        raise SpecError(f"{where}: a step needs exactly one of {', '.join(KINDS)} ({what})")
    kind = kinds[0]
    _unknown(value, (kind, *_MODIFIERS, *(_TOOL_KEYS if kind == "tool" else ())), where)
    optional = value.get("optional", False)
    if not isinstance(optional, bool):
        raise SpecError(f"{where}.optional must be true or false, got {optional!r}")
    low, high = _count(value["count"], where) if "count" in value else (1, 1)
    weight = value.get("weight")
    if weight is not None and (isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0):
        raise SpecError(f"{where}.weight must be a number >= 0, got {weight!r}")
    if weight is not None and not math.isfinite(weight):
        raise SpecError(f"{where}.weight must be a finite number, got {weight!r}")
    step_id = value.get("id")
    if step_id is not None and (not isinstance(step_id, str) or not step_id or "." in step_id):
        raise SpecError(f"{where}.id must be a name without dots, got {step_id!r}")
    common: dict[str, Any] = {
        "optional": optional,
        "count_min": low,
        "count_max": high,
        "weight": None if weight is None else float(weight),
        "id": step_id,
    }
    if kind == "tool":
        tool = value["tool"]
        if not isinstance(tool, str) or not tool:
            raise SpecError(f"{where}.tool must be a tool name, got {tool!r}")
        strict = value.get("strict_args", False)
        if not isinstance(strict, bool):
            raise SpecError(f"{where}.strict_args must be true or false, got {strict!r}")
        args = value.get("args")
        if args is not None and not isinstance(args, Mapping):
            raise SpecError(f"{where}.args must be a table of argument names to matchers, got {args!r}")
        matcher = compile_keys(args or {}, f"{where}.args", strict) if args is not None or strict else None
        return Step("tool", where, tool=tool, args=matcher, **common)
    members = value[kind]
    if not isinstance(members, list | tuple) or not members:
        raise SpecError(f"{where}.{kind} must be a non-empty list of steps")
    limits = budget.limits
    if kind == "any_of" and len(members) > limits.alternatives:
        raise SpecError(
            f"{where}.any_of: {len(members)} alternatives; {limits.name} may have at most "
            f"{limits.alternatives} (limit: alternatives)"
        )
    return Step(
        kind,
        where,
        members=tuple(_step(m, f"{where}.{kind}[{i}]", budget, depth + 1) for i, m in enumerate(members)),
        **common,
    )


def _forbidden(value: Any, where: str, budget: _Budget) -> Step:
    if isinstance(value, str):
        value = {"tool": value}
    if not isinstance(value, Mapping) or "tool" not in value:
        raise SpecError(f'{where}: a forbid entry is {{ tool = "name", args = {{...}} }}, got {value!r}')
    _unknown(value, ("tool", *_TOOL_KEYS), where)
    step = _step(value, where, budget)
    for ref in step.refs:
        raise SpecError(f"{where}: a forbid rule cannot use $ref ({ref.text})")
    return step


def _check_size(value: Any, where: str, limits: SpecLimits) -> None:
    """Refuses a written value nested deeper than ``limits.nesting`` or larger than ``limits.spec_bytes`` (as
    JSON, counted roughly), walking it without recursion so a hostile value cannot exhaust the stack."""
    size = 0
    # (value, depth, index of its parent entry, its key there): the path is rebuilt only for an error
    entries: list[tuple[Any, int, int, Any]] = [(value, 1, -1, None)]
    stack = [0]
    while stack:
        at = stack.pop()
        item, depth, _parent, _key = entries[at]
        if isinstance(item, Mapping | list | tuple):
            if depth > limits.nesting:
                raise SpecError(
                    f"{where}{_path(entries, at)}: nested more than {limits.nesting} levels deep; "
                    f"{limits.name} may nest at most {limits.nesting} (limit: nesting)"
                )
            children = item.items() if isinstance(item, Mapping) else enumerate(item)
            for key, child in children:
                size += 2 + (len(key) if isinstance(key, str) else 0)
                stack.append(len(entries))
                entries.append((child, depth + 1, at, key))
        else:
            size += len(item) + 2 if isinstance(item, str) else 8
        if size > limits.spec_bytes:
            raise SpecError(
                f"{where}: larger than {limits.spec_bytes:,} bytes as JSON; {limits.name} may have at "
                f"most {limits.spec_bytes:,} (limit: spec_bytes)"
            )


def _path(entries: list[tuple[Any, int, int, Any]], at: int) -> str:
    parts: list[str] = []
    while at > 0:
        _item, _depth, parent, key = entries[at]
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
        at = parent
    text = "".join(reversed(parts))
    return text if len(text) <= 200 else text[:120] + " … " + text[-60:]


def parse_spec(value: Any, where: str = "trajectory", limits: SpecLimits = CONFIG_LIMITS) -> TrajectorySpec:
    """A spec from its written form: a table/dict, a JSON string of one, or a bare list of steps, within
    ``limits`` (``UNTRUSTED_LIMITS`` for a spec that came with a run)."""
    if isinstance(value, TrajectorySpec):
        return value
    if isinstance(value, str | bytes):
        if len(value) > limits.spec_bytes:
            raise SpecError(
                f"{where}: {len(value):,} bytes; {limits.name} may have at most "
                f"{limits.spec_bytes:,} (limit: spec_bytes)"
            )
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SpecError(f"{where}: not valid JSON ({exc})") from None
        except RecursionError:
            raise SpecError(
                f"{where}: nested too deep to read; {limits.name} may nest at most {limits.nesting} "
                f"levels (limit: nesting)"
            ) from None
    _check_size(value, where, limits)
    if isinstance(value, list | tuple):
        value = {"steps": list(value)}
    if not isinstance(value, Mapping):
        raise SpecError(f"{where}: a trajectory spec is a table with steps (or a preset), got {value!r}")
    written = _plain(value)
    _unknown(written, _TOP_KEYS, where)
    body = dict(written)
    preset = body.get("preset")
    if preset is not None:
        from agentotel_eval.trajectory.presets import expand_preset

        body = expand_preset(body, where)
    elif "expected_tools" in body:
        raise SpecError(f"{where}: expected_tools goes with a preset; write steps = [...] otherwise")
    steps = body.get("steps", [])
    if not isinstance(steps, list):  # no steps is a spec too: forbid rules, max_calls, extra = "forbid"
        raise SpecError(f"{where}.steps must be a list of steps")
    extra = body.get("extra", "ignore")
    if extra not in EXTRA_MODES:
        raise SpecError(f"{where}.extra must be one of {', '.join(EXTRA_MODES)}, got {extra!r}")
    max_calls = body.get("max_calls")
    if max_calls is not None and (
        isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 0
    ):
        raise SpecError(f"{where}.max_calls must be a whole number >= 0, got {max_calls!r}")
    threshold = body.get("threshold")
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 1
    ):
        raise SpecError(f"{where}.threshold must be a number from 0 to 1, got {threshold!r}")
    separate_turns = body.get("separate_turns", False)
    if not isinstance(separate_turns, bool):
        raise SpecError(f"{where}.separate_turns must be true or false, got {separate_turns!r}")
    forbid = body.get("forbid", [])
    if not isinstance(forbid, list):
        raise SpecError(f"{where}.forbid must be a list of {{ tool, args }} tables")
    budget = _Budget(limits)
    # steps are named by their path in the spec ("steps[2]"), shown in results; errors say where the spec is
    try:
        root = Step("steps", "", members=tuple(_step(s, f"steps[{i}]", budget) for i, s in enumerate(steps)))
        spec = TrajectorySpec(
            root,
            extra,
            max_calls,
            tuple(_forbidden(f, f"forbid[{i}]", budget) for i, f in enumerate(forbid)),
            None if threshold is None else float(threshold),
            preset,
            written,
            separate_turns,
        )
        _check_ids(spec)
    except SpecError as exc:
        raise SpecError(f"{where}.{exc}") from None
    return spec


def _check_ids(spec: TrajectorySpec) -> None:
    seen: dict[str, str] = {}
    for step in spec.steps():
        if step.id is not None:
            if step.id in seen:
                raise SpecError(f"{step.path}: id {step.id!r} is already used by {seen[step.id]}")
            seen[step.id] = step.path
