"""Which labelled data a calibration runs on: a built-in suite by name, a saved suite (JSONL of cases), or a
user's own copy of a labelled dataset (TRAIL, MAST)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from agentotel_eval.calibration.cases import CaseCall, LabelledCase

SUITES = ("bfcl", "tau2", "robustness", "robustness-heldout")
#: where the robustness suite finds recorded runs when no directory is given: the repository's fixtures
DEFAULT_TRACES = Path("tests/fixtures/traces")


class SuiteError(ValueError):
    """A suite that cannot be read: the message says what was expected."""


def build_suite(
    name: str, *, limit: int | None = None, seed: int = 0, traces: Path | None = None
) -> list[LabelledCase]:
    """A built-in suite; ``limit``: BFCL entries per category, τ² tasks per domain, recorded runs; ``traces``:
    the directory of OTLP traces the robustness suite changes."""
    if name == "bfcl":
        from agentotel_eval.calibration.bfcl import build_bfcl_suite

        return build_bfcl_suite(per_category=limit, seed=seed)
    if name == "tau2":
        from agentotel_eval.calibration.tau2 import build_tau2_suite

        return build_tau2_suite(limit=limit, seed=seed)
    if name in ("robustness", "robustness-heldout"):
        from agentotel_eval.calibration.robustness import build_robustness_suite

        directory = traces if traces is not None else DEFAULT_TRACES
        if not directory.is_dir():
            raise SuiteError(
                f"the robustness suite changes recorded runs: {directory} is no directory of OTLP "
                "traces (give one with --traces DIR)"
            )
        return build_robustness_suite(
            directory, seed=seed, limit=limit, family="heldout" if name.endswith("heldout") else "own"
        )
    raise SuiteError(f"unknown suite {name!r}: choose {', '.join(SUITES)} or give a path")


def _call_dict(call: CaseCall) -> dict[str, Any]:
    return {
        "name": call.name,
        "arguments": call.arguments,
        "result": call.result,
        "error": call.error,
        "call_id": call.call_id,
        "executed": call.executed,
        "requested": call.requested,
        "turn": call.turn,
    }


def case_to_dict(case: LabelledCase) -> dict[str, Any]:
    return {
        "id": case.id,
        "suite": case.suite,
        "operator": case.operator,
        "labels": sorted(case.labels),
        "user_input": case.user_input,
        "system_prompt": case.system_prompt,
        "tools": list(case.tools),
        "calls": [_call_dict(c) for c in case.calls],
        "answer": case.answer,
        "rules": list(case.rules),
        "oracle": case.oracle,
        "meta": dict(case.meta),
    }


def case_from_dict(data: Any, where: str) -> LabelledCase:
    if not isinstance(data, dict):
        raise SuiteError(f"{where}: a case is a JSON object, got {type(data).__name__}")
    try:
        calls = tuple(CaseCall(**call) for call in data.get("calls") or ())
        return LabelledCase(
            id=str(data["id"]),
            suite=str(data.get("suite", "file")),
            operator=str(data.get("operator", "none")),
            user_input=str(data.get("user_input", "")),
            tools=tuple(data.get("tools") or ()),
            calls=calls,
            answer=str(data.get("answer", "")),
            labels=frozenset(data.get("labels") or ()),
            system_prompt=str(data.get("system_prompt", "")),
            rules=tuple(data.get("rules") or ()),
            oracle=data.get("oracle"),
            meta=data.get("meta") or {},
        )
    except KeyError as exc:
        raise SuiteError(f"{where}: a case needs {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise SuiteError(f"{where}: {exc}") from None


def save_cases(cases: Iterable[LabelledCase], path: Path) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for case in cases:
            out.write(json.dumps(case_to_dict(case), ensure_ascii=False, default=str) + "\n")
            count += 1
    return count


def load_cases(path: Path) -> list[LabelledCase]:
    cases = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except ValueError as exc:
                raise SuiteError(f"{path}:{number}: not JSON ({exc})") from None
            cases.append(case_from_dict(data, f"{path}:{number}"))
    return cases


def is_case_file(path: Path) -> bool:
    """A JSONL file whose first line is a saved case (has ``calls`` and ``labels``)."""
    if not path.is_file():
        return False
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if line.strip():
                try:
                    first = json.loads(line)
                except ValueError:
                    return False
                return isinstance(first, dict) and "calls" in first and "labels" in first
    return False


def sample(cases: Sequence[LabelledCase], operators: Sequence[str]) -> list[LabelledCase]:
    return [c for c in cases if c.operator in operators] if operators else list(cases)
