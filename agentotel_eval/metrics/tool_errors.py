"""Tool Error Detection: HOW an agent misused its tools, found by deterministic detectors and an LLM judge.

``ToolsErrorMetric(model, threshold=0.7, error_types=None, verbose=False, **llm_kwargs)`` scores one test case
(an ``EvalTestCase``, a ``ModelTestCase`` or an agent run's test case). The detectors run first, for free;
their findings go to the judge as evidence, and the judge makes ONE call (plus at most one repair request).

How the two combine (deterministic findings are facts; the judge cannot veto them):

- ``detected`` is true when the judge detected an error OR any detector found one it is sure of;
- ``confidence`` is the highest of a sure finding's confidence and the judge's, else the judge's confidence;
- a finding the detector is not sure of (``uncertain``: the data it would need was not recorded, several
  readings fit) is evidence for the judge, not a fact: the judge decides;
- ``errors`` holds the judge's errors, then every finding the judge did not already report (same type, naming
  the same tool or call number); all findings are also under ``detectors``;
- when the judge missed findings, ``reason`` names them; when it said "not detected" but a detector found an
  error, ``reason`` says so and quotes the judge;
- ``error_severity`` is the higher of the judge's and the findings' (invalid_function: high; others: medium).

``score = confidence`` when detected, else 0.0; ``success = not (detected and confidence >= threshold)``.
With ``judge=False`` only the detectors run (metric ``tool_errors_detectors``, ``model: null``, cost 0).

litellm is imported only when a litellm-backed judge makes its first call.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentotel_eval.detectors import Finding, could_not_run_view, detect_view, run_view
from agentotel_eval.detectors.declarations import parse_tool_rules
from agentotel_eval.detectors.registry import RULES, check_rule_names
from agentotel_eval.detectors.types import ERROR_TYPES, INVALID_FUNCTION, PARAMETER_ERROR, SEVERITIES
from agentotel_eval.judge import prompts
from agentotel_eval.judge.cache import ResponseCache, resolve_cache
from agentotel_eval.judge.client import CustomLLMClient
from agentotel_eval.judge.errors import JudgeOutputError
from agentotel_eval.judge.history import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_VALUE_CHARS,
    SOURCE_TOOL_CALLS,
    ToolHistory,
    render_calls,
    render_text,
    render_tool_history,
    render_value,
    truncate,
)
from agentotel_eval.judge.parse import extract_verdict
from agentotel_eval.judge.runner import DEFAULT_MAX_CONCURRENCY, JudgeRunner
from agentotel_eval.judge.untrusted import data_block
from agentotel_eval.metrics.base import BaseMetric, MetricResult, run_sync
from agentotel_eval.metrics.registry import TOOL_ERRORS, TOOL_ERRORS_DETECTORS
from agentotel_eval.retry import RetryPolicy
from agentotel_eval.test_case import ToolCall, ToolDefinition, as_tool_calls, as_tool_definitions

PROMPT_VERSION = "v1"

_SEVERITY_SYNONYMS = {
    "minor": "low",
    "moderate": "medium",
    "major": "high",
    "critical": "high",
    "severe": "high",
    "no": "none",
    "null": "none",
}
#: a finding's severity: its rule's (invalid_function's are high, the others medium)
_TYPE_SEVERITY = {
    rule.type: rule.severity for rule in RULES if not rule.observation and rule.severity == "high"
}
VERDICT_KEYS = ("detected", "confidence", "reason", "error_types", "errors", "error_severity")
#: the keys of ``evaluation_log``, in order (those of the reference document, then cost, model and findings)
LOG_KEYS = (
    *VERDICT_KEYS,
    "user_input",
    "tool_history",
    "ai_response",
    "error_types_filter",
    "score",
    "threshold",
    "success",
    "cost_usd",
    "model",
    "detectors",
    "could_not_run",
    "informational",
    "uncertain",
)
MAX_TEXT_CHARS = 8_000  # user input and final response, as shown to the judge and stored in the log


@dataclass(frozen=True, slots=True)
class Verdict:
    """A validated verdict (the judge's, the detectors', or both combined)."""

    detected: bool
    confidence: float
    reason: str
    error_types: list[str]
    errors: list[dict[str, str]]
    error_severity: str
    dropped: list[str] = field(default_factory=list)  # error types the judge returned outside the filter

    def as_log(self) -> dict[str, Any]:
        return {
            "detected": self.detected,
            "confidence": self.confidence,
            "reason": self.reason,
            "error_types": list(self.error_types),
            "errors": [dict(e) for e in self.errors],
            "error_severity": self.error_severity,
        }


# -- validation of the judge's answer (pure) -----------------------------------------------------------------
def as_bool(value: Any) -> bool:
    """A real boolean: true/false, or their unambiguous spellings ("false" is False, not truthy)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "yes"):
            return True
        if text in ("false", "no"):
            return False
    raise JudgeOutputError(f'"detected" must be true or false, got {value!r}')


