"""Every metric this project scores with, declared once: its stored name, its label for people, which way is
good, what the score and a pass mean, its default threshold, and the class (with the
arguments) that computes it.

Everything that names, builds or shows a metric reads these declarations: the metric classes (their names and
default thresholds), ``agentotel-eval eval --metric``, the collector's scoring stage and judge worker, the
test suite assertions (``agentotel_eval.tracing.testing``), ``calibrate``, the read side and the pages. A
metric's stored name (``tool_correctness_exact``) is for queries; a reader sees its label ("Tool correctness
(exact set)") and its direction.

Adding a metric is one declaration here, listed in ``METRICS``, and its class. A declaration imports its class
only when it first builds one: the judge's module alone takes seconds to import, and the pages and ``--help``
need the declarations, not the classes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

if TYPE_CHECKING:
    from agentotel_eval.metrics.base import BaseMetric
    from agentotel_eval.metrics.multimodal_tool_correctness import MultimodalToolCorrectnessMetric
    from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric
    from agentotel_eval.metrics.tool_errors import ToolsErrorMetric
    from agentotel_eval.metrics.trajectory import TrajectoryMetric

__all__ = [
    "HIGHER",
    "LOWER",
    "METRICS",
    "MULTIMODAL_TOOL_CORRECTNESS",
    "ON_COMMAND_LINE",
    "TOOL_CORRECTNESS",
    "TOOL_CORRECTNESS_EXACT",
    "TOOL_CORRECTNESS_EXACT_ORDERING",
    "TOOL_CORRECTNESS_ORDERING",
    "TOOL_ERRORS",
    "TOOL_ERRORS_DETECTORS",
    "TRAJECTORY",
    "MetricDeclaration",
    "MetricLabel",
    "MetricOptions",
    "MetricUnavailable",
    "build_metrics",
    "family",
    "metric_label",
    "tool_correctness",
    "variant",
]

HIGHER = "higher is better"
LOWER = "lower is better"

M = TypeVar("M", bound="BaseMetric")


@dataclass(frozen=True, slots=True)
class MetricLabel:
    """How a metric is shown: ``label`` instead of its name, with its direction and meaning."""

    name: str  # the stored name: tool_correctness_exact
    label: str  # "Tool correctness (exact set)"
    higher_is_better: bool | None  # None: not known (a metric nothing here declares)
    meaning: str  # what the score is, in one sentence ("" when not known)
    passes: str  # what a pass means
    #: what a score's chip says instead of the score, (passed, failed), when the score is
    #: how sure a finding is
    verdicts: tuple[str, str] | None = None

    @property
    def direction(self) -> str:
        """ "higher is better", "lower is better", or "" when not known."""
        return "" if self.higher_is_better is None else HIGHER if self.higher_is_better else LOWER

    @property
    def arrow(self) -> str:
        """A direction marker beside a score: "↑" (higher is better), "↓" (lower is better) or ""."""
        return "" if self.higher_is_better is None else "↑" if self.higher_is_better else "↓"

    @property
    def description(self) -> str:
        """The label, direction, meaning and pass in one line (a tooltip, a CLI legend line)."""
        parts = [self.label + (f" ({self.direction})" if self.direction else "")]
        parts += [text for text in (self.meaning, self.passes) if text]
        return ". ".join(parts) + "."


# eq=False: a declaration compares and hashes as its label (its arguments are a mapping, which does not hash)
@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class MetricDeclaration(MetricLabel, Generic[M]):
    """One metric: how it is shown (``MetricLabel``), its default threshold and the class that computes it.

    ``arguments`` are the constructor arguments that make this metric of its class (a mode:
    ``exact_match=True``); ``build`` adds the threshold and the caller's own settings (a judge
    model, tool rules).
    """

    threshold: float  # the default passing threshold
    metric_class: Callable[[], type[M]]  # the class, imported on first use
    arguments: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    #: the ``agentotel-eval eval`` options that apply (``MetricOptions`` fields; "model": it
    #: needs a judge model)
    options: tuple[str, ...] = ()
    command_line: bool = True  # offered by ``agentotel-eval eval --metric``

    @property
    def llm(self) -> bool:
        """Scored by an LLM judge (it needs a model; its answer costs money), not by code."""
        return "model" in self.options

    def load(self) -> type[M]:
        """The metric's class (imported now if it was not yet)."""
        return self.metric_class()

    def build(self, threshold: float | None = None, **settings: Any) -> M:
        """An instance of this metric: the declared threshold unless one is given, plus ``settings`` (its
        class's other constructor arguments). A declaration builds its own metric only: settings
        cannot change the mode."""
        clash = sorted(set(settings) & set(self.arguments))
        if clash:
            raise TypeError(
                f"{', '.join(clash)} makes another metric than {self.name!r}: build that one's "
                "declaration (``variant``)"
            )
        construct = cast("Callable[..., M]", self.load())  # each class takes its own arguments
        chosen = self.threshold if threshold is None else threshold
        return construct(threshold=chosen, **self.arguments, **settings)


