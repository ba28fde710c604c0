"""Configuration of online scoring: ``[scoring]``, ``[judge]``, ``[forward]``, ``[[expectations]]``, ``dataset``.

Config is data: frozen objects built from the parsed TOML with ``from_dict``, which rejects unknown keys by
name, so a typo fails at start-up instead of silently disabling a feature.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentotel_eval.collector.forward.forwarder import ForwardConfig, ForwardConfigError
from agentotel_eval.collector.score.expectations import (
    MODES,
    Dataset,
    ExpectationConfigError,
    ExpectationRule,
    parse_modes,
    parse_rules,
)

ERROR_TYPES = (
    "parameter_error", "invalid_function", "sequence_error", "result_ignored", "repeated_failure", "error_handling",
)
#: when the judge runs for a run (any of): every sampled run, runs failing a deterministic check, runs with a
#: failed tool call, runs where a deterministic detector found an error
ONLY_WHEN = ("always", "deterministic_failed", "tool_error", "detector_found")


class ScoringConfigError(ValueError):
    """An invalid scoring/judge/forward setting; the message names the key."""


def _check_keys(section: str, data: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ScoringConfigError(f"[{section}] unknown key(s) {unknown}; allowed: {sorted(allowed)}")


def _number(section: str, key: str, value: Any, lo: float | None = None, hi: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScoringConfigError(f"[{section}] {key} must be a number, got {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
        raise ScoringConfigError(f"[{section}] {key} must be {bounds}, got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class ScoringSettings:
    enabled: bool = True
    modes: tuple[str, ...] = MODES
    threshold: float = 0.5
    detectors: bool = True

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScoringSettings:
        if not isinstance(data, Mapping):
            raise ScoringConfigError("[scoring] must be a table")
        _check_keys("scoring", data, {"enabled", "modes", "threshold", "detectors"})
        try:
            modes = parse_modes(data["modes"], "[scoring] modes") if "modes" in data else MODES
        except ExpectationConfigError as exc:
            raise ScoringConfigError(str(exc)) from None
        for key in ("enabled", "detectors"):
            if key in data and not isinstance(data[key], bool):
                raise ScoringConfigError(f"[scoring] {key} must be true or false")
        return cls(
            enabled=data.get("enabled", True),
            modes=modes,
            threshold=_number("scoring", "threshold", data.get("threshold", 0.5), 0.0, 1.0),
            detectors=data.get("detectors", True),
        )


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    model: str
    sample_rate: float = 1.0
    error_types: tuple[str, ...] | None = None
    threshold: float = 0.7
    max_concurrency: int = 4
    max_cost_usd_per_day: float | None = None
    only_when: tuple[str, ...] = ("always",)
    timeout_s: float = 60.0
    max_retries: int = 3
    llm_kwargs: Mapping[str, Any] = field(default_factory=dict)  # api_base, api_key, ... passed to litellm
    cache_dir: str = ""  # on-disk judge response cache (off when empty)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeSettings:
        if not isinstance(data, Mapping):
            raise ScoringConfigError("[judge] must be a table")
        allowed = {"model", "sample_rate", "error_types", "threshold", "max_concurrency", "max_cost_usd_per_day",
                   "only_when", "timeout_s", "max_retries", "api_base", "api_key", "api_version", "extra",
                   "cache_dir"}
        _check_keys("judge", data, allowed)
        model = data.get("model")
        if not isinstance(model, str) or not model.strip():
            raise ScoringConfigError("[judge] model is required (a litellm model name, e.g. 'openai/gpt-4o-mini')")
        error_types = data.get("error_types")
        if error_types is not None:
            if not isinstance(error_types, list) or not error_types:
                raise ScoringConfigError(f"[judge] error_types must be a non-empty list of {list(ERROR_TYPES)}")
            bad = [t for t in error_types if t not in ERROR_TYPES]
            if bad:
                raise ScoringConfigError(f"[judge] unknown error_types {bad}; expected some of {list(ERROR_TYPES)}")
            error_types = tuple(error_types)
        only_when = data.get("only_when", ["always"])
        if isinstance(only_when, str):
            only_when = [only_when]
        if not isinstance(only_when, list) or not only_when or any(w not in ONLY_WHEN for w in only_when):
            raise ScoringConfigError(f"[judge] only_when must be some of {list(ONLY_WHEN)}, got {only_when!r}")
        concurrency = data.get("max_concurrency", 4)
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ScoringConfigError(f"[judge] max_concurrency must be an integer >= 1, got {concurrency!r}")
        retries = data.get("max_retries", 3)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ScoringConfigError(f"[judge] max_retries must be an integer >= 0, got {retries!r}")
        budget = data.get("max_cost_usd_per_day")
        extra = data.get("extra", {})
        if not isinstance(extra, Mapping):
            raise ScoringConfigError("[judge] extra must be a table of litellm arguments")
        llm_kwargs = {k: data[k] for k in ("api_base", "api_key", "api_version") if k in data} | dict(extra)
        cache_dir = data.get("cache_dir", "")
        if not isinstance(cache_dir, str):
            raise ScoringConfigError("[judge] cache_dir must be a path string")
        return cls(
            model=model.strip(),
            sample_rate=_number("judge", "sample_rate", data.get("sample_rate", 1.0), 0.0, 1.0),
            error_types=error_types,
            threshold=_number("judge", "threshold", data.get("threshold", 0.7), 0.0, 1.0),
            max_concurrency=concurrency,
            max_cost_usd_per_day=None if budget is None else _number("judge", "max_cost_usd_per_day", budget, 0.0),
            only_when=tuple(dict.fromkeys(only_when)),
            timeout_s=_number("judge", "timeout_s", data.get("timeout_s", 60.0), 0.001),
            max_retries=retries,
            llm_kwargs=llm_kwargs,
            cache_dir=cache_dir,
        )


def parse_forward(section: Any) -> ForwardConfig:
    """``forward = "URL"`` or a ``[forward]`` table (url, protocol, headers, timeout_s, queue and retry sizes)."""
    if isinstance(section, str):
        section = {"url": section}
    if not isinstance(section, Mapping):
        raise ScoringConfigError("[forward] must be a table or a URL string")
    _check_keys("forward", section, {"url", "protocol", "headers", "timeout_s", "max_queue_records",
                                     "max_batch_records", "max_retries"})
    if "url" not in section:
        raise ScoringConfigError("[forward] url is required")
    headers = section.get("headers", {})
    if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
        raise ScoringConfigError("[forward] headers must be a table of strings")
    try:
        return ForwardConfig(**{**section, "headers": dict(headers)}).validate()
    except (ForwardConfigError, TypeError) as exc:
        raise ScoringConfigError(str(exc)) from None


def load_dataset(path: str) -> Dataset | None:
    if not path:
        return None
    try:
        return Dataset.load(path)
    except ExpectationConfigError as exc:
        raise ScoringConfigError(str(exc)) from None


def parse_expectations(items: Any) -> tuple[ExpectationRule, ...]:
    if not isinstance(items, list):
        raise ScoringConfigError("expectations must be an array of tables ([[expectations]])")
    try:
        return parse_rules(items)
    except ExpectationConfigError as exc:
        raise ScoringConfigError(str(exc)) from None


@dataclass(frozen=True, slots=True)
class ScoringConfig:
    """What the scoring stage and the judge worker need; built by ``CollectorConfig.scoring_config()``."""

    scoring: ScoringSettings = field(default_factory=ScoringSettings)
    judge: JudgeSettings | None = None
    forward: ForwardConfig | None = None
    expectations: tuple[ExpectationRule, ...] = ()
    dataset: Dataset | None = None