def as_confidence(value: Any) -> float:
    """A confidence in [0, 1]. ``"85%"`` and a whole number from 2 to 100 are clearly
    percentages; 1.5 is not."""
    percent = False
    if isinstance(value, bool) or value is None:
        raise JudgeOutputError(f'"confidence" must be a number from 0 to 1, got {value!r}')
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("%"):
            percent, text = True, text[:-1].strip()
        try:
            number = float(text)
        except ValueError:
            raise JudgeOutputError(f'"confidence" must be a number from 0 to 1, got {value!r}') from None
    elif isinstance(value, int | float):
        number = float(value)
    else:
        raise JudgeOutputError(f'"confidence" must be a number from 0 to 1, got {value!r}')
    if not math.isfinite(number):
        raise JudgeOutputError(f'"confidence" must be a finite number, got {value!r}')
    if percent:
        if 0.0 <= number <= 100.0:
            return number / 100.0
    elif -1e-9 <= number <= 1.0 + 1e-9:
        return min(1.0, max(0.0, number))
    elif 1.0 < number <= 100.0 and number.is_integer():
        return number / 100.0
    raise JudgeOutputError(f'"confidence" must be a number from 0 to 1 (or a percentage), got {value!r}')


def _type_name(value: Any) -> str:
    return str(value).strip().lower().replace("-", "_").replace(" ", "_")


