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
best pairing is exact (maximum-weight assignment / common subsequence, see ``matching``). The scoring is a
pure function (``score_tool_calls``); the metric class adds thresholds, reasons and results around it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from agentotel_eval.frozen import freeze
from agentotel_eval.metrics import matching
from agentotel_eval.metrics.base import BaseMetric, MetricResult
from agentotel_eval.metrics.matching import Pair
from agentotel_eval.metrics.registry import TOOL_CORRECTNESS
from agentotel_eval.test_case import ToolCall, ToolCallParams, as_tool_calls

__all__ = ["ToolCorrectnessMetric", "ToolCorrectnessOutcome", "metric_name_for", "score_tool_calls"]

_EVALUATOR_VERSION = "1"
#: results remembered per metric instance (see ``ToolCorrectnessMetric._measure``); all forgotten when full
_MEMO_SIZE = 4096
_STR = {str}
_MODES = {
    (False, False): "default",
    (True, False): "exact",
    (False, True): "ordering",
    (True, True): "exact_ordering",
}


def metric_name_for(exact_match: bool, check_ordering: bool, base: str = TOOL_CORRECTNESS.name) -> str:
    """``tool_correctness`` plus ``_exact`` and/or ``_ordering``: the stored name of a mode."""
    return base + ("_exact" if exact_match else "") + ("_ordering" if check_ordering else "")


# --- the pure scoring ---------------------------------------------------------------------------------------


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
        pairs = matching.weighted_lcs_match(
            expected, called, input_parameters=input_parameters, output=output
        )
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
        mode,
        1.0 if ok else 0.0,
        tuple(pairs),
        _unpaired(n, pairs, 0),
        _unpaired(m, pairs, 1),
        first_difference=first_difference,
        same_multiset=same_multiset,
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


# --- reasons ------------------------------------------------------------------------------------------------


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


def _pair_difference(expected: ToolCall, called: ToolCall, input_parameters: bool, output: bool) -> str:
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


def _default_text(
    matched: float, n: int, missing: Mapping[str, int] | None, extra: Mapping[str, int] | None
) -> str:
    """Default mode without params."""
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
    """Exact modes."""
    if ok:
        if not n:
            return "No tool calls were expected and none were made."
        what = "sequence" if ordered else "calls (order ignored)"
        return (
            f"Exact match{comparing}: the {len(called_names)} called tools are exactly the expected {what}."
        )
    if not n:
        return (
            f"No tool calls were expected, but {len(called_names)} were made: "
            f"{_fmt_counts(_count(called_names))}."
        )
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
    """A reason that always agrees with ``outcome.score``: what matched, what is missing,
    extra, out of order."""
    weighted = input_parameters or output
    partial: list[str] = []
    if weighted and outcome.mode in ("default", "ordering"):
        for i, j, w in outcome.pairs:
            if w < 1.0:
                diff = _pair_difference(expected[i], called[j], input_parameters, output)
                partial.append(
                    f"{_fmt_name(expected[i].name)} #{i + 1} ({_fmt_num(w)}; differs: {diff or '-'})"
                )
    comparing = f", comparing name, {_considered(input_parameters, output)}" if weighted else ""
    return names_reason(outcome, [c.name for c in expected], [c.name for c in called], comparing, partial)


