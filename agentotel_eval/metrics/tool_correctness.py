"""Tool correctness: did the agent call the tools it was expected to call? No LLM, microseconds per case.

Four modes, each with its own metric name (the ``evaluations.metric`` value and the ``<metric>`` of
``agentotel.eval.<metric>.score``):

- ``tool_correctness`` (default): each expected call may be satisfied by one called call; extra calls are
  not penalised. score = matched / |expected|.
- ``tool_correctness_exact``: 1.0 when the called calls are exactly the expected ones (same multiplicities,
  order ignored), else 0.0.
- ``tool_correctness_ordering``: longest common subsequence / |expected|.
- ``tool_correctness_exact_ordering``: 1.0 only when the called sequence equals the expected one.

With ``evaluation_params`` a matched pair weighs its parameter similarity (and 0 when outputs differ), and the
best pairing is exact (maximum-weight assignment / common subsequence, see ``matching``). The scoring is a pure
function (``score_tool_calls``); the metric class adds thresholds, reasons and results around it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from agentotel_eval.jsontext import dumps
from agentotel_eval.lazymapping import LazyMapping
from agentotel_eval.metrics import matching
from agentotel_eval.metrics.base import BaseMetric, MetricResult
from agentotel_eval.metrics.matching import Pair
from agentotel_eval.reconstruct.fastinit import fixed_builder
from agentotel_eval.test_case import ToolCall, ToolCallParams, as_tool_calls

__all__ = ["ToolCorrectnessMetric", "ToolCorrectnessOutcome", "metric_name_for", "score_tool_calls"]

_EVALUATOR_VERSION = "1"
_MEMO_SIZE = 4096  # name-list pairs remembered per metric instance; forgotten all at once when full
_STR_TYPE = {str}
_MODES = {
    (False, False): "default",
    (True, False): "exact",
    (False, True): "ordering",
    (True, True): "exact_ordering",
}


def metric_name_for(exact_match: bool, check_ordering: bool, base: str = "tool_correctness") -> str:
    """``tool_correctness`` plus ``_exact`` and/or ``_ordering``: the stored name of a mode."""
    return base + ("_exact" if exact_match else "") + ("_ordering" if check_ordering else "")


# --- the pure scoring -----------------------------------------------------------------------------------------


class ToolCorrectnessOutcome(NamedTuple):
    """Everything a score is made of, for the reason and the evaluation log.

    ``pairs`` are ``(expected_index, called_index, weight)``; ``missing`` / ``extra`` are indices into the
    expected / called lists that were left unpaired; ``out_of_order`` (ordering mode) pairs an expected call
    the subsequence left out with an unpaired call of the same tool: made, but not where the order allows.
    """

    mode: str
    score: float
    pairs: tuple[Pair, ...]
    missing: tuple[int, ...]
    extra: tuple[int, ...]
    out_of_order: tuple[tuple[int, int], ...] = ()
    first_difference: int | None = None  # exact_ordering: first position where the sequences differ
    same_multiset: bool = False  # exact modes: the calls are equal as a multiset


def _unpaired(count: int, pairs: Sequence[Pair], side: int) -> tuple[int, ...]:
    """Indices ``0..count-1`` that no pair uses on ``side`` (0 = expected, 1 = called)."""
    used = {p[side] for p in pairs}
    return tuple(k for k in range(count) if k not in used)


def _split_out_of_order(
    expected: Sequence[str], called: Sequence[str], unpaired: tuple[int, ...], free_called: tuple[int, ...]
) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...], tuple[int, ...]]:
    """Split the expected calls (by name) the subsequence left out into out-of-order and missing ones.

    An expected call is out of order when a call of its tool is still unpaired (it was made, but where the
    order does not allow it); that called call is then its counterpart, not an extra call. Returns
    ``(out_of_order as (expected, called) index pairs, missing, extra)``.
    """
    free: dict[str, list[int]] = {}
    for j in free_called:
        free.setdefault(called[j], []).append(j)
    out_of_order: list[tuple[int, int]] = []
    missing: list[int] = []
    for i in unpaired:
        slots = free.get(expected[i])
        if slots:
            out_of_order.append((i, slots.pop(0)))
        else:
            missing.append(i)
    taken = {j for _, j in out_of_order}
    return tuple(out_of_order), tuple(missing), tuple(j for j in free_called if j not in taken)


def score_tool_calls(
    expected: Sequence[ToolCall],
    called: Sequence[ToolCall],
    *,
    exact_match: bool = False,
    check_ordering: bool = False,
    input_parameters: bool = False,
    output: bool = False,
) -> ToolCorrectnessOutcome:
    """Score ``called`` against ``expected`` (before any threshold or strict mode)."""
    if not (input_parameters or output):
        return score_names([c.name for c in expected], [c.name for c in called], exact_match, check_ordering)
    mode = _MODES[exact_match, check_ordering]
    n, m = len(expected), len(called)
    if exact_match:
        return _exact_outcome(
            mode,
            [matching.call_key(c, input_parameters=input_parameters, output=output) for c in expected],
            [matching.call_key(c, input_parameters=input_parameters, output=output) for c in called],
            check_ordering,
        )
    if check_ordering:
        pairs = matching.weighted_lcs_match(expected, called, input_parameters=input_parameters, output=output)
        return _ordering_outcome(mode, pairs, [c.name for c in expected], [c.name for c in called])
    pairs = matching.weighted_match(expected, called, input_parameters=input_parameters, output=output)
    score = matching.total_weight(pairs) / n if n else 1.0
    return ToolCorrectnessOutcome(mode, score, tuple(pairs), _unpaired(n, pairs, 0), _unpaired(m, pairs, 1))


def score_names(
    expected: Sequence[str], called: Sequence[str], exact_match: bool = False, check_ordering: bool = False
) -> ToolCorrectnessOutcome:
    """``score_tool_calls`` without evaluation params: only the names count, so only the names are needed."""
    mode = _MODES[exact_match, check_ordering]
    n, m = len(expected), len(called)
    if exact_match:
        return _exact_outcome(mode, expected, called, check_ordering)
    if check_ordering:
        return _ordering_outcome(mode, matching.lcs_match(expected, called), expected, called)
    pairs = matching.multiset_match(expected, called)
    score = matching.total_weight(pairs) / n if n else 1.0
    return ToolCorrectnessOutcome(mode, score, tuple(pairs), _unpaired(n, pairs, 0), _unpaired(m, pairs, 1))


def _exact_outcome(
    mode: str, expected: Sequence[Any], called: Sequence[Any], check_ordering: bool
) -> ToolCorrectnessOutcome:
    """Exact match over keys (names alone, or names with the compared parameters): the same multiset, and with
    ``check_ordering`` the same sequence, or 0."""
    n, m = len(expected), len(called)
    pairs = matching.multiset_match(expected, called)
    same_multiset = len(pairs) == n == m
    first_difference = matching.first_difference(expected, called) if check_ordering else None
    ok = first_difference is None if check_ordering else same_multiset
    return ToolCorrectnessOutcome(
        mode, 1.0 if ok else 0.0, tuple(pairs), _unpaired(n, pairs, 0), _unpaired(m, pairs, 1),
        first_difference=first_difference, same_multiset=same_multiset,
    )


def _ordering_outcome(
    mode: str, pairs: list[Pair], expected: Sequence[str], called: Sequence[str]
) -> ToolCorrectnessOutcome:
    n = len(expected)
    out_of_order, missing, extra = _split_out_of_order(
        expected, called, _unpaired(n, pairs, 0), _unpaired(len(called), pairs, 1)
    )
    score = matching.total_weight(pairs) / n if n else 1.0
    return ToolCorrectnessOutcome(mode, score, tuple(pairs), missing, extra, out_of_order)


# --- reasons --------------------------------------------------------------------------------------------------


def _fmt_name(name: str) -> str:
    """Names compare exactly, so show the ones whose spelling could hide a difference in quotes."""
    if type(name) is not str or not name or name != name.strip() or "," in name or "×" in name:
        return repr(name)
    return name


def _fmt_counts(counts: Mapping[str, int]) -> str:
    """``a ×2, b``: names with their multiplicity, in the mapping's (first-seen) order."""
    return ", ".join(_fmt_name(k) if v == 1 else f"{_fmt_name(k)} ×{v}" for k, v in counts.items())


