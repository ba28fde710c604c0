"""Reading the facts a text states: numbers with units and currencies, dates, times, codes, status words; the
clauses that disclose a failure; and when two facts state the same value."""

from __future__ import annotations

import pytest

from agentotel_eval.detectors.statements.clauses import clauses, discloses_failure
from agentotel_eval.detectors.statements.compare import derivations, same
from agentotel_eval.detectors.statements.scan import CODE, DATE, NUMBER, STATUS, TIME, read
from agentotel_eval.detectors.statements.values import read_value
from agentotel_eval.detectors.tokens import value_text
from agentotel_eval.frozen import freeze


def _one(text: str, kind: str):
    found = [f for f in read(text).facts if f.kind == kind]
    assert len(found) == 1, (text, read(text).facts)
    return found[0]


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("It costs 92 EUR.", 92.0, "EUR"),
        ("It costs €92.", 92.0, "EUR"),
        ("92.00 euros", 92.0, "EUR"),
        ("ninety-two euros", 92.0, "EUR"),
        ("EUR 92", 92.0, "EUR"),
        ("$1,204.99 refunded", 1204.99, "USD"),
        ("92,50 € per night", 92.5, "EUR"),
        ("a $3k budget", 3000.0, "USD"),
        ("£7", 7.0, "GBP"),
    ],
)
def test_money_in_the_ways_answers_write_it(text: str, value: float, unit: str) -> None:
    fact = _one(text, NUMBER)
    assert (fact.value, fact.dim, fact.unit) == (value, "money", unit)


@pytest.mark.parametrize(
    ("text", "value", "unit", "dim"),
    [
        ("It is 18C in Paris", 18.0, "C", "temperature"),
        ("18 °C", 18.0, "C", "temperature"),
        ("64°F", 64.0, "F", "temperature"),
        ("minus 5 degrees", -5.0, "", "temperature"),
        ("15%", 15.0, "%", "percent"),
        ("5 km away", 5000.0, "m", "length"),
        ("3 nights", 3.0, "night", "nights"),
        ("2 passengers", 2.0, "passenger", "count"),
    ],
)
def test_quantities_carry_their_dimension_and_canonical_unit(
    text: str, value: float, unit: str, dim: str
) -> None:
    fact = _one(text, NUMBER)
    assert (fact.value, fact.unit, fact.dim) == (value, unit, dim)


@pytest.mark.parametrize(
    ("text", "dates"),
    [
        ("on 2025-07-01", {(2025, 7, 1)}),
        ("July 1", {(0, 7, 1)}),
        ("1 Jul 2025", {(2025, 7, 1)}),
        ("Tuesday, July 1st, 2025", {(2025, 7, 1)}),
        ("the 1st of July", {(0, 7, 1)}),
        ("07/01", {(0, 7, 1), (0, 1, 7)}),
        ("01.07.2025", {(2025, 7, 1)}),
        ("12/25/2025", {(2025, 12, 25)}),
    ],
)
def test_dates_in_the_common_formats_with_every_reading(text: str, dates: set) -> None:
    assert set(_one(text, DATE).value) == dates


def test_relative_days_times_codes_and_statuses() -> None:
    assert _one("see you tomorrow", DATE).dim == "relative"
    assert _one("departs at 2:30 pm", TIME).value == (870,)
    assert set(_one("at 2:30", TIME).value) == {150, 870}
    assert [f.value for f in read("LH207, HTL-ROME-3 and #W2378156").facts if f.kind == CODE] == [
        "LH207",
        "HTL-ROME-3",
        "W2378156",
    ]
    assert _one("order 123e4567-e89b-12d3-a456-426614174000", CODE).text.startswith("123e4567")
    assert _one("The room is not available.", STATUS).value == "unavailable"
    assert _one("Your booking was cancelled.", STATUS).value == "cancelled"
    assert [f.kind for f in read("the 3rd floor, in 2025, 1.5 hours").facts] == [NUMBER, NUMBER]


@pytest.mark.parametrize(
    "text",
    [
        "I couldn't get the weather for Rome.",
        "Sorry, the lookup failed.",
        "Rome: unavailable right now.",
        "The booking didn't go through.",
        "It seems the service is down.",
        "No results came back for Rome.",
        "Atlantis is unknown.",
        "The request timed out.",
        "I was not able to book it.",
        "The lookup came back empty.",
        "Nothing was found for Rome.",
    ],
)
def test_clauses_that_disclose_a_failure(text: str) -> None:
    assert discloses_failure(text)