def names_reason(
    outcome: ToolCorrectnessOutcome,
    expected: Sequence[str],
    called: Sequence[str],
    comparing: str = "",
    partial: Sequence[str] = (),
) -> str:
    """``build_reason`` from the call names (all it reads besides the pair differences
    given in ``partial``)."""
    n = len(expected)
    missing = _count(_missing_names(outcome, expected)) or None
    extra = _count(called[j] for j in outcome.extra) or None
    if outcome.mode in ("exact", "exact_ordering"):
        return _exact_text(
            ok=outcome.score == 1.0,
            ordered=outcome.mode == "exact_ordering",
            n=n,
            called_names=called,
            missing=missing,
            extra=extra,
            first_difference=outcome.first_difference,
            expected_names=expected,
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
        outcome,
        [c.name for c in expected],
        [c.name for c in called],
        evaluation_params,
        strict_mode,
        raw_score,
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


def verbose_steps(log: Mapping[str, Any]) -> str:
    """The intermediate steps of a score, for ``verbose=True`` (printed, never logged)."""

    def names(values: Sequence[str]) -> str:
        return "[" + ", ".join(map(_fmt_name, values)) + "]"

    pairs = ", ".join(
        f"{_fmt_name(p['name'])} #{p['expected_index'] + 1}→#{p['called_index'] + 1} "
        f"({_fmt_num(p['weight'])})"
        for p in log["matches"]
    )
    lines = [
        f"  mode: {log['mode']}"
        + (
            f" (evaluation params: {', '.join(log['evaluation_params'])})" if log["evaluation_params"] else ""
        ),
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
        score = (
            f"  score: {_fmt_num(log['raw_score'])} "
            f"({'exact match' if log['raw_score'] == 1.0 else 'not exact'})"
        )
    else:
        score = (
            f"  score: {_fmt_num(log['matched_weight'])} / {log['expected_count']} = "
            f"{_fmt_num(log['raw_score'])}"
        )
    lines.append(score + (" (strict mode)" if log["strict_mode"] else ""))
    return "\n".join(lines)


# --- the metric ---------------------------------------------------------------------------------------------


def _parse_params(
    values: Iterable[ToolCallParams | str] | ToolCallParams | str | None,
) -> tuple[ToolCallParams, ...]:
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


def _calls_of(case: Any, attr: str) -> tuple[list[Any], tuple[Any, ...]] | None:
    """The case's list of calls and their names: objects with a ``name`` (ToolCalls, or a duck-typed case's
    calls from another library) as they are, plain names and dicts (a hand-edited case) normalised to
    ToolCalls. None when the field is None."""
    try:
        value = getattr(case, attr)
    except AttributeError:
        raise TypeError(
            f"{type(case).__name__} has no '{attr}': tool correctness needs a test case with "
            "expected_tools and tools_called (EvalTestCase or ModelTestCase)"
        ) from None
    if value is None:
        return None
    if type(value) is not list:
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
            raise TypeError(f"{type(case).__name__}.{attr} must be a list of tool calls, got {value!r}")
        value = list(value)
    try:
        return value, tuple([call.name for call in value])
    except AttributeError:  # names or dicts among them
        calls = as_tool_calls(value) or []
        return calls, tuple([call.name for call in calls])


class ToolCorrectnessMetric(BaseMetric):
    """Did the agent call the expected tools? Deterministic and free; see the module doc for the modes.

    ``should_exact_match`` / ``should_consider_ordering`` (deepeval's names) are aliases of ``exact_match`` /
    ``check_ordering``; ``verbose_mode`` of ``verbose``. The configuration is read-only after construction so
    one instance can score from many threads.
    """

    name = TOOL_CORRECTNESS.name
    version = _EVALUATOR_VERSION

    def __init__(
        self,
        threshold: float = TOOL_CORRECTNESS.threshold,
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
        self._memo: dict[tuple[tuple[str, ...], tuple[str, ...]], MetricResult] = {}

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

    def _measure(self, case: Any) -> MetricResult:
        expected = _calls_of(case, "expected_tools")
        if expected is None:
            return self._result(
                score=None,
                success=None,
                reason="Skipped: the test case has no expected_tools to compare with.",
                status="skipped",
                evaluation_log=freeze({"mode": self._mode}),
            )
        called = _calls_of(case, "tools_called")
        if called is None and hasattr(case, "tool_calls"):
            called = _calls_of(case, "tool_calls")
        if called is None:
            called = ([], ())
        # Without evaluation params the names decide the result, and an agent repeats a few tool sequences, so
        # a pair of name lists seen before gets the same (immutable) result again. Only str names are
        # remembered: other names may compare equal across types (1 == True).
        key = None
        if (
            not (self._check_input or self._check_output)
            and {*map(type, expected[1]), *map(type, called[1])} <= _STR
        ):
            key = (expected[1], called[1])
            remembered = self._memo.get(key)
            if remembered is not None:
                return remembered
        result = self._score(expected[0], called[0])
        if key is not None:
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = result
        return result

    def _score(self, expected: Sequence[Any], called: Sequence[Any]) -> MetricResult:
        outcome = score_tool_calls(
            expected,
            called,
            exact_match=self._exact_match,
            check_ordering=self._check_ordering,
            input_parameters=self._check_input,
            output=self._check_output,
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
        log = freeze(build_log(outcome, expected, called, self._param_names, self._strict_mode, raw))
        return self._result(score=score, success=score >= self._threshold, reason=reason, evaluation_log=log)


def _strict_note(raw: float) -> str:
    return f" Strict mode: {_fmt_num(raw)} is below 1, so the score is 0."
