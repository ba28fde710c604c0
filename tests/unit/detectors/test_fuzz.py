"""Whatever a run holds, the detectors answer: random calls, arguments, results, errors and answers (values of
every kind the statements reader knows, in and out of place) never make a rule raise."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentotel_eval import ToolCall
from agentotel_eval.detectors import could_not_run_view, detect_view, run_view

WORDS = [
    "Paris",
    "tomorrow",
    "2025-07-01",
    "07/01",
    "July 1",
    "€92",
    "92 EUR",
    "ninety-two",
    "18C",
    "64°F",
    "LH207",
    "HTL-ROME-3",
    "#W1",
    "cancelled",
    "not available",
    "sorry",
    "failed",
    "booked",
    "3 nights",
    "5 km",
    "15%",
    "next Monday",
    "2:30 pm",
    "noon",
    "$1,204.99",
    "-5",
    "1e9",
    "null",
    "",
    " ",
    ";",
    "—",
    "Error: boom",
    "¥",
    "°",
    "Mr.",
    "e.g.",
    "0",
    "1",
    "in 3 days",
    "NaN",
    "∞",
    "🎉",
    "\n",
    "ÉTÉ",
]
text = st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join)
leaf = st.one_of(
    text,
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
value = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(["city", "price", "status", "date", "id", "total", "a"]), inner, max_size=4
        ),
    ),
    max_leaves=12,
)
call = st.builds(
    lambda name, args, output, failed: ToolCall(
        name,
        args if isinstance(args, dict) else {"q": args},
        output=output,
        status="error" if failed else "ok",
        error="Error: boom" if failed else None,
    ),
    st.sampled_from(["get_weather", "book_hotel", "travel-get_weather", "convert"]),
    value,
    value,
    st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(call, max_size=6), text, text, st.one_of(st.none(), text))
def test_no_rule_raises_on_any_run(
    calls: list[ToolCall], answer: str, asked: str, system: str | None
) -> None:
    view = run_view(calls, answer=answer, user_input=asked, system_prompt=system)
    detect_view(view)
    could_not_run_view(view)
    assert view.failures == []
