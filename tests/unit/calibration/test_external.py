"""TRAIL and MAST read from a local copy: real recorded runs rewritten in TRAIL's nested layout reconstruct to
the same calls, taxonomies map onto the six types, every accepted file layout loads, and bad files say what is
wrong."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from agentotel_eval.calibration import external
from agentotel_eval.otlp.records import SPAN_KINDS, SpanRecord
from agentotel_eval.reconstruct import reconstruct
from tests.support.fixture_traces import fixtures

_STATUS = {0: "Unset", 1: "Ok", 2: "Error"}


def trail_tree(spans: list[SpanRecord]) -> dict[str, Any]:
    """Spans in TRAIL's layout: a tree of ``child_spans``, snake_case fields, ISO times, durations in ns."""

    def node(span: SpanRecord) -> dict[str, Any]:
        stamp = datetime.fromtimestamp(span.start_ns // 1_000_000_000, UTC).replace(
            microsecond=span.start_ns % 1_000_000_000 // 1000
        )
        return {
            "timestamp": stamp.isoformat().replace("+00:00", "Z"),
            "trace_id": span.trace_id,
            "span_id": span.span_id,
            "parent_span_id": span.parent_span_id or "",
            "span_name": span.name,
            "span_kind": SPAN_KINDS[span.kind].title(),
            "service_name": "agent",
            "resource_attributes": dict(span.resource),
            "scope_name": span.scope_name,
            "span_attributes": {
                k: v if isinstance(v, str) else json.dumps(v) if isinstance(v, list | dict) else v
                for k, v in span.attributes.items()
            },
            "duration": span.end_ns - span.start_ns,
            "status_code": _STATUS[span.status_code],
            "status_message": span.status_message,
            "events": [{"name": e.name, "attributes": dict(e.attributes)} for e in span.events],
            "child_spans": [
                node(c) for c in sorted(children.get(span.span_id, []), key=lambda s: s.start_ns)
            ],
        }

    ids = {s.span_id for s in spans}
    children: dict[str | None, list[SpanRecord]] = {}
    for s in spans:
        children.setdefault(s.parent_span_id if s.parent_span_id in ids else None, []).append(s)
    return {"trace_id": spans[0].trace_id, "spans": [node(s) for s in children[None]]}


def calls_of(spans: list[SpanRecord]) -> list[tuple[str, Any, Any, Any]]:
    return [
        (c.name, c.input_parameters, c.status, c.output) for run in reconstruct(spans) for c in run.tool_calls
    ]


def openinference_fixtures() -> list[Any]:
    return [
        fx
        for fx in fixtures()
        if "openinference" in fx.name and fx.entry.get("scenario") in ("error", "parallel")
    ]


@pytest.mark.parametrize("fx", openinference_fixtures(), ids=lambda fx: fx.name)
def test_a_recorded_run_in_trails_layout_reconstructs_to_the_same_calls(fx: Any) -> None:
    spans = fx.spans()
    tree = trail_tree(spans)
    (record,) = external.load_rows([{"trace": json.dumps(tree), "labels": json.dumps({"errors": []})}])
    assert record.source == "trail" and record.labels == frozenset()
    assert calls_of(list(record.spans)) == calls_of(spans) != []


def test_taxonomies_map_onto_the_six_types() -> None:
    labels, categories = external.trail_labels(
        [
            {"category": "Formatting Errors", "location": "a"},
            {"category": "Tool Selection Errors"},
            {"category": "Resource Abuse"},
            {"category": "Goal Deviation"},
            {"category": "Tool Output Misinterpretation"},
        ]
    )
    assert labels == {"parameter_error", "invalid_function", "repeated_failure", "result_ignored"}
    assert "Goal Deviation" in categories and len(categories) == 5
    assert external.trail_labels([{"category": "Formatting Error"}])[0] == {"parameter_error"}
    assert external.trail_labels([{"category": "Task Orchestration"}])[0] == {"sequence_error"}
    assert external.mast_labels({"1.3": 1, "2.5": 0, "3.1": 1, "1.1": None}) == (
        frozenset({"repeated_failure"}),
        ("1.3", "3.1"),
    )


def _fixture_tree(name_part: str = "smolagents__openinference__error") -> dict[str, Any]:
    fx = next(fx for fx in fixtures() if fx.name == name_part)
    return trail_tree(fx.spans())


def test_every_layout_loads(tmp_path: Path) -> None:
    tree = _fixture_tree()
    labels = {"trace_id": tree["trace_id"], "errors": [{"category": "Resource Abuse", "location": "x"}]}
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"trace": json.dumps(tree), "labels": json.dumps(labels)}) + "\n")
    (from_jsonl,) = external.load(rows)
    assert from_jsonl.labels == {"repeated_failure"} and from_jsonl.external == ("Resource Abuse",)

    parquet = tmp_path / "gaia.parquet"
    con = duckdb.connect()
    con.execute("CREATE TABLE t (trace VARCHAR, labels VARCHAR)")
    con.execute("INSERT INTO t VALUES (?, ?)", [json.dumps(tree), json.dumps(labels)])
    con.execute(f"COPY t TO '{parquet}' (FORMAT parquet)")
    con.close()
    (from_parquet,) = external.load(parquet)
    assert from_parquet.spans == from_jsonl.spans and from_parquet.labels == from_jsonl.labels

    layout = tmp_path / "trail"
    (layout / "data").mkdir(parents=True)
    (layout / "annotations").mkdir()
    (layout / "data" / f"{tree['trace_id']}.json").write_text(json.dumps(tree))
    (layout / "data" / "unlabelled.json").write_text(json.dumps({**tree, "trace_id": "f" * 32}))
    (layout / "annotations" / f"{tree['trace_id']}.json").write_text(json.dumps(labels))
    (joined,) = external.load(layout)
    assert joined.spans == from_jsonl.spans and joined.labels == {"repeated_failure"}

    mast = tmp_path / "MAD_full_dataset.json"
    mast.write_text(
        json.dumps(
            [
                {
                    "mas_name": "AG2",
                    "llm_name": "gpt-4o",
                    "benchmark_name": "GSM",
                    "trace_id": 7,
                    "trace": {
                        "key": "k",
                        "index": 7,
                        "trajectory": "user: add 2 and 2\nassistant: 5\nassistant: 5",
                    },
                    "mast_annotation": {"1.3": 1, "3.2": 1},
                }
            ]
        )
    )
    (record,) = external.load(mast)
    assert record.source == "mast" and record.spans == () and record.labels == {"repeated_failure"}
    assert record.id == "AG2/GSM/7" and "assistant: 5" in record.text
    assert any(
        "1 labelled only with" in line or "repeated_failure 1" in line
        for line in external.describe([record, joined])
    )


def test_bad_files_say_what_is_wrong(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": "world"}))
    with pytest.raises(external.ExternalFormatError, match="no labelled record found"):
        external.load(other)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"trace": "{not json", "labels": "{}"}\n')
    with pytest.raises(external.ExternalFormatError, match=r"broken.jsonl:1: its trace is not JSON"):
        external.load(broken)
    mast = tmp_path / "mast.json"
    mast.write_text(json.dumps([{"mast_annotation": {"1.3": 1}, "trace": {"no": "trajectory"}}]))
    with pytest.raises(external.ExternalFormatError, match="'trajectory' text"):
        external.load(mast)
