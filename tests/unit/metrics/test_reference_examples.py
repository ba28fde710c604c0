"""Every example of the reference documents 000 (Tool Correctness) and 002 (Multimodal Tool Correctness).

The examples are read from the documents themselves (tests/fixtures/reference/), so an example cannot be
skipped by accident: the parsed list must equal the list written out here, and the documents' usage code
runs as written, with only its imports pointed at this package.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import re
from pathlib import Path

import pytest

from agentotel_eval.evaluate import EvaluationResult
from agentotel_eval.metrics.multimodal_tool_correctness import MultimodalToolCorrectnessMetric
from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric
from agentotel_eval.test_case import EvalTestCase

REFERENCE = Path(__file__).resolve().parents[2] / "fixtures" / "reference"
DOC_000 = (REFERENCE / "000_15fda3d71c861d88.txt").read_text(encoding="utf-8")
DOC_002 = (REFERENCE / "002_918266158e022093.txt").read_text(encoding="utf-8")

# (mode, expected_tools, tools_called, score) as the "Примеры оценки" section of 000 states them.
EXAMPLES_000 = [
    ("default", ["search", "book"], ["search", "validate", "book"], 1.0),
    ("default", ["search", "book"], ["search"], 0.5),
    ("default", ["search", "book"], ["validate"], 0.0),
    ("exact", ["search", "book"], ["search", "book"], 1.0),
    ("exact", ["search", "book"], ["search", "validate", "book"], 0.0),
]
SECTION_MODES = {"Неточное совпадение": "default", "Точное совпадение": "exact"}


def parse_examples_000(doc: str) -> list[tuple[str, list[str], list[str], float]]:
    """Walk the examples section: a heading sets the mode, ``expected_tools = [...]`` carries over to the
    following ``tools_called = [...]`` lines, and each ``# Score: X`` closes one example."""
    section = doc.split("Примеры оценки¶", 1)[1]
    examples = []
    mode = expected = called = None
    for line in section.splitlines():
        line = line.strip()
        if line.endswith("¶") and line[:-1] in SECTION_MODES:
            mode = SECTION_MODES[line[:-1]]
        elif line.startswith("expected_tools ="):
            expected = ast.literal_eval(line.split("=", 1)[1].strip())
        elif line.startswith("tools_called ="):
            called = ast.literal_eval(line.split("=", 1)[1].strip())
        elif match := re.match(r"# Score: ([0-9.]+)", line):
            examples.append((mode, expected, called, float(match.group(1))))
    return examples


def test_every_example_of_000_is_covered():
    assert parse_examples_000(DOC_000) == EXAMPLES_000


@pytest.mark.parametrize(("mode", "expected", "called", "score"), EXAMPLES_000)
def test_000_score_examples(mode, expected, called, score):
    metric = ToolCorrectnessMetric(threshold=0.5, exact_match=mode == "exact")
    result = metric.measure(EvalTestCase("q", "a", tools_called=called, expected_tools=expected))
    assert result.score == score
    assert result.success is (score >= 0.5)
    assert metric.score == score and metric.is_successful() is (score >= 0.5)


def _usage_code(doc: str, start: str, end: str | None) -> str:
    block = doc.split(start, 1)[1]
    if end:
        block = block.split(end, 1)[0]
    return block.strip()


def test_000_usage_runs_as_documented():
    code = _usage_code(DOC_000, "Использование¶", "Примеры оценки¶")
    assert "from eval_lib import ToolCorrectnessMetric, EvalTestCase, evaluate" in code
    code = code.replace(
        "from eval_lib import ToolCorrectnessMetric, EvalTestCase, evaluate",
        "from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric\n"
        "from agentotel_eval.test_case import EvalTestCase\n"
        "from agentotel_eval.evaluate import evaluate",
    )
    namespace: dict = {}
    exec(compile(code, "reference-000-usage", "exec"), namespace)
    results = namespace["results"]
    assert isinstance(results, EvaluationResult)
    test_case = namespace["test_case"]
    # "Non-exact: passes (all expected tools were called)"
    assert results[0].success and results[0]["tool_correctness"].score == 1.0
    # "Exact: fails (extra tool "sort_by_price" was called)"
    exact = namespace["metric_exact"].measure(test_case)
    assert (exact.score, exact.success) == (0.0, False)
    assert "sort_by_price" in exact.reason
    # "With ordering: checks if search happened before booking" (it did)
    ordered = namespace["metric_ordered"].measure(test_case)
    assert (ordered.score, ordered.success) == (1.0, True)
    assert asyncio.run(namespace["evaluate"]([test_case], [namespace["metric_ordered"]])).success


def test_002_usage_runs_as_documented():
    code = _usage_code(DOC_002, "Usage Example", None)
    imports = {
        "from agensight.eval.metrics import MultimodalToolCorrectnessMetric": (
            "from agentotel_eval.metrics.multimodal_tool_correctness import MultimodalToolCorrectnessMetric"
        ),
        "from agensight.eval.test_case import ModelTestCase, ToolCall": (
            "from agentotel_eval.test_case import ModelTestCase, ToolCall"
        ),
        "from agensight.eval.test_case import MLLMImage": "from agentotel_eval.test_case import MLLMImage",
    }
    for theirs, ours in imports.items():
        assert theirs in code
        code = code.replace(theirs, ours)
    namespace: dict = {}
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        exec(compile(code, "reference-002-usage", "exec"), namespace)
    metric = namespace["metric"]
    # Expected tools "s" and "w" were never called: nothing matches.
    assert metric.score == 0.0
    assert metric.is_successful() is False
    assert metric.reason and "Missing: s, w" in metric.reason
    printed = stdout.getvalue().splitlines()
    assert printed[0] == "Score: 0.0"
    assert printed[1].startswith("Reason: Matched 0 of 2 expected tool calls.")


def test_002_documented_arguments_and_defaults():
    metric = MultimodalToolCorrectnessMetric()
    assert metric.threshold == 0.5 and metric.include_reason and not metric.strict_mode
    assert metric.async_mode and not metric.verbose_mode and metric.model is None
    strict = MultimodalToolCorrectnessMetric(
        threshold=0.3, strict_mode=True, model="gpt-4o", async_mode=False
    )
    assert strict.threshold == 1.0 and strict.model == "gpt-4o" and not strict.async_mode
