"""``repeated_failure`` beyond equal-argument streaks: ``same_error`` (one tool failing ``SAME_ERROR_RUN``
times in a row with the same error once numbers, quoted values and ids are taken out, its arguments changed),
``loop`` (the same successful call, equal arguments, ``LOOP_RUN`` times in a row), ``retry_storm``
(``STORM_FAILURES`` failed calls of one tool requested in one LLM turn). Failure is read from the status
and the result (``failure.failed``)."""

from __future__ import annotations

from collections.abc import Sequence

from agentotel_eval.detectors.failure import args_text, error_signature, error_text
from agentotel_eval.detectors.finding import Finding, finding
from agentotel_eval.detectors.rule import Rule
from agentotel_eval.detectors.types import REPEATED_FAILURE
from agentotel_eval.detectors.view import RunView
from agentotel_eval.test_case import ToolCall

SAME_ERROR_RUN = 3
LOOP_RUN = 4
STORM_FAILURES = 3


def _by_tool(calls: Sequence[ToolCall]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for j, call in enumerate(calls):
        out.setdefault(call.name, []).append(j)
    return out


def find_same_error(view: RunView) -> list[Finding]:
    calls, fails = view.calls, view.fails
    if sum(fails) < SAME_ERROR_RUN:
        return []
    out = []
    for name, indices in _by_tool(calls).items():
        run: list[int] = []
        signature = None
        for j in [*indices, -1]:
            call = calls[j] if j >= 0 else None
            sig = error_signature(error_text(call)) if call is not None and fails[j] else None
            if sig is not None and sig == signature and run:
                run.append(j)
                continue
            if len(run) >= SAME_ERROR_RUN and len({args_text(calls[k]) for k in run}) > 1:
                positions = ", ".join(f"#{k + 1}" for k in run)
                out.append(
                    finding(
                        REPEATED_FAILURE,
                        "same_error",
                        "repeated_failure.same_error",
                        name,
                        tuple(run),
                        f"{name!r} failed {len(run)} times in a row with the same error under changed "
                        f"arguments (calls {positions}): {error_text(calls[run[-1]])[:160]}",
                        {"signature": signature, "times": len(run)},
                    )
                )
            run, signature = ([j], sig) if sig is not None else ([], None)
    return out


def find_loops(view: RunView) -> list[Finding]:
    calls, fails = view.calls, view.fails
    if len(calls) < LOOP_RUN:
        return []
    out = []
    for name, indices in _by_tool(calls).items():
        if len(indices) < LOOP_RUN:
            continue
        run: list[int] = []
        for j in [*indices, -1]:
            call = calls[j] if j >= 0 else None
            same = (
                call is not None
                and not fails[j]
                and call.input_parameters is not None
                and run
                and j == run[-1] + 1
                and call.input_parameters == calls[run[-1]].input_parameters
            )
            if same:
                run.append(j)
                continue
            if len(run) >= LOOP_RUN:
                out.append(
                    finding(
                        REPEATED_FAILURE,
                        "loop",
                        "repeated_failure.loop",
                        name,
                        tuple(run),
                        f"{name!r} was called {len(run)} times in a row with the same arguments "
                        f"{args_text(calls[run[0]])[:80]} (calls #{run[0] + 1} to #{run[-1] + 1})",
                        {"arguments": args_text(calls[run[0]])[:200], "times": len(run)},
                    )
                )
            run = [j] if call is not None and not fails[j] and call.input_parameters is not None else []
    return out


def find_storms(view: RunView) -> list[Finding]:
    calls, fails = view.calls, view.fails
    if sum(fails) < STORM_FAILURES:
        return []
    by_turn: dict[tuple[str, str], list[int]] = {}
    for j, call in enumerate(calls):
        if call.llm_turn is not None and fails[j]:
            by_turn.setdefault((call.name, call.llm_turn), []).append(j)
    return [
        finding(
            REPEATED_FAILURE,
            "retry_storm",
            "repeated_failure.retry_storm",
            name,
            tuple(js),
            f"{len(js)} calls of {name!r} requested in one LLM turn all failed",
            {"turn": turn, "failures": len(js)},
        )
        for (name, turn), js in by_turn.items()
        if len(js) >= STORM_FAILURES
    ]


SAME_ERROR = Rule(
    "repeated_failure.same_error",
    REPEATED_FAILURE,
    ("same_error",),
    f"one tool failing {SAME_ERROR_RUN} or more times in a row with the same error under changed arguments",
    find_same_error,
)
LOOP = Rule(
    "repeated_failure.loop",
    REPEATED_FAILURE,
    ("loop",),
    f"the same successful call with equal arguments {LOOP_RUN} or more times in a row",
    find_loops,
)
RETRY_STORM = Rule(
    "repeated_failure.retry_storm",
    REPEATED_FAILURE,
    ("retry_storm",),
    f"{STORM_FAILURES} or more failed calls of one tool requested in one LLM turn",
    find_storms,
)
