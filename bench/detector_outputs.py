"""Every output of the tool-error detectors, as JSON lines, to check that a change to them is a pure speed-up.

    python bench/detector_outputs.py OUT.jsonl [--bfcl N] [--tau2 N]
    (run it before and after the change, then: cmp before.jsonl after.jsonl)

For every run of every fixture trace (tests/fixtures/traces, tests/fixtures/variants) and every case of the
robustness suite and of the BFCL (``--bfcl`` entries per category, default 3) and τ² (``--tau2`` tasks per
domain, default 2) suites, in both span conventions, the deterministic metric scores the run as the collector
does; each line holds the run's findings, observations and the rule failures, or its could-not-run notes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import agentotel_eval.metrics.tool_errors as tool_errors  # noqa: E402
from agentotel_eval.calibration.runner import detector_metric  # noqa: E402
from agentotel_eval.calibration.spans import CONVENTIONS, case_spans  # noqa: E402
from agentotel_eval.calibration.suites import build_suite  # noqa: E402
from agentotel_eval.otlp import decode  # noqa: E402
from agentotel_eval.reconstruct.pipeline import reconstruct  # noqa: E402


def _finding(found: Any) -> str:
    return json.dumps([getattr(found, name) for name in found.__slots__], default=repr, sort_keys=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path)
    parser.add_argument("--bfcl", type=int, default=3)
    parser.add_argument("--tau2", type=int, default=2)
    args = parser.parse_args()
    current = {"id": ""}
    detect_view, could_not_run_view = tool_errors.detect_view, tool_errors.could_not_run_view
    with args.out.open("w") as out:

        def recorded_detect(view: Any, *a: Any, **k: Any) -> Any:
            findings, observed = detect_view(view, *a, **k)
            out.write(
                json.dumps(
                    {
                        "id": current["id"],
                        "findings": [_finding(f) for f in findings],
                        "observed": [_finding(f) for f in observed],
                        "failures": list(view.failures),
                    }
                )
                + "\n"
            )
            return findings, observed

        def recorded_unchecked(view: Any, *a: Any, **k: Any) -> Any:
            notes = could_not_run_view(view, *a, **k)
            out.write(json.dumps({"id": current["id"], "unchecked": notes}) + "\n")
            return notes

        tool_errors.detect_view, tool_errors.could_not_run_view = recorded_detect, recorded_unchecked  # type: ignore[assignment]
        for folder in (ROOT / "tests/fixtures/traces", ROOT / "tests/fixtures/variants"):
            for path in sorted(folder.glob("*.pb")):
                if path.name.endswith(".logs.pb"):
                    continue
                spans = decode("traces", "protobuf", path.read_bytes()).records
                logs_path = path.with_name(path.name.removesuffix(".pb") + ".logs.pb")
                logs = (
                    decode("logs", "protobuf", logs_path.read_bytes()).records if logs_path.exists() else []
                )
                metric = tool_errors.ToolsErrorMetric(judge=False)
                for n, run in enumerate(reconstruct(spans, logs)):
                    current["id"] = f"{path.name}#{n}"
                    metric.measure(run.to_test_case())
        for suite, limit in (("robustness", None), ("bfcl", args.bfcl), ("tau2", args.tau2)):
            for case in build_suite(suite, limit=limit):
                for convention in CONVENTIONS:
                    current["id"] = f"{suite}:{case.id}:{convention}"
                    metric = detector_metric(case)
                    for run in reconstruct(case_spans(case, convention)):
                        metric.measure(run.to_test_case())


if __name__ == "__main__":
    main()