def _arguments(**arguments: Any) -> Mapping[str, Any]:
    return MappingProxyType(arguments)


def _tool_correctness_class() -> type[ToolCorrectnessMetric]:
    from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric

    return ToolCorrectnessMetric


def _multimodal_class() -> type[MultimodalToolCorrectnessMetric]:
    from agentotel_eval.metrics.multimodal_tool_correctness import MultimodalToolCorrectnessMetric

    return MultimodalToolCorrectnessMetric


def _trajectory_class() -> type[TrajectoryMetric]:
    from agentotel_eval.metrics.trajectory import TrajectoryMetric

    return TrajectoryMetric


def _tool_errors_class() -> type[ToolsErrorMetric]:
    from agentotel_eval.metrics.tool_errors import ToolsErrorMetric

    return ToolsErrorMetric


_AT_THRESHOLD = "pass: the score reaches the threshold"
#: the ``eval`` options of the tool-correctness metrics (``--exact`` / ``--ordering`` pick that mode's metric)
_CORRECTNESS_OPTIONS = ("exact", "ordering", "strict", "params")
_FINDINGS = ("no error found", "errors found")


def _tool_correctness(
    name: str, label: str, meaning: str, *, exact: bool, ordering: bool
) -> MetricDeclaration[ToolCorrectnessMetric]:
    """One mode of the tool-correctness class: the same threshold, options and kind of pass."""
    return MetricDeclaration(
        name=name,
        label=label,
        higher_is_better=True,
        meaning=meaning,
        passes=_AT_THRESHOLD,
        threshold=0.5,
        metric_class=_tool_correctness_class,
        arguments=_arguments(exact_match=exact, check_ordering=ordering),
        options=_CORRECTNESS_OPTIONS,
    )


TOOL_CORRECTNESS = _tool_correctness(
    "tool_correctness",
    "Tool correctness",
    "share of the expected tool calls the agent made (0 to 1); extra calls are not penalised",
    exact=False,
    ordering=False,
)
TOOL_CORRECTNESS_EXACT = _tool_correctness(
    "tool_correctness_exact",
    "Tool correctness (exact set)",
    "1 when the called tools are exactly the expected ones, as a set with counts: order "
    "is NOT checked; else 0",
    exact=True,
    ordering=False,
)
TOOL_CORRECTNESS_ORDERING = _tool_correctness(
    "tool_correctness_ordering",
    "Tool correctness (in order)",
    "share of the expected calls made in the expected order (longest common subsequence, 0 to 1)",
    exact=False,
    ordering=True,
)
TOOL_CORRECTNESS_EXACT_ORDERING = _tool_correctness(
    "tool_correctness_exact_ordering",
    "Tool correctness (exact sequence)",
    "1 only when the called sequence equals the expected one, order included; else 0",
    exact=True,
    ordering=True,
)
TRAJECTORY = MetricDeclaration(
    name="trajectory",
    label="Trajectory",
    higher_is_better=True,
    meaning="weighted share of the expected trajectory's steps the calls matched (0 to 1)",
    passes="pass: the score reaches the threshold with no violation",
    threshold=1.0,
    metric_class=_trajectory_class,
)
TOOL_ERRORS = MetricDeclaration(
    name="tool_errors",
    label="Tool-use errors (judge)",
    higher_is_better=False,
    meaning="how sure the LLM judge is that the agent misused a tool (0: no error found, 1: certain)",
    passes="pass: no tool-use error found with the threshold's confidence",
    verdicts=_FINDINGS,
    threshold=0.7,
    metric_class=_tool_errors_class,
    arguments=_arguments(judge=True),
    options=("model", "api_base"),
)
TOOL_ERRORS_DETECTORS = MetricDeclaration(
    name="tool_errors_detectors",
    label="Tool-use errors (detectors)",
    higher_is_better=False,
    meaning="1 when a deterministic detector found a tool-use error, 0 when none was found",
    passes="pass: no tool-use error found",
    verdicts=_FINDINGS,
    threshold=0.7,
    metric_class=_tool_errors_class,
    arguments=_arguments(judge=False),
)