def _fmt_num(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


def _considered(input_parameters: bool, output: bool) -> str:
    fields = [f for f, on in (("input parameters", input_parameters), ("output", output)) if on]
    return " and ".join(fields)


def _pair_difference(
    expected: ToolCall, called: ToolCall, input_parameters: bool, output: bool
) -> str:
    parts: list[str] = []
    if input_parameters:
        parts.extend(matching.parameter_differences(expected.input_parameters, called.input_parameters))
    if output and not matching.values_equal(expected.output, called.output):
        parts.append("output")
    return ", ".join(parts)


def _count(names: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return counts


def _default_text(matched: float, n: int, missing: Mapping[str, int] | None, extra: Mapping[str, int] | None) -> str:
    """Default mode without params; shared by the hot path and ``build_reason`` so both say the same."""
    if n:
        text = f"Matched {matched if type(matched) is int else _fmt_num(matched)} of {n} expected tool calls."
        if missing:
            text += f" Missing: {_fmt_counts(missing)}."
    else:
        text = "No tool calls were expected, so none is missing."
    if extra:
        text += f" Extra calls (not penalised): {_fmt_counts(extra)}."
    return text


def _exact_text(
    *,
    ok: bool,
    ordered: bool,
    n: int,
    called_names: Sequence[str],
    missing: Mapping[str, int] | None,
    extra: Mapping[str, int] | None,
    first_difference: int | None,
    expected_names: Sequence[str],
    comparing: str = "",
) -> str:
    """Exact modes; shared by the names-only fast path and ``build_reason``."""
    if ok:
        if not n:
            return "No tool calls were expected and none were made."
        what = "sequence" if ordered else "calls (order ignored)"
        return f"Exact match{comparing}: the {len(called_names)} called tools are exactly the expected {what}."
    if not n:
        return f"No tool calls were expected, but {len(called_names)} were made: {_fmt_counts(_count(called_names))}."
    text = f"Not an exact match{comparing}."
    if ordered and not missing and not extra:
        text += " The expected calls were all made, but in another order."
    if ordered and first_difference is not None:
        k = first_difference
        want = _fmt_name(expected_names[k]) if k < n else "nothing more"
        got = _fmt_name(called_names[k]) if k < len(called_names) else "nothing more"
        text += f" First difference at call #{k + 1}: expected {want}, called {got}."
    if comparing and missing and extra:
        differing = [name for name in missing if name in extra]
        if differing:
            fields = comparing.split("name, ", 1)[1]
            text += f" Called with other {fields}: {', '.join(map(_fmt_name, differing))}."
    if missing:
        text += f" Missing: {_fmt_counts(missing)}."
    if extra:
        text += f" Extra: {_fmt_counts(extra)}."
    return text


def build_reason(
    outcome: ToolCorrectnessOutcome,
    expected: Sequence[ToolCall],
    called: Sequence[ToolCall],
    *,
    input_parameters: bool = False,
    output: bool = False,
) -> str:
    """A reason that always agrees with ``outcome.score``: what matched, what is missing, extra, out of order."""
    weighted = input_parameters or output
    partial: list[str] = []
    if weighted and outcome.mode in ("default", "ordering"):
        for i, j, w in outcome.pairs:
            if w < 1.0:
                diff = _pair_difference(expected[i], called[j], input_parameters, output)
                partial.append(f"{_fmt_name(expected[i].name)} #{i + 1} ({_fmt_num(w)}; differs: {diff or '-'})")
    comparing = f", comparing name, {_considered(input_parameters, output)}" if weighted else ""
    return names_reason(outcome, [c.name for c in expected], [c.name for c in called], comparing, partial)


def names_reason(
    outcome: ToolCorrectnessOutcome, expected: Sequence[str], called: Sequence[str], comparing: str = "",
    partial: Sequence[str] = (),
) -> str:
    """``build_reason`` from the call names (all it reads besides the pair differences given in ``partial``)."""
    n = len(expected)
    missing = _count(_missing_names(outcome, expected)) or None
    extra = _count(called[j] for j in outcome.extra) or None
    if outcome.mode in ("exact", "exact_ordering"):
        return _exact_text(
            ok=outcome.score == 1.0, ordered=outcome.mode == "exact_ordering", n=n,
            called_names=called, missing=missing, extra=extra,
            first_difference=outcome.first_difference, expected_names=expected,
            comparing=comparing,
        )
    matched = matching.total_weight(outcome.pairs)
    if outcome.mode == "default" and not comparing:
        return _default_text(matched, n, missing, extra)
    if n == 0:
        return _default_text(0, 0, None, extra)
    in_order = " in the expected order" if outcome.mode == "ordering" else ""
    text = f"Matched {_fmt_num(matched)} of {n} expected tool calls{in_order}{comparing}."
    if partial:
        text += f" Partly matched: {'; '.join(partial)}."
    if outcome.out_of_order:
        i, j = outcome.out_of_order[0]
        text += f" First out-of-order call: {_fmt_name(expected[i])} (expected #{i + 1}, called #{j + 1})."
        if len(outcome.out_of_order) > 1:
            text += f" Out of order: {_fmt_counts(_count(expected[i] for i, _ in outcome.out_of_order))}."
    if missing:
        text += f" Missing: {_fmt_counts(missing)}."
    if extra:
        text += f" Extra calls (not penalised): {_fmt_counts(extra)}."
    return text


def _missing_names(outcome: ToolCorrectnessOutcome, expected: Sequence[str]) -> list[str]:
    """Missing names grouped in the order their tools first appear in the expected list."""
    if not outcome.missing:
        return []
    first: dict[str, int] = {}
    for k, name in enumerate(expected):
        first.setdefault(name, k)
    return sorted((expected[i] for i in outcome.missing), key=first.__getitem__)


def build_log(
    outcome: ToolCorrectnessOutcome,
    expected: Sequence[ToolCall],
    called: Sequence[ToolCall],
    evaluation_params: Sequence[str],
    strict_mode: bool,
    raw_score: float,
) -> dict[str, Any]:
    """The evaluation log: JSON-ready details of how the score was reached."""
    return names_log(
        outcome, [c.name for c in expected], [c.name for c in called], evaluation_params, strict_mode, raw_score
    )


def names_log(
    outcome: ToolCorrectnessOutcome,
    expected: Sequence[str],
    called: Sequence[str],
    evaluation_params: Sequence[str],
    strict_mode: bool,
    raw_score: float,
) -> dict[str, Any]:
    """``build_log`` from the call names (all it reads)."""
    log: dict[str, Any] = {
        "mode": outcome.mode,
        "evaluation_params": list(evaluation_params),
        "expected": list(expected),
        "called": list(called),
        "matches": [
            {"expected_index": i, "called_index": j, "name": expected[i], "weight": w}
            for i, j, w in outcome.pairs
        ],
        "missing": [expected[i] for i in outcome.missing],
        "extra": [called[j] for j in outcome.extra],
        "matched_weight": matching.total_weight(outcome.pairs),
        "expected_count": len(expected),
        "raw_score": raw_score,
        "strict_mode": strict_mode,
    }
    if outcome.mode == "ordering":
        log["out_of_order"] = [
            {"expected_index": i, "called_index": j, "name": expected[i]} for i, j in outcome.out_of_order
        ]
    if outcome.mode == "exact_ordering":
        log["first_difference"] = outcome.first_difference
    return log


def result_maker(*, extra: tuple[str, ...] = (), **fixed: Any) -> Callable[..., MetricResult]:
    """A fast constructor of ``status="ok"`` results whose other fields are fixed per metric instance.

    A frozen dataclass's ``__init__`` sets each of MetricResult's 13 fields through ``object.__setattr__``
    and re-validates the status: about a third of the 10 µs a default-mode case may take. The fixed fields
    are validated once here (by building one result the ordinary way); each call then only fills the slots of
    a twin object and hands it the frozen class (``fastinit``). Fields added to MetricResult later get their
    defaults; a new required field fails here.
    ``make(score, success, reason, evaluation_log, *extra)``: the ``extra`` fields vary per call too.
    """
    fixed = {**fixed, "status": "ok"}
    varying = ("score", "success", "reason", "evaluation_log", *extra)
    template = MetricResult(**dict.fromkeys(varying[:3]), evaluation_log={},  # validates
                            **{"metric": "", "threshold": 0.0, **dict.fromkeys(extra), **fixed})
    constant = {f.name: getattr(template, f.name) for f in dataclasses.fields(MetricResult) if f.name not in varying}
    return fixed_builder(MetricResult, varying, constant)


def verbose_steps(log: Mapping[str, Any]) -> str:
    """The intermediate steps of a score, for ``verbose=True`` (printed, never logged)."""

    def names(values: Sequence[str]) -> str:
        return "[" + ", ".join(map(_fmt_name, values)) + "]"

    pairs = ", ".join(
        f"{_fmt_name(p['name'])} #{p['expected_index'] + 1}→#{p['called_index'] + 1} ({_fmt_num(p['weight'])})"
        for p in log["matches"]
    )
    lines = [
        f"  mode: {log['mode']}" + (f" (evaluation params: {', '.join(log['evaluation_params'])})" if log["evaluation_params"] else ""),
        f"  expected: {names(log['expected'])}",
        f"  called:   {names(log['called'])}",
        f"  matched:  {pairs or '-'}",
        f"  missing:  {names(log['missing'])}",
        f"  extra:    {names(log['extra'])}",
    ]
    if log.get("out_of_order"):
        lines.append(f"  out of order: {names([p['name'] for p in log['out_of_order']])}")
    if log.get("first_difference") is not None:
        lines.append(f"  first difference at call #{log['first_difference'] + 1}")
    if log["mode"].startswith("exact"):
        score = f"  score: {_fmt_num(log['raw_score'])} ({'exact match' if log['raw_score'] == 1.0 else 'not exact'})"
    else:
        score = f"  score: {_fmt_num(log['matched_weight'])} / {log['expected_count']} = {_fmt_num(log['raw_score'])}"
    lines.append(score + (" (strict mode)" if log["strict_mode"] else ""))
    return "\n".join(lines)


# --- the metric -----------------------------------------------------------------------------------------------


def _parse_params(values: Iterable[ToolCallParams | str] | ToolCallParams | str | None) -> tuple[ToolCallParams, ...]:
    if values is None:
        return ()
    if isinstance(values, str):  # a single param (ToolCallParams is a str too)
        values = (values,)
    parsed: list[ToolCallParams] = []
    for value in values:
        param = ToolCallParams.parse(value)
        if param not in parsed:
            parsed.append(param)
    return tuple(parsed)


def _pick_flag(name: str, value: bool | None, alias: str, alias_value: bool | None) -> bool:
    if value is not None and alias_value is not None and bool(value) != bool(alias_value):
        raise ValueError(f"{name}={value!r} contradicts its alias {alias}={alias_value!r}")
    chosen = value if value is not None else alias_value
    return bool(chosen)


def _check_threshold(threshold: Any) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise TypeError(f"threshold must be a number between 0 and 1, got {threshold!r}")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be between 0 and 1, got {threshold!r}")
    return float(threshold)


def _calls_of(case: Any, attr: str) -> tuple[Sequence[Any] | None, list[str] | None]:
    """The case's list of calls and their names; plain names and dicts (a hand-edited case, a duck-typed
    case from another library) are normalised to ToolCalls. ``(None, None)`` when the field is None."""
    try:
        value = getattr(case, attr)
    except AttributeError:
        raise TypeError(
            f"{type(case).__name__} has no '{attr}': tool correctness needs a test case with "
            "expected_tools and tools_called (EvalTestCase or ModelTestCase)"
        ) from None
    if value is None:
        return None, None
    if type(value) is not list and (isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable)):
        raise TypeError(f"{type(case).__name__}.{attr} must be a list of tool calls, got {value!r}")
    try:
        return value, [call.name for call in value]
    except AttributeError:  # names or dicts in the list
        value = as_tool_calls(value)
        return value, [call.name for call in value]


class ToolCorrectnessMetric(BaseMetric):
    """Did the agent call the expected tools? Deterministic and free; see the module doc for the modes.

    ``should_exact_match`` / ``should_consider_ordering`` (deepeval's names) are aliases of ``exact_match`` /
    ``check_ordering``; ``verbose_mode`` of ``verbose``. The configuration is read-only after construction so
    one instance can score from many threads.
    """

    name = "tool_correctness"
    version = _EVALUATOR_VERSION

    def __init__(
        self,
        threshold: float = 0.5,
        exact_match: bool | None = None,
        check_ordering: bool | None = None,
        strict_mode: bool = False,
        evaluation_params: Iterable[ToolCallParams | str] | None = (),
        verbose: bool | None = None,
        *,
        should_exact_match: bool | None = None,
        should_consider_ordering: bool | None = None,
        include_reason: bool = True,
        verbose_mode: bool | None = None,
    ) -> None:
        super().__init__()
        self._strict_mode = bool(strict_mode)
        self._threshold = 1.0 if self._strict_mode else _check_threshold(threshold)
        self._exact_match = _pick_flag("exact_match", exact_match, "should_exact_match", should_exact_match)
        self._check_ordering = _pick_flag(
            "check_ordering", check_ordering, "should_consider_ordering", should_consider_ordering
        )
        self.verbose = _pick_flag("verbose", verbose, "verbose_mode", verbose_mode)
        self._include_reason = bool(include_reason)
        self._evaluation_params = _parse_params(evaluation_params)
        self._check_input = ToolCallParams.INPUT_PARAMETERS in self._evaluation_params
        self._check_output = ToolCallParams.OUTPUT in self._evaluation_params
        self._mode = _MODES[self._exact_match, self._check_ordering]
        self._metric_name = metric_name_for(self._exact_match, self._check_ordering, type(self).name)
        self._param_names = tuple(p.value for p in self._evaluation_params)
        self._evaluator = type(self).__name__
        self._make = result_maker(
            metric=self._metric_name, threshold=self._threshold, evaluator=self._evaluator, evaluator_version=self.version
        )
        self._weighted = self._check_input or self._check_output
        self._fast = not (self._exact_match or self._check_ordering or self._check_input or self._check_output)
        # (expected names, called names) -> (score, success, reason, unbuilt log): see ``_by_names``
        self._memo: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[float, bool, str, LazyLog]] = {}

    # Read-only configuration (an instance is shared between threads and cases).
    threshold = property(lambda self: self._threshold, doc="Passing score; 1.0 in strict mode.")
    exact_match = property(lambda self: self._exact_match)
    check_ordering = property(lambda self: self._check_ordering)
    should_exact_match = exact_match
    should_consider_ordering = check_ordering
    strict_mode = property(lambda self: self._strict_mode)
    include_reason = property(lambda self: self._include_reason)
    evaluation_params = property(lambda self: self._evaluation_params)
    mode = property(lambda self: self._mode, doc="default, exact, ordering or exact_ordering")

    @property
    def metric_name(self) -> str:
        return self._metric_name

    def __repr__(self) -> str:
        params = f", evaluation_params={list(self._param_names)}" if self._param_names else ""
        strict = ", strict_mode=True" if self._strict_mode else ""
        return (
            f"{type(self).__name__}(threshold={self._threshold}, exact_match={self._exact_match}, "
            f"check_ordering={self._check_ordering}{strict}{params})"
        )

    def _remember(self, result: MetricResult) -> None:
        super()._remember(result)
        if self.verbose and result.status == "ok":
            print(verbose_steps(result.evaluation_log))

    def measure(self, case: Any) -> MetricResult:
        # The default-mode hot path, inlined: plain lists of ToolCalls, names only. Anything else (names or
        # dicts in the lists, a missing list, another mode) takes the general route through ``_measure``.
        if self._fast and not self.verbose:
            try:
                expected, called = case.expected_tools, case.tools_called
                if type(expected) is list and type(called) is list:
                    result = self._by_names([c.name for c in expected], [c.name for c in called])
                    BaseMetric._remember(self, result)  # not verbose: nothing of ours to add
                    return result
            except AttributeError:
                pass
        result = self._measure(case)
        self._remember(result)
        return result

    def _measure(self, case: Any) -> MetricResult:
        expected, e_names = _calls_of(case, "expected_tools")
        if expected is None:
            return MetricResult(
                self._metric_name, None, None, "Skipped: the test case has no expected_tools to compare with.",
                self._threshold, "skipped", {"mode": self._mode}, None, None, None, self._evaluator, self.version,
            )
        called, c_names = _calls_of(case, "tools_called")
        if called is None and hasattr(case, "tool_calls"):
            called, c_names = _calls_of(case, "tool_calls")
        if called is None:
            called, c_names = [], []
        if not self._weighted:
            return self._by_names(e_names, c_names)  # type: ignore[arg-type]
        outcome = score_tool_calls(
            expected, called, exact_match=self._exact_match, check_ordering=self._check_ordering,
            input_parameters=self._check_input, output=self._check_output,
        )
        raw = outcome.score
        score = 0.0 if self._strict_mode and raw < 1.0 else raw
        reason = ""
        if self._include_reason:
            reason = build_reason(
                outcome, expected, called, input_parameters=self._check_input, output=self._check_output
            )
            if score != raw:
                reason += _strict_note(raw)
        # Snapshots: the log is built later, and the case's lists may have changed by then.
        log = LazyLog(build_log, outcome, tuple(expected), tuple(called), self._param_names, self._strict_mode, raw)
        return self._make(score, score >= self._threshold, reason, log)

    def _by_names(self, e_names: list[str], c_names: list[str]) -> MetricResult:
        """Any mode without evaluation params: a pure function of the two name lists, remembered per pair.

        An agent repeats a few tool sequences over and over, so most runs score a pair of lists seen before;
        the score and reason are then looked up, and only the result is new, with a lazy log that is a copy
        of the pair's log (built once) sharing no container with it. Only lists of ``str`` are remembered
        (other names could compare equal across types: ``1 == True``).
        """
        return self._by_key((tuple(e_names), tuple(c_names)), e_names, c_names)

    def measure_names(self, expected: tuple[str, ...], called: tuple[str, ...]) -> MetricResult:
        """``measure`` of a case whose expected and called calls are these names (without evaluation params
        nothing else of a call counts), for a caller that has the names at hand, e.g. of a run against an
        expectation; the instance's ``.score``-style attributes are left as they are. Unweighted modes only."""
        if self._weighted:
            raise ValueError("measure_names scores names: this instance compares evaluation params")
        return self._by_key((expected, called), expected, called)

    def _by_key(self, key: tuple[tuple[str, ...], tuple[str, ...]], e_names: Sequence[str],
                c_names: Sequence[str]) -> MetricResult:
        memo = self._memo
        hit = memo.get(key)
        if hit is None:
            if not {*map(type, key[0]), *map(type, key[1])} <= _STR_TYPE:
                score, success, reason, build, args = self._score_by_names(e_names, c_names)
                return self._make(score, success, reason, LazyLog(build, *args))
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            score, success, reason, build, args = self._score_by_names(*key)
            hit = memo[key] = (score, success, reason, LazyLog(build, *args))
        score, success, reason, template = hit
        return self._make(score, success, reason, _copy_of(template))

    def _score_by_names(
        self, e_names: Sequence[str], c_names: Sequence[str]
    ) -> tuple[float, bool, str, Callable[..., dict[str, Any]], tuple[Any, ...]]:
        """``(score, success, reason, log builder, its arguments)`` of a names-only mode. The pairing the log
        shows is computed here, once per pair of lists, so that building a remembered result's log is only
        filling in a dict."""
        if self._fast:
            result = self._measure_default(e_names, c_names)
            build: Callable[..., dict[str, Any]] = _names_log
            # (expected, called, strict, raw) as the lazy log holds them, and the pairing
            args: tuple[Any, ...] = (*result.evaluation_log._args, matching.multiset_match(e_names, c_names))  # type: ignore[attr-defined]
        elif self._exact_match:
            result = self._measure_exact_names(e_names, c_names)
            outcome = score_names(e_names, c_names, True, self._check_ordering)
            build, args = names_log, (outcome, e_names, c_names, (), self._strict_mode, outcome.score)
        else:
            result = self._measure_names(e_names, c_names)
            log = result.evaluation_log
            build, args = log._build, log._args  # type: ignore[attr-defined]  # holds the outcome already
        return result.score, result.success, result.reason, build, args  # type: ignore[return-value]

    def _measure_default(self, e_names: Sequence[str], c_names: Sequence[str]) -> MetricResult:
        """Default mode, names only. A multiset count; the pairing for the log is lazy."""
        n = len(e_names)
        matched, missing, extra = matching.count_by_name(e_names, c_names)
        raw = matched / n if n else 1.0
        score = 0.0 if self._strict_mode and raw < 1.0 else raw
        reason = ""
        if self._include_reason:
            reason = _default_text(matched, n, missing, extra)
            if score != raw:
                reason += _strict_note(raw)
        log = LazyLog(_names_log, e_names, c_names, self._strict_mode, raw)
        return self._make(score, score >= self._threshold, reason, log)

    def _measure_names(self, e_names: Sequence[str], c_names: Sequence[str]) -> MetricResult:
        """Ordering mode on names alone (without evaluation params nothing else of a call counts)."""
        outcome = score_names(e_names, c_names, False, self._check_ordering)
        raw = outcome.score
        score = 0.0 if self._strict_mode and raw < 1.0 else raw
        reason = ""
        if self._include_reason:
            reason = names_reason(outcome, e_names, c_names)
            if score != raw:
                reason += _strict_note(raw)
        log = LazyLog(names_log, outcome, e_names, c_names, (), self._strict_mode, raw)
        return self._make(score, score >= self._threshold, reason, log)

    def _measure_exact_names(self, e_names: Sequence[str], c_names: Sequence[str]) -> MetricResult:
        """Exact modes on names alone: a multiset count (and a sequence comparison), no pairing table."""
        _, missing, extra = matching.count_by_name(e_names, c_names)
        first_difference = matching.first_difference(e_names, c_names) if self._check_ordering else None
        ok = first_difference is None if self._check_ordering else (missing is None and extra is None)
        score = 1.0 if ok else 0.0
        reason = ""
        if self._include_reason:
            reason = _exact_text(
                ok=ok, ordered=self._check_ordering, n=len(e_names), called_names=c_names, missing=missing,
                extra=extra, first_difference=first_difference, expected_names=e_names,
            )
        log = LazyLog(_scored_log, e_names, c_names, self._check_ordering, self._strict_mode)
        return self._make(score, score >= self._threshold, reason, log)


