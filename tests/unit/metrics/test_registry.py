"""One registry names, labels and builds every metric: each declaration builds the metric it names with its
threshold, every metric class and every mode of one is declared, and no module outside the metrics builds a
metric class or tells metrics apart by a name of its own."""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import pkgutil
import re
from pathlib import Path
from typing import Any

import pytest

import agentotel_eval.metrics
from agentotel_eval.metrics.base import BaseMetric
from agentotel_eval.metrics.registry import (
    METRICS,
    ON_COMMAND_LINE,
    TOOL_CORRECTNESS,
    TOOL_CORRECTNESS_EXACT,
    TOOL_CORRECTNESS_EXACT_ORDERING,
    TOOL_ERRORS,
    MetricDeclaration,
    MetricOptions,
    MetricUnavailable,
    build_metrics,
    metric_label,
    tool_correctness,
    variant,
)
from agentotel_eval.test_case import EvalTestCase, ToolCall

PACKAGE = Path(agentotel_eval.metrics.__file__).resolve().parents[1]
JUDGE_MODEL = "openai/gpt-4o-mini"  # a judge metric is built, never called, here


def _settings(declaration: MetricDeclaration[Any]) -> dict[str, Any]:
    return {"model": JUDGE_MODEL} if "model" in declaration.options else {}


def _case() -> EvalTestCase:
    case = EvalTestCase(
        input="q", tools_called=[ToolCall("a"), ToolCall("b")], expected_tools=[ToolCall("a")]
    )
    case.expected_trajectory = {"steps": [{"tool": "a"}, {"tool": "c"}]}
    return case


@pytest.mark.parametrize("name", list(METRICS))
def test_each_declaration_builds_the_metric_it_names_with_its_threshold(name: str) -> None:
    declaration = METRICS[name]
    metric = declaration.build(**_settings(declaration))
    assert type(metric) is declaration.load()
    assert (metric.metric_name, metric.threshold) == (name, declaration.threshold)
    assert declaration.label and declaration.meaning and declaration.passes and "_" not in declaration.label
    assert declaration.higher_is_better in (True, False)
    if declaration is not TOOL_ERRORS:  # the judge's result would need a model's answer
        result = metric.measure(_case())
        assert (result.metric, result.threshold) == (name, declaration.threshold)
    assert declaration.build(0.25, **_settings(declaration)).threshold == 0.25


@pytest.mark.parametrize("name", list(METRICS))
def test_a_class_built_without_the_registry_has_the_declared_defaults(name: str) -> None:
    """The classes take their names and default thresholds from their declarations."""
    declaration = METRICS[name]
    metric = declaration.load()(**declaration.arguments, **_settings(declaration))
    assert (metric.metric_name, metric.threshold) == (name, declaration.threshold)


def _metric_classes() -> set[type[BaseMetric]]:
    found: set[type[BaseMetric]] = set()
    for info in pkgutil.iter_modules(agentotel_eval.metrics.__path__, "agentotel_eval.metrics."):
        module = importlib.import_module(info.name)
        found |= {
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, BaseMetric)
            and value is not BaseMetric
            and not inspect.isabstract(value)
            and value.__module__ == info.name
        }
    return found


def test_every_metric_class_is_declared() -> None:
    classes = _metric_classes()
    assert {d.load() for d in METRICS.values()} == classes


@pytest.mark.parametrize("name", list(METRICS))
def test_every_mode_of_a_declared_class_is_declared(name: str) -> None:
    """Each combination of the switches that make a declared metric names a declared
    metric of the same class."""
    declaration = METRICS[name]
    switches = [key for key, value in declaration.arguments.items() if isinstance(value, bool)]
    for values in itertools.product((False, True), repeat=len(switches)):
        mode = dict(zip(switches, values, strict=True))
        settings = {**declaration.arguments, **mode}
        settings |= {"model": JUDGE_MODEL} if settings.get("judge") else {}
        built = declaration.load()(**settings)
        assert built.metric_name in METRICS, f"{built.metric_name} ({mode}) has no declaration"
        assert variant(declaration, **mode) is METRICS[built.metric_name]


