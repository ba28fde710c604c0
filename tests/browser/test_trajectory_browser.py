"""The run page's trajectory section in a real headless Chromium: a traced agent exports to a real collector,
whose page shows the spec's steps against the calls (a matched step, a missing one with its nearest call's
failing check, the extra calls, a violation) with no console error."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from agentotel_eval.tracing import traced
from tests.browser.test_ui_browser import console_problems, load
from tests.support.collector_harness import running_collector, wait_until

pytestmark = pytest.mark.timeout(300)

SPEC = {
    "forbid": [{"tool": "delete_account"}],
    "steps": [
        {"id": "who", "tool": "find_user", "args": {"zip": {"$regex": r"\d{5}"}}},
        {"tool": "check_policy", "optional": True},
        {"tool": "issue_refund", "args": {"method": {"$in": ["paypal", "card"]}}},
    ],
}


def test_the_run_page_draws_the_spec_against_the_calls(browser: Any, tmp_path: Any) -> None:
    with running_collector(tmp_path / "trajectory.duckdb", http="127.0.0.1:0") as collector:
        provider = TracerProvider(resource=Resource.create({"service.name": "support-desk"}))
        provider.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{collector.http_endpoint}/v1/traces"))
        )

        @traced(kind="tool", tracer_provider=provider)
        def find_user(zip: str) -> dict:
            return {"user_id": "u-7"}

        @traced(kind="tool", tracer_provider=provider)
        def issue_refund(method: str) -> str:
            return "R-1"

        @traced(kind="tool", tracer_provider=provider)
        def delete_account(user_id: str) -> str:
            return "gone"

        @traced(kind="agent", name="refunder", expected_trajectory=SPEC, tracer_provider=provider)
        def refunder() -> str:
            find_user("94110")
            issue_refund("cash")
            delete_account("u-7")
            return "done"

        refunder()
        provider.shutdown()
        rows = wait_until(
            lambda: collector.query(
                "SELECT trace_id, run_span_id FROM evaluations WHERE metric = 'trajectory'"
            )["rows"],
            what="the score",
        )
        trace_id, span_id = rows[0]
        console_problems(browser)
        load(browser, f"{collector.http_endpoint}/runs/{trace_id}/{span_id}")
        section = browser.find_element("css selector", "section#trajectory")
        assert section.is_displayed()
        summary = section.find_element("css selector", "p.summary")
        assert (
            summary.get_attribute("data-result") == "fail" and summary.get_attribute("data-score") == "0.50"
        )
        matched = section.find_element("css selector", 'tr[data-path="steps[0]"]')
        assert matched.get_attribute("data-status") == "matched" and "#1 find_user" in matched.text
        skipped = section.find_element("css selector", 'tr[data-path="steps[1]"]')
        assert "optional, skipped" in skipped.text
        missing = section.find_element("css selector", 'tr[data-path="steps[2]"]')
        assert missing.get_attribute("data-status") == "missing"
        assert "nearest call #2 issue_refund" in missing.text
        failed = missing.find_element("css selector", 'li[data-key="method"][data-verdict="failed"]')
        assert "'cash' is not one of ['paypal', 'card']" in failed.text
        assert failed.find_element("css selector", ".error-text").is_displayed()
        extra = section.find_element("css selector", "p.extra-calls")
        assert extra.get_attribute("data-extra") == "2" and "#3 delete_account" in extra.text
        violation = section.find_element("css selector", 'li[data-violation="forbidden"]')
        assert "delete_account" in violation.text
        assert console_problems(browser) == []