def _strict_note(raw: float) -> str:
    return f" Strict mode: {_fmt_num(raw)} is below 1, so the score is 0."


def _names_log(
    expected: Sequence[str], called: Sequence[str], strict: bool, raw: float, pairs: list[Pair] | None = None
) -> dict[str, Any]:
    """The default mode's log from names alone (the hot path keeps only the names); ``pairs`` if known."""
    if pairs is None:
        pairs = matching.multiset_match(expected, called)
    used_e = {p[0] for p in pairs}
    used_c = {p[1] for p in pairs}
    return {
        "mode": "default",
        "evaluation_params": [],
        "expected": list(expected),
        "called": list(called),
        "matches": [
            {"expected_index": i, "called_index": j, "name": expected[i], "weight": w} for i, j, w in pairs
        ],
        "missing": [name for i, name in enumerate(expected) if i not in used_e],
        "extra": [name for j, name in enumerate(called) if j not in used_c],
        "matched_weight": float(len(pairs)),
        "expected_count": len(expected),
        "raw_score": raw,
        "strict_mode": strict,
    }


_NAME_LIST_KEYS = ("evaluation_params", "expected", "called", "missing", "extra")


def _copied_log(template: LazyLog | dict[str, Any]) -> dict[str, Any]:
    """A names log equal to ``template``'s, sharing none of its lists or dicts (a caller may change its own)."""
    source = template.as_dict() if type(template) is LazyLog else template  # a dict after a pickle round trip
    log = source.copy()
    for key in _NAME_LIST_KEYS:
        log[key] = source[key].copy()
    log["matches"] = [match.copy() for match in source["matches"]]
    if "out_of_order" in source:
        log["out_of_order"] = [pair.copy() for pair in source["out_of_order"]]
    return log