def _severity(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    text = _SEVERITY_SYNONYMS.get(text, text)
    return text if text in SEVERITIES else None


def parse_verdict(text: str, allowed: Sequence[str], untrusted: str | None = None) -> Verdict:
    """The judge's answer as a Verdict, or JudgeOutputError saying what is wrong with it."""
    obj = extract_verdict(text, expected_keys=VERDICT_KEYS, required_keys=("detected",), untrusted=untrusted)
    detected = as_bool(obj["detected"])
    if "confidence" in obj:
        confidence = as_confidence(obj["confidence"])
    elif not detected:
        confidence = 0.0  # score is 0.0 whatever it is; not worth a repair call
    else:
        raise JudgeOutputError('"confidence" is missing')
    reason = obj.get("reason")
    reason = (
        reason.strip() if isinstance(reason, str) else ("" if reason is None else render_value(reason, 2000))
    )

    allowed_set = set(allowed)
    dropped: list[str] = []
    errors: list[dict[str, str]] = []
    raw_errors = obj.get("errors") or []
    if isinstance(raw_errors, Mapping):
        raw_errors = [raw_errors]
    if not isinstance(raw_errors, list):
        raise JudgeOutputError(f'"errors" must be a list, got {type(raw_errors).__name__}')
    listed = 0
    for item in raw_errors:
        if isinstance(item, Mapping):
            kind = _type_name(item.get("type", ""))
            description = item.get("description", item.get("message", ""))
        elif isinstance(item, str):
            kind, description = _type_name(item), ""
        else:
            continue
        listed += 1
        if kind not in allowed_set:
            dropped.append(kind)
            continue
        errors.append(
            {
                "type": kind,
                "description": description
                if isinstance(description, str)
                else render_value(description, 2000),
            }
        )
    raw_types = obj.get("error_types") or []
    if isinstance(raw_types, str):
        raw_types = [raw_types]
    types: list[str] = []
    if isinstance(raw_types, list):
        for item in raw_types:
            listed += 1
            kind = _type_name(item)
            if kind in allowed_set:
                types.append(kind)
            else:
                dropped.append(kind)
    types = _unique([*types, *(e["type"] for e in errors)])

    if not detected and errors:
        raise JudgeOutputError(
            f'"detected" is false but "errors" lists {len(errors)} error(s); make them agree'
        )
    severity = _severity(obj.get("error_severity"))
    if detected and listed and not types:
        # The judge found only error types outside the filter: for the types asked about,
        # nothing was detected.
        detected = False
        reason = (
            f"{reason} [Only error types outside error_types were reported "
            f"({', '.join(_unique(dropped))}); they were dropped.]"
        ).strip()
    if not detected:
        severity = "none"
    elif severity is None or severity == "none":
        severity = "medium"  # the judge detected an error but gave no usable severity: documented default
    return Verdict(detected, confidence, reason, types, errors, severity, _unique(dropped))


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


# -- combination with the detectors (pure) -------------------------------------------------------------------
def findings_severity(findings: Sequence[Finding]) -> str:
    if not findings:
        return "none"
    return max((_TYPE_SEVERITY.get(f.type, "medium") for f in findings), key=SEVERITIES.index)


def _sure(findings: Sequence[Finding]) -> list[Finding]:
    return [f for f in findings if not f.uncertain]


def _covered(finding: Finding, errors: Sequence[Mapping[str, str]]) -> bool:
    """Whether the judge already reported this finding: same type, naming the tool or one of the calls."""
    marks = [finding.tool_name, *(f"#{i + 1}" for i in finding.call_indices)]
    return any(
        e["type"] == finding.type and any(m and m in e.get("description", "") for m in marks) for e in errors
    )


def detectors_verdict(findings: Sequence[Finding], checked: str) -> Verdict:
    """The verdict of the detectors alone (``judge=False``): detected when any rule found an error, with the
    highest confidence of a finding; a verdict of uncertain findings only scores below
    the default threshold."""
    if not findings:
        return Verdict(
            detected=False,
            confidence=0.0,
            reason=f"No deterministic check found an error ({checked}).",
            error_types=[],
            errors=[],
            error_severity="none",
        )
    summary = "; ".join(_described(f) for f in findings[:5])
    more = f" (and {len(findings) - 5} more)" if len(findings) > 5 else ""
    sure = _sure(findings)
    reason = (
        f"Deterministic checks found {len(findings)} error(s): {summary}{more}"
        if sure
        else f"Deterministic checks found {len(findings)} possible error(s) they are not "
        f"sure of: {summary}{more}"
    )
    return Verdict(
        detected=True,
        confidence=max(f.confidence for f in findings),
        reason=reason,
        error_types=_unique(f.type for f in findings),
        errors=[{"type": f.type, "description": f.description} for f in findings],
        error_severity=findings_severity(findings),
    )


def _described(found: Finding) -> str:
    return found.description + (f" (not sure: confidence {found.confidence:g})" if found.uncertain else "")


def combine(judge: Verdict, findings: Sequence[Finding]) -> Verdict:
    """The judge's verdict with the deterministic findings added as facts (see the module docstring); findings
    the detectors are not sure of were the judge's to weigh, and do not overrule it."""
    findings = _sure(findings)
    if not findings:
        return judge
    missed = [f for f in findings if not _covered(f, judge.errors)]
    errors = [*judge.errors, *({"type": f.type, "description": f.description} for f in missed)]
    reason = judge.reason
    if not judge.detected:
        summary = "; ".join(f.description for f in findings[:5])
        reason = (
            f"Deterministic checks found {len(findings)} error(s) the judge did not report: {summary}. "
            f"The judge answered detected=false (confidence {judge.confidence:g}): {judge.reason}"
        )
    elif missed:
        summary = "; ".join(f.description for f in missed[:5])
        reason = f"{judge.reason} [Deterministic checks also found: {summary}]".strip()
    severity = max(judge.error_severity, findings_severity(findings), key=SEVERITIES.index)
    sure = max(f.confidence for f in findings)
    return Verdict(
        detected=True,
        confidence=max(sure, judge.confidence) if judge.detected else sure,
        reason=reason,
        error_types=_unique([*judge.error_types, *(f.type for f in findings)]),
        errors=errors,
        error_severity=severity,
        dropped=judge.dropped,
    )


# -- the metric ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Prepared:
    """What one case turns into before any model is called."""

    user_input: str
    ai_response: str
    history: ToolHistory
    findings: list[Finding]
    available: list[ToolDefinition] | None
    reasoning: str
    unchecked: tuple[str, ...] = ()  # what the detectors could not check, and why
    observed: tuple[Finding, ...] = ()  # low-severity observations: shown, never part of the verdict


class ToolsErrorMetric(BaseMetric):
    """Detects tool-usage errors in one agent run (see the module docstring for the semantics)."""

    name = TOOL_ERRORS.name
    version = "1"

    def __init__(
        self,
        model: str | CustomLLMClient | None = None,
        threshold: float = TOOL_ERRORS.threshold,
        error_types: Sequence[str] | None = None,
        verbose: bool = False,
        *,
        judge: bool = True,
        cache: ResponseCache | str | Any | None = None,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        retry: RetryPolicy | None = None,
        json_mode: bool | None = None,
        max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
        max_history_chars: int = DEFAULT_MAX_CHARS,
        tool_rules: Sequence[Any] = (),
        disabled_rules: Sequence[str] = (),
        **llm_kwargs: Any,
    ) -> None:
        super().__init__()
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or not 0.0 <= threshold <= 1.0
        ):
            raise ValueError(f"threshold must be a number from 0 to 1, got {threshold!r}")
        self.threshold = float(threshold)
        self.error_types = _check_error_types(error_types)
        # ``[[tools]]`` declarations (``declarations.parse_tool_rules``): argument matchers and
        # required earlier tools
        rules = list(tool_rules)
        self.tool_rules = (
            parse_tool_rules(rules) if rules and all(isinstance(r, Mapping) for r in rules) else tuple(rules)
        )
        self._detector_types = tuple(t for t in ERROR_TYPES if t in self.error_types)
        self.disabled_rules = check_rule_names(list(disabled_rules))
        self.error_types_given = error_types is not None
        self.verbose = verbose
        self.judge = bool(judge)
        self.cache = cache
        self.max_value_chars = max_value_chars
        self.max_history_chars = max_history_chars
        self.json_mode = json_mode
        self.runner: JudgeRunner | None = None
        if not self.judge:
            return
        if model is None:
            raise ValueError(
                "ToolsErrorMetric needs a model (a litellm name, 'provider:model' or a "
                "CustomLLMClient), or judge=False to run the deterministic detectors only"
            )
        retries = {k: llm_kwargs.pop(k) for k in ("num_retries", "max_retries") if k in llm_kwargs}
        if retries:
            if retry is not None:
                raise ValueError("pass either retry=RetryPolicy(...) or num_retries/max_retries, not both")
            count = max(int(v) for v in retries.values())
            retry = RetryPolicy(max_attempts=max(1, count + 1))
        timeout = llm_kwargs.get("timeout")
        if isinstance(model, CustomLLMClient):
            extra = sorted(set(llm_kwargs) - {"timeout"})
            if extra or json_mode is not None:
                raise ValueError(
                    f"llm_kwargs ({', '.join(extra) or 'json_mode'}) apply to litellm models only, "
                    "not to a CustomLLMClient"
                )
            client: CustomLLMClient = model
            attempt_timeout = float(timeout) if timeout is not None else 120.0
        elif isinstance(model, str):
            from agentotel_eval.judge.litellm_client import LiteLLMClient

            client = LiteLLMClient(model, json_mode=json_mode, **llm_kwargs)
            # litellm enforces its own timeout; ours is a backstop a little later
            attempt_timeout = (client.timeout or 120.0) + 5.0
        else:
            raise TypeError(f"model must be a model name or a CustomLLMClient, got {type(model).__name__}")
        self.runner = JudgeRunner(
            client, retry=retry, max_concurrency=max_concurrency, attempt_timeout=attempt_timeout
        )

    @property
    def metric_name(self) -> str:
        return TOOL_ERRORS.name if self.judge else TOOL_ERRORS_DETECTORS.name

    @property
    def model_name(self) -> str | None:
        return self.runner.model_name if self.runner is not None else None

    def __repr__(self) -> str:
        return (
            f"ToolsErrorMetric(model={self.model_name!r}, threshold={self.threshold}, "
            f"error_types={self.error_types if self.error_types_given else None}, judge={self.judge})"
        )

    # -- entry points ---------------------------------------------------------------------------------------
    def _measure(self, case: Any) -> MetricResult:
        if not self.judge:
            return self._score_detectors(case)
        cache = resolve_cache(self.cache)  # here, in the caller's context (evaluate() sets the ContextVar)
        return run_sync(self._score_with_judge(case, cache))

    async def _a_measure(self, case: Any) -> MetricResult:
        if not self.judge:
            return self._score_detectors(case)
        return await self._score_with_judge(case, resolve_cache(self.cache))

    # -- preparation (pure) ---------------------------------------------------------------------------------
    def _prepare(self, case: Any) -> _Prepared:
        if not hasattr(case, "actual_output") and callable(getattr(case, "to_test_case", None)):
            case = case.to_test_case()  # an AgentRun from trace reconstruction
        if not hasattr(case, "input"):
            raise TypeError(f"ToolsErrorMetric scores a test case with an 'input', got {type(case).__name__}")
        user_input = render_text(case.input)
        if not user_input.strip() and self.judge:  # the detectors read only the calls: they run without it
            raise _CaseError("the test case has no input (ToolsErrorMetric requires input)")
        output = getattr(case, "actual_output", None)
        ai_response = render_text(output) if output is not None else ""
        structured = getattr(case, "tool_calls", None)
        calls = _calls_of(case, structured)
        available = getattr(case, "available_tools", None)
        available = as_tool_definitions(available)
        metadata = getattr(case, "metadata", None)
        metadata = metadata if isinstance(metadata, Mapping) else {}
        reconstruction = metadata.get("reconstruction")
        view = run_view(
            calls,
            available,
            rules=self.tool_rules,
            answer=ai_response or None,
            user_input=user_input,
            reconstruction=reconstruction if isinstance(reconstruction, Mapping) else None,
            **run_context(metadata.get("context")),
        )
        findings, observed = detect_view(view, self._detector_types, disabled=self.disabled_rules)
        unchecked = tuple(could_not_run_view(view, self._detector_types, disabled=self.disabled_rules))
        if structured and type(structured) is list:  # the history's source: the calls just converted
            history = render_calls(calls, SOURCE_TOOL_CALLS, self.max_value_chars, self.max_history_chars)
        else:
            history = render_tool_history(
                case, max_value_chars=self.max_value_chars, max_chars=self.max_history_chars
            )
        reasoning = render_text(getattr(case, "reasoning", None))
        return _Prepared(
            truncate(user_input, MAX_TEXT_CHARS),
            truncate(ai_response, MAX_TEXT_CHARS),
            history,
            findings,
            available,
            truncate(reasoning, MAX_TEXT_CHARS),
            unchecked,
            tuple(observed),
        )

    def _checked(self, prepared: _Prepared) -> str:
        """Which deterministic checks ran, and which could not for lack of tool definitions."""
        ran = self._detector_types
        if not ran:  # pragma: no cover - all six have rules
            return "no deterministic check covers the selected error types"
        text = "checks run: " + ", ".join(ran)
        if prepared.available is None:
            blind = [t for t in (INVALID_FUNCTION, PARAMETER_ERROR) if t in ran]
            if blind:
                text += f" ({' and '.join(blind)} not checkable: the available tools are unknown)"
        elif PARAMETER_ERROR in ran and not any(t.parameters for t in prepared.available):
            text += " (parameter_error not checkable: no tool schema is known)"
        return text

    def _log(
        self,
        prepared: _Prepared,
        verdict: Verdict | None,
        *,
        score: float | None,
        success: bool | None,
        cost: float | None,
    ) -> dict[str, Any]:
        judged = (
            verdict.as_log()
            if verdict is not None
            else {
                "detected": None,
                "confidence": None,
                "reason": None,
                "error_types": [],
                "errors": [],
                "error_severity": None,
            }
        )
        return {
            **judged,
            "user_input": prepared.user_input,
            "tool_history": prepared.history.text,
            "ai_response": prepared.ai_response,
            "error_types_filter": list(self.error_types),
            "score": score,
            "threshold": self.threshold,
            "success": success,
            "cost_usd": cost,
            "model": self.model_name,
            "detectors": [f.to_dict() for f in prepared.findings],
            # what the detectors could not check for lack of recorded data ([judge] only_when =
            # detector_uncertain)
            "could_not_run": list(prepared.unchecked),
            "informational": [f.to_dict() for f in prepared.observed],
            # nothing found the detectors are sure of, and something they could not check or are not sure of:
            # what [judge] only_when = ["detector_uncertain"] sends to the judge
            "uncertain": not _sure(prepared.findings) and bool(prepared.unchecked or prepared.findings),
        }

    def _scored(
        self, prepared: _Prepared, verdict: Verdict, cost: float | None, started: float
    ) -> MetricResult:
        score = verdict.confidence if verdict.detected else 0.0
        success = not (verdict.detected and verdict.confidence >= self.threshold)
        log = self._log(prepared, verdict, score=score, success=success, cost=cost)
        return self._result(
            score=score,
            success=success,
            reason=verdict.reason,
            evaluation_log=log,
            cost_usd=cost,
            model=log["model"],
            latency_s=time.perf_counter() - started,
        )

    def _failed(
        self,
        message: str,
        started: float,
        prepared: _Prepared | None = None,
        cost: float | None = None,
        raw: str | None = None,
    ) -> MetricResult:
        if prepared is None:  # the case itself was unusable: same keys, nothing known
            prepared = _Prepared("", "", ToolHistory("", "none", False, 0, False), [], None, "")
        log = self._log(prepared, None, score=None, success=None, cost=cost)
        log["reason"] = message
        if raw is not None:
            log["raw_response"] = raw  # the judge's unusable answer, kept for diagnosis
        return self._result(
            score=None,
            success=None,
            reason=message,
            status="error",
            error=message,
            evaluation_log=log,
            cost_usd=cost,
            model=self.model_name,
        ).with_latency(time.perf_counter() - started)

    # -- scoring --------------------------------------------------------------------------------------------
    def _score_detectors(self, case: Any) -> MetricResult:
        started = time.perf_counter()
        try:
            prepared = self._prepare(case)
        except _CaseError as exc:
            return self._failed(str(exc), started)
        verdict = detectors_verdict(prepared.findings, self._checked(prepared))
        return self._scored(prepared, verdict, 0.0, started)

    async def _score_with_judge(self, case: Any, cache: ResponseCache | None) -> MetricResult:
        assert self.runner is not None
        started = time.perf_counter()
        try:
            prepared = self._prepare(case)
        except _CaseError as exc:
            return self._failed(str(exc), started)
        messages, untrusted = self.build_messages(prepared)
        allowed = list(self.error_types)

        def validate(text: str) -> Verdict:
            return parse_verdict(text, allowed, untrusted)

        outcome = await self.runner.judge(
            messages,
            validate,
            cache=cache,
            cache_params={"prompt": f"tool_errors.{PROMPT_VERSION}", "json_mode": self.json_mode},
        )
        if self.verbose:
            print(f"[{self.metric_name}] findings={[f.description for f in prepared.findings]}")
            print(
                f"[{self.metric_name}] judge answer ({outcome.attempts} attempt(s), "
                f"cached={outcome.cached}): {truncate(outcome.raw or '', 2000)}"
            )
        if outcome.value is None:
            raw = outcome.raw
            message = f"judge failed: {outcome.error}"
            if raw:
                message += f" (raw answer: {truncate(raw, 200)})"
            return self._failed(message, started, prepared, outcome.cost_usd, raw)
        verdict = combine(outcome.value, prepared.findings)
        return self._scored(prepared, verdict, outcome.cost_usd, started)

    def build_messages(self, prepared: _Prepared) -> tuple[list[dict[str, str]], str]:
        """The judge's messages, and the untrusted text they contain (to reject echoed verdicts)."""
        type_list = "\n".join(f"- {name}: {ERROR_TYPES[name]}" for name in self.error_types)
        system = prompts.render(f"tool_errors.{PROMPT_VERSION}.system", error_type_list=type_list)
        tools_text = _render_tools(prepared.available, self.max_value_chars)
        findings_text = (
            "\n".join(f"- [{f.type}] {_described(f)}" for f in prepared.findings) or "findings: none"
        )
        values = {
            "user_input": prepared.user_input,
            "available_tools": tools_text,
            "tool_history": prepared.history.text,
            "ai_response": prepared.ai_response or "(the agent gave no final response)",
            "reasoning": prepared.reasoning or "(not provided)",
            "findings": f"{self._checked(prepared)}\n{findings_text}",
        }
        blocks = {name: data_block(name, text) for name, text in values.items()}
        user = prompts.render(
            f"tool_errors.{PROMPT_VERSION}.user", history_note=prepared.history.note, **blocks
        )
        untrusted = "\n".join(values.values())
        return [{"role": "system", "content": system}, {"role": "user", "content": user}], untrusted


