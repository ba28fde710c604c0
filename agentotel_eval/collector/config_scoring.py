"""Configuration of online scoring: ``[scoring]``, ``[judge]``, ``[forward]``,
``[[expectations]]``, ``dataset``.

Config is data: frozen objects whose fields are the keys of their TOML tables. The collector's loader
validates a table against its type (``agentotel_eval.collector.config_validation``) and rejects unknown keys
by name, so a typo fails at start-up instead of silently disabling a feature; the markers on the fields add
what a type cannot say.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

from agentotel_eval.collector.config_fields import Parsed, Range
from agentotel_eval.collector.config_forward import ForwardConfig
from agentotel_eval.collector.expectations import MODES, Dataset, ExpectationRule, parse_modes
from agentotel_eval.detectors.declarations import ToolRule
from agentotel_eval.detectors.registry import check_rule_names
from agentotel_eval.detectors.types import check_error_types
from agentotel_eval.metrics.registry import TOOL_CORRECTNESS, TOOL_ERRORS

#: when the judge runs for a run (any of): every sampled run, runs failing a deterministic check, runs with a
#: failed tool call, runs where a deterministic detector found an error
ONLY_WHEN = ("always", "deterministic_failed", "tool_error", "detector_found", "detector_uncertain")
#: the ``[judge]`` keys passed to litellm as they are, with the ``extra`` table
LLM_KEYS = ("api_base", "api_key", "api_version")


def _model_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a litellm model name (e.g. 'openai/gpt-4o-mini'), got {value!r}")
    return value.strip()


def _only_when(value: Any) -> tuple[str, ...]:
    when = [value] if isinstance(value, str) else value
    if not isinstance(when, list) or not when or any(w not in ONLY_WHEN for w in when):
        raise ValueError(f"must be some of {list(ONLY_WHEN)}, got {value!r}")
    return tuple(dict.fromkeys(when))


@dataclass(frozen=True, slots=True)
class ScoringSettings:
    enabled: bool = True
    modes: Annotated[tuple[str, ...], Parsed(parse_modes)] = MODES
    threshold: Annotated[float, Range(0.0, 1.0)] = TOOL_CORRECTNESS.threshold
    detectors: bool = True
    #: detector rules turned off by name (``error_handling.false_success``; ``agentotel-eval
    #: rules`` lists them)
    disabled_rules: Annotated[tuple[str, ...], Parsed(check_rule_names)] = ()


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    model: Annotated[str, Parsed(_model_name)]
    sample_rate: Annotated[float, Range(0.0, 1.0)] = 1.0
    error_types: Annotated[tuple[str, ...] | None, Parsed(check_error_types)] = None
    threshold: Annotated[float, Range(0.0, 1.0)] = TOOL_ERRORS.threshold
    max_concurrency: Annotated[int, Range(1)] = 4
    max_cost_usd_per_day: Annotated[float | None, Range(0.0)] = None
    only_when: Annotated[tuple[str, ...], Parsed(_only_when)] = ("always",)
    timeout_s: Annotated[float, Range(0.001)] = 60.0
    max_retries: Annotated[int, Range(0)] = 3
    #: where and how litellm reaches the model (a local server's URL, its key); absent: litellm's defaults
    api_base: str | None = None
    api_key: str | None = None
    api_version: str | None = None
    #: more litellm arguments, passed as they are
    extra: Mapping[str, Any] = field(default_factory=dict)
    cache_dir: str = ""  # on-disk judge response cache (off when empty)

    @property
    def llm_kwargs(self) -> dict[str, Any]:
        """What the judge passes to litellm: ``api_base``, ``api_key``, ``api_version`` when
        set, and ``extra``."""
        given = {key: getattr(self, key) for key in LLM_KEYS if getattr(self, key) is not None}
        return given | dict(self.extra)


def forward_table(value: Any) -> Any:
    """``forward = "URL"`` is short for a ``[forward]`` table with only its url."""
    if isinstance(value, str):
        return {"url": value}
    if not isinstance(value, Mapping):
        raise ValueError("must be a table or a URL string")
    return value


def checked_forward(config: ForwardConfig | None) -> ForwardConfig | None:
    return config.validate() if config is not None else None


def named_rules(rules: Sequence[ExpectationRule]) -> tuple[ExpectationRule, ...]:
    """Rules with a name: a rule without one is named by its position (``rule:0`` in a score's details)."""
    return tuple(rule if rule.name else replace(rule, name=str(index)) for index, rule in enumerate(rules))


def parse_expectations(items: Any) -> tuple[ExpectationRule, ...]:
    """``[[expectations]]`` tables as rules, validated as the config file's are
    (``ConfigError`` names the key)."""
    from agentotel_eval.collector.config_validation import config_from_mapping

    return config_from_mapping({"expectations": items}).expectations


def load_dataset(path: str) -> Dataset | None:
    """The dataset file, if one is set (``ExpectationConfigError`` names its line)."""
    return Dataset.load(path) if path else None


@dataclass(frozen=True, slots=True)
class ScoringConfig:
    """What the scoring stage and the judge worker need; built by ``CollectorConfig.scoring_config()``."""

    scoring: ScoringSettings = field(default_factory=ScoringSettings)
    judge: JudgeSettings | None = None
    forward: ForwardConfig | None = None
    expectations: tuple[ExpectationRule, ...] = ()
    dataset: Dataset | None = None
    tools: tuple[ToolRule, ...] = ()  # ``[[tools]]``: per-tool declarations for the detectors