def _copy_of(template: LazyLog) -> LazyLog:
    """``LazyLog(_copied_log, template)``, filled slot by slot (three per scored run)."""
    log = _new_lazy_log(LazyLog)
    log._build, log._args, log._data, log._json, log._json_with = _copied_log, (template,), None, None, None
    return log


_new_lazy_log = object.__new__


def _scored_log(expected: Sequence[str], called: Sequence[str], ordered: bool, strict: bool) -> dict[str, Any]:
    """The exact modes' log on names: the pairing is computed only when someone reads the log."""
    outcome = score_names(expected, called, True, ordered)
    return names_log(outcome, expected, called, (), strict, outcome.score)


class LazyLog(LazyMapping):
    """An evaluation log built on first read: ``build(*args)`` must return a plain dict.

    Most callers read only the score and reason; building the pairing details for every case would cost as
    much as the scoring itself. Reads like a read-only dict; ``dict(log)`` / pickling give a plain dict.
    Building twice from two threads is harmless (the result is the same).
    """

    __slots__ = ("_args", "_build", "_data", "_json", "_json_with")

    def __init__(self, build: Callable[..., dict[str, Any]], *args: Any) -> None:
        self._build, self._args = build, args
        self._data: dict[str, Any] | None = None
        # a remembered pair's log (a template, never handed out): its JSON text, and the text with the extra keys
        # of the last json_with (all text: equal ones encode the same), as (extra, text)
        self._json: str | None = None
        self._json_with: tuple[dict[str, str], str] | None = None

    def json_with(self, extra: Mapping[str, Any]) -> str:
        """The JSON text of ``{**log, **extra}`` (``dumps``), for a stored row's details.

        A remembered pair's result that nobody has read yet holds exactly its template's log: the text is then the
        template's, written once per pair, with ``extra`` appended (once per pair and extra keys of text, such as a
        run's expectation), and the copy is never built.
        """
        template = self._args[0] if self._build is _copied_log and self._data is None else None
        if type(template) is not LazyLog:
            return dumps({**self._get(), **extra}) if extra else dumps(self._get())
        source = template._get()
        text = template._json
        if text is None:
            text = template._json = dumps(source)
        if not extra:
            return text
        last = template._json_with
        if last is not None and last[0] == extra:
            for value in extra.values():
                if type(value) is not str:
                    break
            else:
                return last[1]
        if not source or not source.keys().isdisjoint(extra):  # an empty log, or keys replaced in place
            return dumps({**source, **extra})
        merged = f"{text[:-1]},{dumps(dict(extra))[1:]}"
        if all(type(k) is str and type(v) is str for k, v in extra.items()):
            template._json_with = (dict(extra), merged)
        return merged

    def _get(self) -> dict[str, Any]:
        data = self._data
        if data is None:
            data = self._data = self._build(*self._args)
        return data

    def as_dict(self) -> dict[str, Any]:
        """The built log itself (not a copy): for callers that copy it at C speed, ``{**log.as_dict(), ...}``."""
        return self._get()

    def __repr__(self) -> str:
        return repr(self._get())

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self._get(),))