def test_a_declaration_builds_its_own_metric_only() -> None:
    with pytest.raises(TypeError, match="exact_match makes another metric than 'tool_correctness'"):
        TOOL_CORRECTNESS.build(exact_match=True)
    assert tool_correctness(exact=True, ordering=True) is TOOL_CORRECTNESS_EXACT_ORDERING
    with pytest.raises(LookupError):
        variant(TOOL_CORRECTNESS, exact_match="yes")


def test_every_declared_name_is_shown_by_its_declaration() -> None:
    for name, declaration in METRICS.items():
        assert metric_label(name) is declaration


# --- the command line ---------------------------------------------------------------------------------------


def test_eval_offers_the_declared_metrics_built_as_declared() -> None:
    from agentotel_eval.cli import build_parser

    help_text = " ".join(build_parser()._subparsers._group_actions[0].choices["eval"].format_help().split())
    assert f"One of: {', '.join(ON_COMMAND_LINE)}" in help_text
    assert set(ON_COMMAND_LINE) == {name for name, d in METRICS.items() if d.command_line}
    built = build_metrics(list(ON_COMMAND_LINE), MetricOptions(model=JUDGE_MODEL))
    assert [(m.metric_name, m.threshold) for m in built] == [
        (n, d.threshold) for n, d in ON_COMMAND_LINE.items()
    ]


def test_eval_options_pick_the_declared_mode_and_pass_on_the_rest() -> None:
    options = MetricOptions(exact=True, threshold=0.8, params=("input_parameters",), strict=False)
    built = build_metrics(["tool_correctness,tool_correctness_exact", "trajectory"], options)
    assert [(m.metric_name, m.threshold) for m in built] == [
        (TOOL_CORRECTNESS_EXACT.name, 0.8),
        ("trajectory", 0.8),
    ]
    assert [p.value for p in built[0].evaluation_params] == ["input_parameters"]
    with pytest.raises(MetricUnavailable, match="tool_errors needs a judge model: --model"):
        build_metrics([TOOL_ERRORS.name], MetricOptions())
    with pytest.raises(MetricUnavailable, match=f"choose from: {', '.join(ON_COMMAND_LINE)}$"):
        build_metrics(["multimodal_tool_correctness"], MetricOptions())


# --- nothing bypasses the registry --------------------------------------------------------------------------


def _sources() -> list[tuple[Path, ast.Module]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent.name == "metrics" and path.parent.parent == PACKAGE:
            continue  # the classes and the registry themselves
        out.append((path, ast.parse(path.read_text(encoding="utf-8"))))
    return out


def test_no_module_builds_a_metric_class_itself() -> None:
    classes = {d.load().__name__ for d in METRICS.values()}
    found = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
                if called in classes:
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {called}(...)")
    assert not found, (
        "build metrics from their declarations (agentotel_eval.metrics.registry):\n" + "\n".join(found)
    )


def _names_a_metric(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in METRICS


_SQL_NAME = re.compile(
    r"metric\s*(=|IN\s*\()\s*'(" + "|".join(map(re.escape, METRICS)) + r")'", re.IGNORECASE
)


def test_no_module_tells_metrics_apart_by_a_name_of_its_own() -> None:
    """``metric == "trajectory"``, ``metric.startswith("tool_errors")``, ``("tool_correctness",)``, ``metric
    IN ('tool_errors')`` in SQL: each would miss a renamed or added metric; the declarations' names are the
    ones to use."""
    found = []
    for path, tree in _sources():
        where = path.relative_to(PACKAGE.parent)
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                compared = [node.left, *node.comparators]
                compared += [
                    e
                    for c in node.comparators
                    if isinstance(c, ast.Tuple | ast.List | ast.Set)
                    for e in c.elts
                ]
                if any(_names_a_metric(c) for c in compared):
                    found.append(f"{where}:{node.lineno} compares with a metric's name")
            elif isinstance(node, ast.Tuple | ast.List | ast.Set) and any(
                _names_a_metric(e) for e in node.elts
            ):
                found.append(f"{where}:{node.lineno} lists a metric by its name")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("startswith", "endswith")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
                and len(node.args[0].value) > 3
                and any(name.startswith(node.args[0].value) for name in METRICS)
            ):
                found.append(f"{where}:{node.lineno} matches a metric's name by its start")
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _SQL_NAME.search(node.value)
            ):
                found.append(f"{where}:{node.lineno} names a metric in SQL")
    assert not found, "\n".join(found)
