"""Recorded variants of the fixture captures (tests/fixtures/variants): each run's calls, as reconstructed
from its spans, are the tools the application executed (names, arguments, outcomes) and its
handoffs are apart."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from agentotel_eval.otlp import decode
from agentotel_eval.reconstruct import reconstruct

VARIANTS = Path(__file__).parents[2] / "fixtures" / "variants"
RUNS = [json.loads(line) for line in (VARIANTS / "manifest.jsonl").read_text().splitlines() if line.strip()]


def _canonical(value):
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        return tuple(sorted((k, _canonical(v)) for k, v in value.items()))
    return repr(value)


@pytest.mark.parametrize("entry", RUNS, ids=lambda e: e["file"].removesuffix(".pb"))
def test_a_recorded_variant_gives_the_tools_it_executed(entry):
    spans = decode("traces", "protobuf", (VARIANTS / entry["file"]).read_bytes()).records
    logs_path = VARIANTS / entry["file"].replace(".pb", ".logs.pb")
    logs = decode("logs", "protobuf", logs_path.read_bytes()).records if logs_path.exists() else []
    runs = reconstruct(spans, logs)
    calls = [
        (c.name, _canonical(dict(c.input_parameters or {})), c.status) for r in runs for c in r.tool_calls
    ]
    assert Counter(calls) == Counter((n, _canonical(a), o) for n, a, o in entry["executed"]), entry["shape"]
    assert sorted(h.name for r in runs for h in r.handoffs) == sorted(entry["handoffs"])
