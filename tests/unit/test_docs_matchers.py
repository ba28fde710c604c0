"""docs/metrics.md, where the matchers are described, and docs/scoring.md, where a config first uses them, say
how a nested object in ``args`` is compared: a plain literal whole, a map of matchers by the keys it names.
The two forms they show behave as they say."""

from __future__ import annotations

import tomllib
from pathlib import Path

from agentotel_eval.trajectory.matchers import compile_matcher

DOCS = Path(__file__).resolve().parents[2] / "docs"
LITERAL = 'args = { place = { city = "Paris" } }'
PARTIAL = 'args = { place = { city = { "$eq" = "Paris" } } }'
CALL = {"city": "Paris", "country": "FR"}


def _place(written: str):
    return compile_matcher(tomllib.loads(written)["args"]["place"], "args.place")


def test_the_documented_literal_is_compared_whole_and_the_matcher_form_by_its_keys() -> None:
    for doc in ("metrics.md", "scoring.md"):
        text = (DOCS / doc).read_text()
        assert LITERAL in text and PARTIAL in text and '{ city = "Paris", country = "FR" }' in text, doc
    ok, reason = _place(LITERAL).test(CALL)
    assert ok is False and "country" in reason
    assert _place(PARTIAL).test(CALL)[0] is True
    assert _place(PARTIAL).test({"city": "Lyon", "country": "FR"})[0] is False