def _multimodal(
    of: MetricDeclaration[ToolCorrectnessMetric],
) -> MetricDeclaration[MultimodalToolCorrectnessMetric]:
    """The multimodal class's metric of one tool-correctness mode: the same score under a name of its own. The
    class takes the mode by deepeval's names (``should_exact_match``); ``eval`` does not offer it."""
    return MetricDeclaration(
        name="multimodal_" + of.name,
        label="Multimodal " + of.label[0].lower() + of.label[1:],
        higher_is_better=of.higher_is_better,
        meaning=of.meaning,
        passes=of.passes,
        threshold=of.threshold,
        metric_class=_multimodal_class,
        arguments=_arguments(
            should_exact_match=of.arguments["exact_match"],
            should_consider_ordering=of.arguments["check_ordering"],
        ),
        command_line=False,
    )


MULTIMODAL_TOOL_CORRECTNESS = _multimodal(TOOL_CORRECTNESS)

_DECLARED: tuple[MetricDeclaration[Any], ...] = (
    TOOL_CORRECTNESS,
    TOOL_CORRECTNESS_EXACT,
    TOOL_CORRECTNESS_ORDERING,
    TOOL_CORRECTNESS_EXACT_ORDERING,
    TRAJECTORY,
    TOOL_ERRORS,
    TOOL_ERRORS_DETECTORS,
    MULTIMODAL_TOOL_CORRECTNESS,
    _multimodal(TOOL_CORRECTNESS_EXACT),
    _multimodal(TOOL_CORRECTNESS_ORDERING),
    _multimodal(TOOL_CORRECTNESS_EXACT_ORDERING),
)
#: every metric, by stored name, in the order they are best read
METRICS: Mapping[str, MetricDeclaration[Any]] = MappingProxyType({d.name: d for d in _DECLARED})
if len(METRICS) != len(_DECLARED):
    raise RuntimeError("every metric has a name of its own")
#: the metrics ``agentotel-eval eval --metric NAME`` offers
ON_COMMAND_LINE: Mapping[str, MetricDeclaration[Any]] = MappingProxyType(
    {name: d for name, d in METRICS.items() if d.command_line}
)


def family(of: MetricDeclaration[M]) -> tuple[MetricDeclaration[M], ...]:
    """Every declared metric of ``of``'s class (its modes), ``of`` among them."""
    return tuple(d for d in METRICS.values() if d.metric_class is of.metric_class)


def variant(of: MetricDeclaration[M], **mode: Any) -> MetricDeclaration[M]:
    """The declared metric of ``of``'s class whose arguments are ``of``'s with ``mode`` changed
    (``variant(TOOL_CORRECTNESS, exact_match=True)`` is ``TOOL_CORRECTNESS_EXACT``)."""
    wanted = {**of.arguments, **mode}
    for declaration in family(of):
        if dict(declaration.arguments) == wanted:
            return declaration
    raise LookupError(f"no metric of {of.name!r}'s class is declared with {wanted}")