@pytest.mark.parametrize(
    "text",
    [
        "It isn't raining in Paris.",
        "No problem, your booking is confirmed.",
        "Let me know if you have any issues!",
        "The hotel is not far from the station.",
        "Athens is 29C and sunny.",
    ],
)
def test_clauses_that_do_not(text: str) -> None:
    assert not discloses_failure(text)


def test_a_text_splits_into_sentences_and_clauses() -> None:
    text = "Paris is 18C, but I could not get Rome's weather. Athens: 29°C. Mr. J. Smith is booked."
    parts = [(text[c.start : c.end], c.sentence, c.discloses) for c in clauses(text)]
    assert parts == [
        ("Paris is 18C", 0, False),
        ("but I could not get Rome's weather", 0, True),
        ("Athens: 29°C", 1, False),
        ("Mr. J. Smith is booked", 2, False),
    ]


def test_the_same_value_across_formats_units_and_rounding() -> None:
    def fact(text: str, kind: str = NUMBER):
        return _one(text, kind)

    assert same(fact("€92"), fact("92.0 EUR")) and same(fact("ninety-two euros"), fact("92 EUR"))
    assert same(fact("92"), read_value(92.4)[0].fact)  # rounded as written
    assert same(fact("84°F"), fact("29C")) and not same(fact("90°F"), fact("29C"))
    assert same(fact("95 USD"), fact("92 EUR")) is None  # no exchange rate is assumed
    assert same(fact("15%"), read_value(0.15)[0].fact)
    assert same(fact("about 470 EUR"), fact("468.5 EUR"))
    assert same(fact("July 1", DATE), fact("2025-07-01", DATE)) and not same(
        fact("July 2", DATE), fact("2025-07-01", DATE)
    )
    assert same(fact("tomorrow", DATE), fact("2025-07-01", DATE)) is None
    assert same(fact("it is confirmed", STATUS), fact("booked", STATUS))
    assert same(fact("it is cancelled", STATUS), fact("confirmed", STATUS)) is False
    assert same(fact("it is delivered", STATUS), fact("paid", STATUS)) is None  # no shared axis


def test_values_computed_from_others() -> None:
    assert derivations(276, [92, 3]) and derivations(200, [120, 80]) and derivations(8, [92, 100])
    assert derivations(212, [100])  # 100 °C in °F
    assert not derivations(95, [92, 100]) and not derivations(701, [100])


def test_recorded_values_know_their_keys_and_the_names_beside_them() -> None:
    found = read_value(
        {
            "hotels": [
                {"name": "Roma", "price": 92, "currency": "EUR"},
                {"name": "Nord", "price": 120, "currency": "EUR"},
            ]
        }
    )
    assert [(r.fact.value, r.fact.unit, r.key, sorted(r.beside)) for r in found] == [
        (92.0, "EUR", "price", ["roma"]),
        (120.0, "EUR", "price", ["nord"]),
    ]
    (text,) = read_value("Paris: 18C cloudy")
    assert (text.fact.value, text.fact.dim, "paris" in text.beside) == (18.0, "temperature", True)
    assert [r.fact.value for r in read_value({"available": False, "status": "sold out"})] == [
        "unavailable",
        "unavailable",
    ]


def test_a_value_read_by_its_text_is_read_as_itself() -> None:
    class Reported:  # no JSON type: written as its str(), which a string may also be
        def __str__(self) -> str:
            return "Paris 18C"

    number, decimal = freeze({"price": 92}), freeze({"price": 92.0})  # equal values, written apart
    assert [r.fact.decimals for r in read_value(number, value_text(number))] == [0]
    assert [r.fact.decimals for r in read_value(decimal, value_text(decimal))] == [1]
    opaque, text = freeze({"weather": Reported()}), freeze({"weather": "Paris 18C"})
    assert value_text(opaque) == value_text(text)
    assert read_value(opaque, value_text(opaque)) == ()
    assert [r.fact.value for r in read_value(text, value_text(text))] == [18.0]
    assert read_value(text, value_text(text)) == read_value(freeze({"weather": "Paris 18C"}))
