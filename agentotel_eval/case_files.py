"""Test cases from a JSONL file, one ``EvalTestCase`` object a line: every line that is not a valid case is
kept as a ``LineError`` with its number, and reading goes on."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import IO, Any


@dataclass(frozen=True)
class LineError:
    line: int
    error: str


@dataclass
class CasesFile:
    """The valid cases of a JSONL file with their line numbers, and the lines that were not valid."""

    cases: list[Any] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)


def read_cases(stream: IO[bytes]) -> CasesFile:
    """Parse JSONL test cases; every invalid line becomes a ``LineError`` and reading goes on."""
    from agentotel_eval.test_case import EvalTestCase

    out = CasesFile()
    for number, raw in enumerate(stream, start=1):
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            out.errors.append(LineError(number, f"not UTF-8 ({exc.reason} at byte {exc.start})"))
            continue
        if not text:
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            out.errors.append(LineError(number, f"invalid JSON: {exc.msg} (column {exc.colno})"))
            continue
        if not isinstance(data, dict):
            out.errors.append(LineError(number, f"expected a JSON object, got {type(data).__name__}"))
            continue
        try:
            out.cases.append(EvalTestCase.from_dict(data))
        except (TypeError, ValueError) as exc:
            out.errors.append(LineError(number, f"invalid test case: {exc}"))
            continue
        out.lines.append(number)
    return out
