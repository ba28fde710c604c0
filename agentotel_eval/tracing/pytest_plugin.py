"""The pytest plugin: installing agentotel-eval is enough (it registers through the ``pytest11`` entry point).

The ``agentotel`` fixture captures the runs of the code under test and asserts on their tool use with the
collector's own reconstruction and metrics::

    def test_books_the_cheapest_hotel(agentotel):
        with agentotel.capture() as runs:
            travel_agent("Find a hotel in Paris and book the cheapest one")
        run = runs.one()
        assert run.tools_called == ["search_hotels", "book_hotel"]
        agentotel.assert_tool_correctness(run, ["search_hotels", "book_hotel"], exact=True, ordering=True)
        agentotel.assert_trajectory(run, {"steps": [{"tool": "search_hotels", "args": {"city": "Paris"}},
                                                    {"tool": "book_hotel"}], "extra": "forbid"})

``pytest --agentotel-results PATH`` writes one JSON line per assertion (test id, run, metric, score, success),
for dashboards and ``agentotel-eval compare`` (``agentotel_eval.results_files`` reads it back); the file is
written again on every session.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if (
    TYPE_CHECKING
):  # the plugin loads in every pytest session: OpenTelemetry loads only when a test asks for it
    from agentotel_eval.reconstruct.model import AgentRun
    from agentotel_eval.tracing.testing import CapturedRuns, ToolUseAssertion

_RESULTS_KEY = pytest.StashKey["_Results"]()


class _Results:
    """The results file of a session: one line per assertion, appended as each is made."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("w", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, test_id: str, outcome: ToolUseAssertion) -> None:
        from agentotel_eval.results_files import assertion_record

        record = assertion_record(
            test_id,
            trace_id=outcome.run.trace_id,
            span_id=outcome.run.span_id,
            agent=outcome.run.agent_name,
            metric=outcome.metric,
            score=outcome.score,
            success=outcome.success,
            tools_called=outcome.run.tools_called,
            reason=outcome.reason,
        )
        with self._lock:
            self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._file.flush()

    def close(self) -> None:
        self._file.close()


class AgentOtel:
    """The ``agentotel`` fixture's value."""

    def __init__(self, test_id: str, results: _Results | None) -> None:
        self._test_id = test_id
        self._results = results

    def capture(self) -> AbstractContextManager[CapturedRuns]:
        """Collect the spans the block emits; its runs are in the yielded ``CapturedRuns`` once it ends."""
        from agentotel_eval.tracing import testing

        return testing.capture()

    @contextmanager
    def _recorded(self) -> Iterator[None]:
        """Send the assertions made inside to the results file, as this test's."""
        from agentotel_eval.tracing import testing

        if self._results is None:
            yield
            return
        results, test_id = self._results, self._test_id

        def listener(outcome: testing.ToolUseAssertion) -> None:
            results.write(test_id, outcome)

        testing.listeners.append(listener)
        try:
            yield
        finally:
            testing.listeners.remove(listener)

    def assert_tool_correctness(
        self,
        run: AgentRun,
        expected: Sequence[Any],
        *,
        exact: bool = False,
        ordering: bool = False,
        threshold: float | None = None,
        params: Sequence[str] = (),
    ) -> float:
        """``testing.assert_tool_correctness``, recorded for ``--agentotel-results``."""
        __tracebackhide__ = True
        from agentotel_eval.tracing import testing

        with self._recorded():
            return testing.assert_tool_correctness(
                run, expected, exact=exact, ordering=ordering, threshold=threshold, params=params
            )

    def assert_trajectory(self, run: AgentRun, spec: Any, *, threshold: float | None = None) -> float:
        """``testing.assert_trajectory``, recorded for ``--agentotel-results``."""
        __tracebackhide__ = True
        from agentotel_eval.tracing import testing

        with self._recorded():
            return testing.assert_trajectory(run, spec, threshold=threshold)

    def assert_no_tool_errors(self, run: AgentRun) -> None:
        """``testing.assert_no_tool_errors``, recorded for ``--agentotel-results``."""
        __tracebackhide__ = True
        from agentotel_eval.tracing import testing

        with self._recorded():
            testing.assert_no_tool_errors(run)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentotel", "agentotel-eval: tool-use assertions")
    group.addoption(
        "--agentotel-results",
        metavar="PATH",
        default=None,
        help="write one JSON line per agentotel assertion (test, run, metric, score, success) here",
    )


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--agentotel-results", default=None)
    if path:
        config.stash[_RESULTS_KEY] = _Results(Path(path))


def pytest_unconfigure(config: pytest.Config) -> None:
    results = config.stash.get(_RESULTS_KEY, None)
    if results is not None:
        results.close()


@pytest.fixture()
def agentotel(request: pytest.FixtureRequest) -> Iterator[AgentOtel]:
    """Capture agent runs in this test and assert on their tool use (see
    ``agentotel_eval.tracing.testing``)."""
    yield AgentOtel(request.node.nodeid, request.config.stash.get(_RESULTS_KEY, None))
