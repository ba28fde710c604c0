"""An ``EvaluationResult`` written out: a table for people, a JSON document for tools (and for ``compare``),
and JUnit XML, which CI systems show as test results. ``lines`` maps each case to its
line in the cases file."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentotel_eval.case_files import LineError

if TYPE_CHECKING:
    from agentotel_eval.evaluate import EvaluationResult


def _label(case: Any, width: int = 40) -> str:
    text = getattr(case, "name", None) or str(getattr(case, "input", "") or "")
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _cell(result: Any) -> str:
    if result.status == "error":
        return "ERROR"
    if result.status == "skipped" or result.score is None:
        return "skip"
    return f"{result.score:.2f} {'pass' if result.success else 'FAIL'}"


def render_table(result: EvaluationResult, lines: list[int], *, quiet: bool = False) -> str:
    """One row per case (``--quiet``: none), then the reasons of failures, then the summary."""
    from agentotel_eval.evaluate import summary_lines
    from agentotel_eval.metrics.registry import metric_label

    out: list[str] = []
    names = [r.metric for r in result.cases[0].results] if result.cases else []
    if not quiet and result.cases:
        header = ["line", "case", *(f"{n} {metric_label(n).arrow}".rstrip() for n in names), "result"]
        rows = [
            [
                str(lines[c.index]),
                _label(c.test_case),
                *(_cell(r) for r in c.results),
                ("PASS" if c.success else "FAIL") if c.scored else "not scored",
            ]
            for c in result.cases
        ]
        widths = [max(len(row[k]) for row in [header, *rows]) for k in range(len(header))]
        for row in [header, *rows]:
            cells = [
                cell.rjust(w) if k == 0 else cell.ljust(w)
                for k, (cell, w) in enumerate(zip(row, widths, strict=True))
            ]
            out.append("  ".join(cells).rstrip())
        out.append("")
    failures = [c for c in result.cases if not c.success]
    for c in failures:
        for r in c.results:
            if r.status == "error" or (r.status == "ok" and not r.success):
                score = "error" if r.status == "error" else f"{r.score:.2f} < {r.threshold:g}"
                name = f" ({c.name})" if c.name else ""
                out.append(f"FAILED line {lines[c.index]}{name} {r.metric} [{score}]: {r.reason}")
    if failures:
        out.append("")
    out.extend(summary_lines(result))
    if names:  # what each score means and which way is good, so the table reads without the docs
        out.append("")
        out.append("scores (↑ higher is better, ↓ lower is better):")
        out.extend(f"  {name}: {metric_label(name).description}" for name in dict.fromkeys(names))
    return "\n".join(out)


def render_json(result: EvaluationResult, lines: list[int], errors: list[LineError]) -> str:
    cases = []
    for c in result.cases:
        item = c.to_dict()
        item["line"] = lines[c.index]
        cases.append(item)
    document = {
        "cases": cases,
        "invalid_lines": [{"line": e.line, "error": e.error} for e in errors],
        "summary": result.summary(),
    }
    return json.dumps(document, ensure_ascii=False, default=str)


def render_junit(result: EvaluationResult, lines: list[int], source: str) -> str:
    """JUnit XML: a testsuite of one testcase per case and metric."""
    import xml.etree.ElementTree as ET

    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    suite = ET.Element("testsuite", name=f"agentotel-eval {source}", time=f"{result.duration_s:.3f}")
    for case in result.cases:
        label = f"line {lines[case.index]}: {_label(case.test_case, 80)}"
        for r in case.results:
            counts["tests"] += 1
            testcase = ET.SubElement(
                suite,
                "testcase",
                classname=f"agentotel-eval.{r.metric}",
                name=label,
                time=f"{r.latency_s or 0.0:.6f}",
            )
            if r.status == "error":
                counts["errors"] += 1
                ET.SubElement(testcase, "error", message=r.reason or "the metric raised").text = r.reason
            elif r.status != "ok" or r.score is None:
                counts["skipped"] += 1
                ET.SubElement(testcase, "skipped", message=r.reason or r.status)
            elif not r.success:
                counts["failures"] += 1
                message = f"{r.metric} {r.score:.2f} < {r.threshold:g}"
                ET.SubElement(testcase, "failure", message=message).text = f"{message}: {r.reason}"
    for key, value in counts.items():
        suite.set(key, str(value))
    root = ET.Element("testsuites", {k: suite.get(k, "") for k in ("tests", "failures", "errors", "skipped")})
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
