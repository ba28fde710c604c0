"""Read the facts a text states: numbers with their units, dates, times, codes and status words.

``read(text)`` gives a ``Reading``: the text as read (number words written as digits: "ninety-two euros" ->
"92 euros") and its ``Fact``s, each with where it stands in that text. Pure and fast (a few regular
expressions over the text; text2num turns number words into digits, only when the text has one): the detectors
read every answer and every result with it.

What each kind's ``value`` is:

- ``number``: a float in the unit's canonical unit (``dim``/``unit``: "money"/"EUR", "temperature"/"C",
  "length"/"m", "duration"/"s", "nights"/"night", "percent"/"%", "count"/<the noun>, or ""/"" for a bare
  number); ``decimals`` as written, ``approx`` when hedged ("about 92").
- ``date``: the dates the text can mean, as ``(year, month, day)`` with year 0 when not written ("07/01" is
  both July 1 and January 7); a relative day ("tomorrow") is ``dim = "relative"`` with its day offset.
- ``time``: minutes after midnight (both readings of "2:30" without am/pm).
- ``code``: an identifier as written, upper-cased, without a leading "#" ("LH207", "HTL-ROME-3", a UUID).
- ``status``: a status group ("confirmed", "cancelled", ...; ``lexicon.STATUS_WORDS``), ``unit`` its axes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agentotel_eval.detectors.statements import lexicon as lx

NUMBER, DATE, TIME, CODE, STATUS = "number", "date", "time", "code", "status"


@dataclass(frozen=True, slots=True)
class Fact:
    """One value a text states (see the module docstring for ``value`` per kind)."""

    kind: str
    value: Any
    start: int
    end: int
    text: str
    dim: str = ""
    unit: str = ""
    decimals: int = 0
    approx: bool = False
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Reading:
    """A text as read: ``text`` (number words as digits), its lower-cased form, and its facts in order."""

    text: str
    lower: str
    facts: tuple[Fact, ...]


_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_WEEKDAY = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)[a-z]*\.?,?\s+"
_DATES = re.compile(
    rf"(?P<iso>(?<![\w.-])(?P<iy>\d{{4}})-(?P<im>\d{{2}})-(?P<id>\d{{2}})(?:[T "
    rf"](?P<ih>\d{{2}}):(?P<imi>\d{{2}})(?::\d{{2}}(?:\.\d+)?)?(?:Z|[+-]\d{{2}}:?\d{{2}})?)?(?![\w-]))"
    rf"|(?P<named>(?<![\w])(?:{_WEEKDAY})?(?:(?P<mn1>{_MONTH})\.?\s+(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?(?![\d:])"
    rf"(?:,?\s+(?P<y1>\d{{4}})(?!\d))?|(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mn2>{_MONTH})\b\.?"
    rf"(?:,?\s+(?P<y2>\d{{4}})(?!\d))?))"
    r"|(?P<numeric>(?<![\w/.,:-])(?P<na>\d{1,4})(?P<sep>[/.])(?P<nb>\d{1,2})(?:(?P=sep)(?P<nc>\d{2,4}))?"
    r"(?![\w/-]|[.,]\d))"
    r"|(?P<time>(?<![\w:.])(?P<th>[01]?\d|2[0-3]):(?P<tm>[0-5]\d)(?::[0-5]\d)?(?:\s?(?P<tap>[ap])\.?m\b\.?)?(?![\w:])"
    r"|(?<![\w:.,])(?P<th2>1[0-2]|0?[1-9])\s?(?P<tap2>[ap])\.?m\b\.?|\b(?P<tnoon>noon|midday|midnight)\b)"
    rf"|(?P<rel>\b(?:day after "
    rf"tomorrow|today|tonight|tomorrow|yesterday|(?:next|this|last)\s+(?:week|month|year|weekend|(?:mon|tues|wednes|thurs|fri|satur|sun)day)|in\s+(?P<rn>\d+)\s+(?P<ru>day|week)s?)\b)",
    re.IGNORECASE,
)
_SYMBOLS = sorted(lx.CURRENCY_SYMBOLS, key=len, reverse=True)
_CODES = "|".join(sorted(lx.CURRENCY_CODES))
_NUMBERS = re.compile(
    r"(?<![\w.,/:#-])(?:(?P<pre>"
    + "|".join(re.escape(s) for s in _SYMBOLS if s not in ("kr", "Fr."))
    + rf")\s?|(?P<prec>\b(?:{_CODES}))\s?)?(?P<sign>[-−+])?"
    r"(?P<num>\d+,\d{1,2}(?=\s?(?:€|EUR|euros?|CHF|kr|zł|₽)(?!\w))|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?![\d.,]\d)(?:(?P<mgap>\s?)(?P<mult>thousand|millions?|billion|trillion|mn|bn|[kKmMbB])(?![\w]))?"
    r"(?:(?P<ugap>[ \u00a0]?-?)(?P<unit>°\s?[CcFf](?![a-z])|°|%|[$€£¥₹]|[A-Za-z]+(?:/[a-z]+)?))?"
)
_SIGN_WORD = re.compile(r"(?:minus|negative)\s*$", re.IGNORECASE)
_UUID = re.compile(
    r"(?<![\w-])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![\w-])"
)
#: a token that may be a code: with a digit, or upper-case segments joined by "-" or "_" (plain words are not)
_TOKEN = re.compile(
    r"(?<![\w@/.#-])#?(?=[A-Za-z0-9_-]*(?:\d|[A-Z0-9]{2}[-_][A-Z0-9]))[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*"
    r"(?![\w@-]|\.\w)"
)
_NUMBER_WORD = re.compile(
    r"(?i)\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
    r"fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|"
    r"seventy|eighty|ninety|hundred|thousand|dozen)\b"
)
_STATUS = re.compile(
    r"(?i)(?<![\w-])(?:"
    + "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(lx.STATUS_WORDS, key=len, reverse=True))
    + r")(?![\w-])"
)
_STATUS_NEGATION = re.compile(r"(?i)(?:\bnot|n't|\bnever|\bno longer)\s+(?:\w+\s+){0,2}$")
_HEDGE = re.compile(
    r"(?i)(?:\b(?:about|around|approximately|approx\.?|roughly|nearly|almost|circa|ca\.|"
    r"estimated|up to|at least|at most|less than|more than|over|under|some)|~|≈)\s*$"
)
_ORDINAL_AFTER = re.compile(r"(?:st|nd|rd|th)\b")
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)", re.IGNORECASE)


def read(text: str | None, *, statuses: bool = True) -> Reading:
    """The facts ``text`` states (see the module docstring); ``statuses=False`` skips status words."""
    if not text:
        return Reading("", "", ())
    return _read(text, statuses)


@lru_cache(maxsize=4096)
def _read(text: str, statuses: bool) -> Reading:
    if statuses:  # the reading without status words, shared with the readers that skip them, and the statuses
        base = _read(text, False)
        found = list(base.facts)
        _statuses(base.text, found)
        if len(found) == len(base.facts):
            return base
        found.sort(key=lambda f: f.start)  # stable: at one position the other facts stay before the status
        return Reading(base.text, base.lower, tuple(found))
    if _NUMBER_WORD.search(text) is not None:
        text = _digits(text)
    facts: list[Fact] = []
    masked = text
    has_digit = any(ch.isdigit() for ch in text)
    lower = text.lower()
    if has_digit or _has_relative(lower):
        masked = _dates(text, facts)
    if has_digit:
        masked = _uuids(masked, facts)
        masked = _numbers(text, masked, facts)
        _codes(masked, facts)
    facts.sort(key=lambda f: f.start)
    return Reading(text, lower, tuple(facts))


def _has_relative(lower: str) -> bool:
    return any(
        w in lower
        for w in (
            "today",
            "tonight",
            "tomorrow",
            "yesterday",
            "next ",
            "this ",
            "last ",
            "noon",
            "midnight",
            "midday",
        )
    )


def _digits(text: str) -> str:
    """Number words as digits ("ninety-two" -> "92", "two rooms" -> "2 rooms")."""
    try:
        from text_to_num import alpha2digit  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - a declared dependency; without it number words stay words
        return text
    converted: str = alpha2digit(text, "en", threshold=0)  # "two rooms" too: a small number is a number
    return converted


def _mask(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _valid(year: int, month: int, day: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= (29 if month == 2 else 30 if month in (4, 6, 9, 11) else 31)


def _year(text: str | None) -> int:
    if not text:
        return 0
    year = int(text)
    return year + 2000 if year < 100 else year


def _dates(text: str, facts: list[Fact]) -> str:
    masked = text
    for m in _DATES.finditer(text):
        start, end = m.span()
        kind, dim = DATE, ""
        value: tuple[Any, ...]
        if m.group("iso"):
            y, mo, d = int(m.group("iy")), int(m.group("im")), int(m.group("id"))
            if not _valid(y, mo, d):
                continue
            value = ((y, mo, d),)
            if m.group("ih") is not None:
                facts.append(
                    Fact(TIME, (int(m.group("ih")) * 60 + int(m.group("imi")),), start, end, m.group(0))
                )
        elif m.group("named"):
            month = lx.MONTHS.get((m.group("mn1") or m.group("mn2")).lower().rstrip("."))
            day = int(m.group("d1") or m.group("d2"))
            year = _year(m.group("y1") or m.group("y2"))
            if month is None or not _valid(year, month, day):
                continue
            value = ((year, month, day),)
        elif m.group("numeric"):
            a, b, c, sep = m.group("na"), m.group("nb"), m.group("nc"), m.group("sep")
            if len(a) == 4:
                if c is None or not _valid(int(a), int(b), int(c)):
                    continue
                value = ((int(a), int(b), int(c)),)
            else:
                if c is None and (sep == "." or (len(a) < 2 and len(b) < 2)):
                    continue  # "1.5" is a number, "3/4" a fraction: a two-part date is written "07/01"
                year = _year(c)
                first, second = int(a), int(b)
                readings = []
                if sep == "/" and _valid(year, first, second):
                    readings.append((year, first, second))  # month first, as in the US
                if _valid(year, second, first) and first != second:
                    readings.append((year, second, first))
                if not readings:
                    continue
                value = tuple(readings)
        elif m.group("time"):
            kind = TIME
            if m.group("tnoon"):
                value = (0 if m.group("tnoon").lower() == "midnight" else 720,)
            else:
                hour = int(m.group("th") or m.group("th2"))
                minute = int(m.group("tm") or 0)
                ampm = (m.group("tap") or m.group("tap2") or "").lower()
                if ampm:
                    hour = hour % 12 + (12 if ampm == "p" else 0)
                    value = (hour * 60 + minute,)
                else:
                    value = (
                        (hour * 60 + minute,)
                        if hour >= 13 or hour == 0
                        else (hour * 60 + minute, (hour + 12) % 24 * 60 + minute)
                    )
        else:
            dim = "relative"
            phrase = m.group("rel").lower()
            if m.group("rn"):
                value = (int(m.group("rn")) * (7 if m.group("ru").lower() == "week" else 1),)
            else:
                offset = lx.RELATIVE_DAYS.get(" ".join(phrase.split()))
                value = (offset,) if offset is not None else (None,)
        facts.append(Fact(kind, value, start, end, m.group(0), dim=dim))
        masked = _mask(masked, start, end)
    return masked


def _numbers(text: str, masked: str, facts: list[Fact]) -> str:
    out = masked
    for m in _NUMBERS.finditer(masked):
        start = m.start()
        if _ORDINAL_AFTER.match(masked, m.end("num")):
            continue  # "the 3rd": a rank, not a quantity
        raw = m.group("num")
        if "," in raw and not re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", raw):
            number_text = raw.replace(",", ".")  # a decimal comma before a currency ("92,50 €")
        else:
            number_text = raw.replace(",", "")
        number = float(number_text)
        decimals = len(number_text.split(".")[1]) if "." in number_text else 0
        if m.group("sign") in ("-", "−") or _SIGN_WORD.search(masked[max(0, start - 24) : start]):
            number = -number
        pre = m.group("pre") or m.group("prec")
        currency = lx.CURRENCY_SYMBOLS.get(pre, pre if pre in lx.CURRENCY_CODES else None) if pre else None
        unit_text, ugap, unit_end = m.group("unit"), m.group("ugap") or "", m.end("unit")
        mult, scale = m.group("mult"), None
        if mult:
            if (
                len(mult) > 1
                or mult in "kKM"
                or currency is not None
                or (unit_text and _currency_of(unit_text))
            ):
                scale = lx.MULTIPLIERS.get(mult.lower())
            if scale is None:  # a unit after all: "5 m" is five metres, "3b" no billion
                unit_text, ugap, unit_end = mult, m.group("mgap") or "", m.end("mult")
        approx = _HEDGE.search(masked[max(0, start - 16) : start]) is not None
        if scale is not None:
            number, decimals, approx = number * scale, 0, True  # "1.2 million": as exact as it is written
        end = m.end("mult") if scale is not None else m.end("num")
        dim = unit = ""
        if currency is None and unit_text:
            currency = _currency_of(unit_text)
            if currency is not None:
                end = unit_end
        if currency is not None:
            dim, unit = "money", currency
            if currency == "USD¢":
                number, unit = number / 100, "USD"
        elif unit_text:
            found = _unit_of(unit_text, ugap, not masked[unit_end:].strip(" .,;:!?"))
            if found is not None:
                dim, unit, factor = found
                if dim != "temperature":
                    number *= factor
                end = unit_end
            elif (
                unit_text.isalpha()
                and unit_text.lower() not in lx.STOPWORDS
                and len(unit_text) > 2
                and ugap == " "
            ):
                dim, unit = "count", unit_text.lower().removesuffix("s")
        facts.append(
            Fact(
                NUMBER,
                number,
                start,
                end,
                text[start:end],
                dim=dim,
                unit=unit,
                decimals=decimals,
                approx=approx,
            )
        )
        out = _mask(out, start, end)
    return out


def _currency_of(word: str) -> str | None:
    if word in lx.CURRENCY_CODES:
        return word
    if word in lx.CURRENCY_SYMBOLS:
        return lx.CURRENCY_SYMBOLS[word]
    return lx.CURRENCY_WORDS.get(word.lower())


def _unit_of(word: str, gap: str, last: bool = False) -> tuple[str, str, float] | None:
    key = word.lower().replace(" ", "")
    found = lx.UNITS.get(key)
    if found is None:
        return None
    if len(key) == 1 and key not in "%°" and gap and word not in ("C", "F") and not last:
        return (
            None  # "5 m" in a sentence is too often a word: attached ("5m"), a capital C/F, or a value's end
        )
    return found


def _uuids(masked: str, facts: list[Fact]) -> str:
    for m in _UUID.finditer(masked):
        facts.append(Fact(CODE, m.group(0).upper(), m.start(), m.end(), m.group(0)))
        masked = _mask(masked, m.start(), m.end())
    return masked


def _codes(masked: str, facts: list[Fact]) -> None:
    for m in _TOKEN.finditer(masked):
        token = m.group(0)
        if _is_code(token):
            facts.append(Fact(CODE, token.lstrip("#").upper(), m.start(), m.end(), token))


def _is_code(token: str) -> bool:
    bare = token.lstrip("#")
    if len(bare) < 3:
        return False
    digits = sum(ch.isdigit() for ch in bare)
    letters = sum(ch.isalpha() for ch in bare)
    if digits and letters:
        return _ORDINAL.fullmatch(bare) is None  # "3rd" is a rank
    if digits == len(bare):
        return token.startswith("#") or len(bare) >= 6  # "#1042", an order number; "2025" is a year
    # letters only: upper-case segments joined ("HTL-ROME", "ORD-ABC")
    parts = re.split(r"[-_]", bare)
    return len(parts) >= 2 and all(p.isupper() and len(p) >= 2 for p in parts)


def _statuses(text: str, facts: list[Fact]) -> None:
    for m in _STATUS.finditer(text):
        word = " ".join(m.group(0).lower().split())
        group, axes = lx.STATUS_WORDS[word]
        negated = _STATUS_NEGATION.search(text[max(0, m.start() - 30) : m.start()]) is not None
        if negated:
            flipped = lx.NEGATED_GROUP.get(group)
            if flipped is None:
                continue  # "not shipped": says what is not, not what is
            group = flipped
        facts.append(
            Fact(STATUS, group, m.start(), m.end(), m.group(0), unit=",".join(axes), negated=negated)
        )
