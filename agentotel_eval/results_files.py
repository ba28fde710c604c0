"""Scored runs from the files the tools write, for ``compare``: an ``agentotel-eval eval --format json``
document (or JSONL of its cases), or the lines ``pytest --agentotel-results`` writes (``assertion_record``:
one assertion each, its test standing for the input)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentotel_eval.comparison import ScoredRun, departures

#: the name ``export-cases`` gives a case: "<agent> <trace_id>/<span_id>"
_CASE_NAME = re.compile(r"^(.*) ([0-9a-f]{32})/([0-9a-f]{16})$")


class ResultsFileError(ValueError):
    """A file that is not one of these; the message names it."""


def assertion_record(
    test: str,
    *,
    trace_id: str,
    span_id: str,
    agent: str | None,
    metric: str,
    score: float | None,
    success: bool,
    tools_called: Sequence[str],
    reason: str,
) -> dict[str, Any]:
    """One line of ``pytest --agentotel-results`` (the pytest plugin writes it; ``compare`` reads it back)."""
    return {
        "test": test,
        "trace_id": trace_id,
        "span_id": span_id,
        "agent": agent,
        "metric": metric,
        "score": score,
        "success": success,
        "tools_called": list(tools_called),
        "reason": reason,
    }


def scored_runs_from_file(path: Path) -> list[ScoredRun]:
    """The scores of an ``eval --format json`` document (or JSONL of its cases), or of a ``pytest
    --agentotel-results`` file."""
    text = path.read_text(encoding="utf-8")
    try:
        document = json.loads(text)
        if (
            isinstance(document, dict)
            and "cases" not in document
            and ("metric" in document or "metrics" in document)
        ):
            document = [document]  # a JSONL file of one line: one assertion, or one case
        cases = document["cases"] if isinstance(document, dict) else document
    except ValueError:
        cases = [json.loads(line) for line in text.splitlines() if line.strip()]
    except (KeyError, TypeError):
        raise ResultsFileError(f"{path}: not an 'agentotel-eval eval --format json' document") from None
    if (
        isinstance(cases, list)
        and cases
        and all(isinstance(c, dict) and "test" in c and "metric" in c for c in cases)
    ):
        return _assertions(cases)
    rows = []
    for number, case in enumerate(cases, 1):
        if not isinstance(case, dict) or not isinstance(case.get("metrics"), list):
            raise ResultsFileError(
                f"{path}: case {number} has no metrics list (write it with eval --format json)"
            )
        name = str(case.get("name") or "")
        match = _CASE_NAME.match(name)
        agent, ref = (
            (match.group(1), f"{match.group(2)}/{match.group(3)}")
            if match
            else ("(cases)", f"line {case.get('line', number)}")
        )
        for result in case["metrics"]:
            if result.get("status", "ok") != "ok":
                continue
            log = result.get("evaluation_log") or {}
            j = [log.get("missing") or [], log.get("extra") or [], log.get("out_of_order") or []]
            rows.append(
                ScoredRun(
                    agent,
                    str(case.get("input") or ""),
                    str(result["metric"]),
                    result.get("score"),
                    bool(result.get("success")),
                    ref,
                    departures(j),
                )
            )
    return rows


def _assertions(lines: list[dict[str, Any]]) -> list[ScoredRun]:
    """The lines of ``pytest --agentotel-results``: one assertion each, its test standing for the input (the
    same test on both sides is the same case)."""
    rows = []
    for line in lines:
        ref = f"{line.get('trace_id')}/{line.get('span_id')}" if line.get("trace_id") else str(line["test"])
        rows.append(
            ScoredRun(
                str(line.get("agent") or "(tests)"),
                str(line["test"]),
                str(line["metric"]),
                line.get("score"),
                bool(line.get("success")),
                ref,
            )
        )
    return rows
