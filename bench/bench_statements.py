"""How well, and how fast, the detectors' statement reader finds the values an answer states, against the
libraries that could do parts of it: dateparser and python-dateutil (dates), price-parser (money), quantulum3
(quantities), and text2num / number-parser (number words).

The labelled sentences are generated (seeded) from the robustness suite's phrasings and value formats: each
states one value of a known kind in one of the ways answers write it, in a sentence of its own. A reader
scores a hit when it returns that value (a date's month and day, an amount and its currency, a temperature in
°C); precision counts what it returns that is not the stated value.

    python bench/bench_statements.py [--n 600] [--seed 0]

The libraries are not the product's dependencies: install them to compare (``pip install dateparser
python-dateutil price-parser quantulum3 number-parser``); a missing one is skipped.
"""

from __future__ import annotations

import argparse
import random
import time
import warnings
from collections.abc import Callable
from typing import Any

from agentotel_eval.calibration import phrasings as say
from agentotel_eval.detectors.statements.scan import DATE, NUMBER, read

warnings.filterwarnings("ignore")
CITIES = ("Paris", "Lisbon", "Tokyo", "Lima", "Oslo", "Cairo")


def sentences(n: int, seed: int) -> list[tuple[str, str, Any]]:
    """(sentence, kind, value): kind money -> (amount, currency), temperature -> °C, date -> (month, day)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        kind = rng.choice(("money", "temperature", "date"))
        if kind == "money":
            amount = float(rng.choice((rng.randint(5, 999), round(rng.uniform(5, 999), 2))))
            currency = rng.choice(("EUR", "USD", "GBP"))
            value: Any = (amount, currency)
            written = say.money(amount, currency, rng)
        elif kind == "temperature":
            celsius = rng.randint(-10, 40)
            value, written = celsius, say.temperature(celsius, rng)
        else:
            month, day = rng.randint(1, 12), rng.randint(1, 28)
            value, written = (month, day), say.date(2025, month, day, rng)
        template = rng.choice(say.STATEMENTS)
        out.append((template.format(entity=rng.choice(CITIES), topic="result", value=written), kind, value))
    return out


def _ours(text: str) -> list[tuple[str, Any]]:
    found = []
    for fact in read(text).facts:
        if fact.kind == NUMBER and fact.dim == "money":
            found.append(("money", (round(fact.value, 2), fact.unit)))
        elif fact.kind == NUMBER and fact.dim == "temperature":
            celsius = (fact.value - 32) * 5 / 9 if fact.unit == "F" else fact.value
            found.append(("temperature", round(celsius)))
        elif fact.kind == DATE and fact.dim != "relative":
            found += [("date", (m, d)) for _, m, d in fact.value]
    return found


def _dateparser(text: str) -> list[tuple[str, Any]]:
    from dateparser.search import search_dates

    return [("date", (d.month, d.day)) for _, d in search_dates(text, languages=["en"]) or ()]


def _dateutil(text: str) -> list[tuple[str, Any]]:
    from dateutil import parser

    try:
        found = parser.parse(text, fuzzy=True)
    except (ValueError, OverflowError):
        return []
    return [("date", (found.month, found.day))]


def _price_parser(text: str) -> list[tuple[str, Any]]:
    from price_parser import Price

    price = Price.fromstring(text)
    if price.amount is None:
        return []
    codes = {"€": "EUR", "$": "USD", "£": "GBP", "euros": "EUR", "dollars": "USD", "pounds": "GBP"}
    return [("money", (round(float(price.amount), 2), codes.get(price.currency or "", price.currency)))]


def _quantulum(text: str) -> list[tuple[str, Any]]:
    from quantulum3 import parser

    out: list[tuple[str, Any]] = []
    for q in parser.parse(text):
        entity, name = q.unit.entity.name, q.unit.name
        if entity == "currency":
            code = {
                "euro": "EUR",
                "dollar": "USD",
                "United States dollar": "USD",
                "pound sterling": "GBP",
            }.get(name)
            out.append(("money", (round(q.value, 2), code)))
        elif entity == "temperature":
            out.append(("temperature", round((q.value - 32) * 5 / 9 if "fahrenheit" in name else q.value)))
    return out


READERS: dict[str, tuple[Callable[[str], list[tuple[str, Any]]], tuple[str, ...]]] = {
    "ours (regular expressions + text2num)": (_ours, ("money", "temperature", "date")),
    "dateparser.search_dates": (_dateparser, ("date",)),
    "dateutil.parse(fuzzy)": (_dateutil, ("date",)),
    "price-parser": (_price_parser, ("money",)),
    "quantulum3": (_quantulum, ("money", "temperature")),
}


def score(
    reader: Callable[[str], list[tuple[str, Any]]], kinds: tuple[str, ...], cases: list[tuple[str, str, Any]]
) -> tuple[float, float, float]:
    hits = returned = wanted = 0
    started = time.perf_counter()
    for text, kind, value in cases:
        if kind not in kinds:
            continue
        wanted += 1
        found = [v for k, v in reader(text) if k == kind]
        returned += len(found)
        if value in found:
            hits += 1
    per = (time.perf_counter() - started) / max(1, wanted)
    return (hits / returned if returned else 0.0), hits / max(1, wanted), per


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    cases = sentences(args.n, args.seed)
    print(f"{len(cases)} generated sentences, one stated value each (money, temperature, date)")
    print(f"{'reader':42s} {'kinds':26s} {'precision':>9s} {'recall':>7s} {'µs/sentence':>12s}")
    for name, (reader, kinds) in READERS.items():
        try:
            reader("warm up on 2025-07-01 for €5")
        except ImportError:
            print(f"{name:42s} (not installed)")
            continue
        precision, recall, per = score(reader, kinds, cases)
        print(f"{name:42s} {', '.join(kinds):26s} {precision:9.3f} {recall:7.3f} {per * 1e6:12.0f}")


if __name__ == "__main__":
    main()
