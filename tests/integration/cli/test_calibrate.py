"""``agentotel-eval calibrate``: the figures per type on a sample of the suites, a saved suite read back, the
judge through litellm against a local OpenAI-compatible server with its answers recorded and replayed, and
clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentotel_eval.cli import main
from tests.support.llm_stub import LLMStub, Reply


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["calibrate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_bfcl_sample_agrees_with_bfcls_checker_and_passes_its_gates(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "--suite", "bfcl", "--limit", "3")
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines() if line.split()}
    assert lines["invalid_function"].endswith("gated") and lines["parameter_error"].endswith("gated")
    assert lines["sequence_error"].endswith("no positives")  # BFCL has no case of it
    agree = next(
        line for line in out.splitlines() if line.startswith("BFCL's checker and the detectors agree")
    )
    agreed, total = (int(n) for n in agree.split("agree on ")[1].split(" scored")[0].split(" of "))
    assert agreed == total > 0


def test_a_saved_suite_reads_back_to_the_same_figures(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    saved = tmp_path / "cases.jsonl"
    code, first, _ = _run(
        capsys, "--suite", "bfcl", "--limit", "2", "--format", "json", "--save-cases", str(saved)
    )
    assert code == 0 and saved.stat().st_size > 0
    code, again, _ = _run(capsys, "--suite", str(saved), "--format", "json")
    assert code == 0
    assert json.loads(first)["types"] == json.loads(again)["types"]
    assert json.loads(first)["cases"] == len(saved.read_text().splitlines())


def test_the_judge_through_litellm_is_measured_and_its_answers_replayed_from_the_cache(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    every = tmp_path / "all.jsonl"
    _run(capsys, "--suite", "bfcl", "--limit", "1", "--save-cases", str(every))
    saved = tmp_path / "cases.jsonl"
    saved.write_text("".join(every.read_text().splitlines(keepends=True)[:8]))  # the first entry's cases
    cache = tmp_path / "judge-cache"
    # a judge that finds nothing: the detectors' findings are facts it cannot overrule, so
    # its figures are theirs
    answer = Reply.json(
        {"detected": False, "confidence": 0.8, "reason": "the calls look right", "errors": []}
    )
    argv = (
        "--suite",
        str(saved),
        "--convention",
        "genai",
        "--judge",
        "--model",
        "openai/gpt-4o-mini",
        "--cache-dir",
        str(cache),
        "--format",
        "json",
    )
    with LLMStub(default=answer) as stub:
        code, out, _ = _run(capsys, *argv, "--api-base", stub.base_url)
        asked = len(stub.requests)
        assert code == 0 and asked == 8
        report = json.loads(out)
        judged = {t["type"]: (t["tp"], t["fp"], t["fn"]) for t in report["judge"]["types"]}
        detected = {t["type"]: (t["tp"], t["fp"], t["fn"]) for t in report["types"]}
        assert judged == detected and judged["parameter_error"][0] > 0
        code, out, _ = _run(
            capsys, *argv, "--api-base", stub.base_url
        )  # every answer replayed from the cache
        assert code == 0 and len(stub.requests) == asked
    assert json.loads(out)["judge"]["types"] == report["judge"]["types"]


def test_bad_suites_and_options_say_what_is_wrong(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(capsys, "--suite", str(tmp_path / "missing.jsonl"))
    assert (
        code == 2
        and "neither a suite (bfcl, tau2, robustness, robustness-heldout) nor an existing path" in err
    )
    code, _, err = _run(capsys, "--suite", "robustness", "--traces", str(tmp_path / "nowhere"))
    assert code == 2 and "is no directory of OTLP traces" in err
    code, _, err = _run(capsys, "--judge")
    assert code == 2 and "--judge needs --model" in err
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x", "calls": [{"name": "f", "arguments": {}, "bogus": 1}], "labels": []}\n')
    code, _, err = _run(capsys, "--suite", str(broken))
    assert code == 2 and f"{broken}:1" in err


def test_a_local_copy_of_trail_and_mast_is_scored(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.fixture_traces import fixtures
    from tests.unit.calibration.test_external import trail_tree

    rows = []
    for fx in fixtures():
        if fx.name.startswith("smolagents__openinference__"):
            tree = trail_tree(fx.spans())
            errors = [{"category": "Resource Abuse"}] if fx.entry.get("scenario") == "error" else []
            rows.append(json.dumps({"trace": json.dumps(tree), "labels": json.dumps({"errors": errors})}))
    trail = tmp_path / "trail.jsonl"
    trail.write_text("\n".join(rows) + "\n")
    code, out, _ = _run(capsys, "--suite", str(trail))
    assert code == 0
    assert f"trail: {len(rows)} record(s); labelled with the six types: repeated_failure 1" in out
    report_line = next(line for line in out.splitlines() if line.startswith("repeated_failure"))
    assert "experimental" in report_line or "no positives" in report_line  # one positive: below the gate's 10

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    mast = tmp_path / "MAD.json"
    mast.write_text(
        json.dumps(
            [
                {
                    "mas_name": "AG2",
                    "benchmark_name": "GSM",
                    "trace_id": n,
                    "trace": {"trajectory": f"agent: step {n}\n" * 3},
                    "mast_annotation": {"1.3": n % 2, "3.1": 1},
                }
                for n in range(4)
            ]
        )
    )
    code, out, _ = _run(capsys, "--suite", str(mast), "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["cases"] == 0  # transcripts: nothing the detectors can read
    assert any("4 record(s) hold no spans" in note for note in report["notes"])
    answer = Reply.json(
        {
            "detected": True,
            "confidence": 0.9,
            "reason": "the same step again",
            "error_types": ["repeated_failure"],
            "errors": [{"type": "repeated_failure", "description": "step repeated"}],
            "error_severity": "low",
        }
    )
    with LLMStub(default=answer) as stub:
        code, out, _ = _run(
            capsys,
            "--suite",
            str(mast),
            "--judge",
            "--model",
            "openai/gpt-4o-mini",
            "--api-base",
            stub.base_url,
            "--format",
            "json",
        )
        assert code == 0 and len(stub.requests) == 4
    judged = {t["type"]: (t["tp"], t["fp"], t["fn"]) for t in json.loads(out)["judge"]["types"]}
    assert judged["repeated_failure"] == (2, 2, 0)
    assert any("agent: step 3" in json.dumps(r.body) for r in stub.requests)