def tool_correctness(exact: bool = False, ordering: bool = False) -> MetricDeclaration[ToolCorrectnessMetric]:
    """The tool-correctness metric of a mode: the exact set and/or the order checked."""
    return variant(TOOL_CORRECTNESS, exact_match=exact, check_ordering=ordering)


#: a tool-correctness name's ending -> the mode's metric, longest ending first
_MODE_ENDINGS = {
    "_exact_ordering": TOOL_CORRECTNESS_EXACT_ORDERING,
    "_exact": TOOL_CORRECTNESS_EXACT,
    "_ordering": TOOL_CORRECTNESS_ORDERING,
}


def metric_label(metric: str) -> MetricLabel:
    """How ``metric`` is shown: its declaration; a tool-correctness variant nothing declares (a subclass's
    ``custom_tool_correctness_exact``) as its mode's, in words; any other name in words, direction unknown."""
    known = METRICS.get(metric)
    if known is not None:
        return known
    if TOOL_CORRECTNESS.name in metric:
        ending = next((e for e in _MODE_ENDINGS if metric.endswith(e)), "")
        like = _MODE_ENDINGS.get(ending, TOOL_CORRECTNESS)
        words = metric[: len(metric) - len(ending)].replace("_", " ").strip().capitalize()
        mode = like.label[len(TOOL_CORRECTNESS.label) :]  # " (exact set)"; "" for the default mode
        return MetricLabel(metric, words + mode, True, like.meaning, like.passes)
    return MetricLabel(metric, metric.replace("_", " ").strip().capitalize() or metric, None, "", "")


# --- agentotel-eval eval --metric NAME ----------------------------------------------------------------------


@dataclass(frozen=True)
class MetricOptions:
    """The command-line options a metric may take (each declaration's ``options`` names those that apply)."""

    threshold: float | None = None
    exact: bool = False
    ordering: bool = False
    strict: bool = False
    params: tuple[str, ...] = ()
    model: str | None = None
    api_base: str | None = None


class MetricUnavailable(Exception):
    """A metric that cannot be built here (an unknown name, a missing option)."""


#: the options that pick another mode of the metric asked for (``tool_correctness --exact``): their arguments
_MODE_OPTIONS = {"exact": "exact_match", "ordering": "check_ordering"}
#: the options passed on to the metric's class when given: their arguments
_SETTING_OPTIONS = {
    "strict": "strict_mode",
    "params": "evaluation_params",
    "model": "model",
    "api_base": "api_base",
}


def _from_options(declaration: MetricDeclaration[Any], options: MetricOptions) -> BaseMetric:
    mode = {_MODE_OPTIONS[o]: True for o in declaration.options if o in _MODE_OPTIONS and getattr(options, o)}
    if mode:
        declaration = variant(declaration, **mode)
    if "model" in declaration.options and not options.model:
        raise MetricUnavailable(f"{declaration.name} needs a judge model: --model (e.g. openai/gpt-4o-mini)")
    settings = {
        _SETTING_OPTIONS[o]: getattr(options, o)
        for o in declaration.options
        if o in _SETTING_OPTIONS and getattr(options, o)
    }
    return declaration.build(options.threshold, **settings)


def build_metrics(names: Iterable[str], options: MetricOptions) -> list[BaseMetric]:
    """Metrics for the given names (comma-separated allowed), without duplicates after the options apply."""
    metrics: list[BaseMetric] = []
    seen: set[str] = set()
    for raw in names:
        for name in filter(None, (part.strip() for part in raw.split(","))):
            if name not in ON_COMMAND_LINE:
                raise MetricUnavailable(f"unknown metric {name!r}; choose from: {', '.join(ON_COMMAND_LINE)}")
            metric = _from_options(ON_COMMAND_LINE[name], options)
            if metric.metric_name not in seen:
                seen.add(metric.metric_name)
                metrics.append(metric)
    return metrics