def run_context(value: Any) -> dict[str, Any]:
    """The run's context a test case's ``metadata["context"]`` carries (trace reconstruction writes it): the
    system prompt ("" when recorded as none), the assistant's text between calls, the service,
    the agent, the start."""
    if not isinstance(value, Mapping):
        return {}  # a hand-written case: what it gives is all there is
    out: dict[str, Any] = {"system_prompt": value.get("system_prompt")}
    if not isinstance(out["system_prompt"], str | None):
        out["system_prompt"] = None
    for key in ("service", "agent"):
        if isinstance(value.get(key), str):
            out[key] = value[key]
    texts = value.get("assistant_texts")
    if isinstance(texts, list | tuple):
        out["assistant_texts"] = tuple(t for t in texts if isinstance(t, str))
    started = value.get("started")
    if isinstance(started, str):
        with contextlib.suppress(ValueError):
            out["started"] = dt.datetime.fromisoformat(started)
    return out


class _CaseError(ValueError):
    """The test case lacks what the metric needs; reported as a result with status error."""


def _check_error_types(error_types: Sequence[str] | None) -> tuple[str, ...]:
    if error_types is None:
        return tuple(ERROR_TYPES)
    if isinstance(error_types, str):
        error_types = [error_types]
    names = [_type_name(t) for t in error_types]
    unknown = [n for n in names if n not in ERROR_TYPES]
    if unknown:
        raise ValueError(f"unknown error type(s) {unknown}; expected some of: {', '.join(ERROR_TYPES)}")
    if not names:
        raise ValueError("error_types is empty: pass None for all types")
    return tuple(t for t in ERROR_TYPES if t in names)


def _calls_of(case: Any, structured: Any = None) -> list[ToolCall]:
    """The case's structured calls (``structured``, its ``tool_calls`` if the caller read them), else the
    ``tools_called``, as ToolCalls."""
    calls = structured if structured is not None else getattr(case, "tool_calls", None)
    if calls is None:
        calls = getattr(case, "tools_called", None)
    if type(calls) is list:
        return as_tool_calls(calls)
    return [ToolCall.from_value(c) for c in calls or []]


def _render_tools(available: Sequence[ToolDefinition] | None, max_value_chars: int) -> str:
    if available is None:
        return "(not recorded)"
    if not available:
        return "(none: the agent had no tools)"
    lines = []
    for tool in available:
        line = f"- {tool.name}"
        if tool.description:
            line += f": {render_value(tool.description, 300)}"
        if tool.parameters:
            line += f"\n  parameters schema: {render_value(tool.parameters, max_value_chars)}"
        lines.append(line)
    return truncate("\n".join(lines), max_value_chars * 4)
