"""Tool correctness for multimodal test cases, with the API of the multimodal reference document.

The score is exactly ``ToolCorrectnessMetric``'s (tools are compared by name and, optionally, parameters and
output; images in the input and output play no part). ``model`` and ``async_mode`` are accepted because the
documented API has them, but no model is ever called: the metric is deterministic and free.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentotel_eval.metrics.registry import MULTIMODAL_TOOL_CORRECTNESS
from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric
from agentotel_eval.test_case import ToolCallParams

__all__ = ["MultimodalToolCorrectnessMetric"]


class MultimodalToolCorrectnessMetric(ToolCorrectnessMetric):
    """``MultimodalToolCorrectnessMetric(threshold=0.5, model=None, include_reason=True, strict_mode=False,
    async_mode=True, verbose_mode=False, should_exact_match=False, should_consider_ordering=False,
    evaluation_params=())``, used on ``ModelTestCase`` (or ``EvalTestCase``) with ``measure(case)``.

    Results are named ``multimodal_tool_correctness`` (plus ``_exact`` / ``_ordering`` for those modes), so
    they are told apart from the text metric's in stored evaluations.
    """

    name = MULTIMODAL_TOOL_CORRECTNESS.name

    def __init__(
        self,
        threshold: float = MULTIMODAL_TOOL_CORRECTNESS.threshold,
        model: Any = None,
        include_reason: bool = True,
        strict_mode: bool = False,
        async_mode: bool = True,
        verbose_mode: bool = False,
        should_exact_match: bool = False,
        should_consider_ordering: bool = False,
        evaluation_params: Iterable[ToolCallParams | str] | None = (),
    ) -> None:
        super().__init__(
            threshold,
            exact_match=should_exact_match,
            check_ordering=should_consider_ordering,
            strict_mode=strict_mode,
            evaluation_params=evaluation_params,
            verbose=verbose_mode,
            include_reason=include_reason,
        )
        self._model = model
        self._async_mode = bool(async_mode)

    model = property(lambda self: self._model, doc="Accepted for API compatibility; never called.")
    async_mode = property(
        lambda self: self._async_mode, doc="Accepted for API compatibility; scoring is inline."
    )
    verbose_mode = property(lambda self: self.verbose)
