"""``sequence_error``/``ungrounded_argument``: a call's argument value that appears nowhere before the call:
not in the user's input, the system prompt, the tools' definitions, the assistant's text between calls, nor
any earlier call's arguments, result or error. The model made it up.

Values of every kind are checked, each by what it means rather than how it is written:

- **ids** ("ORD-9931", a UUID): as whole tokens; only ids that cannot be the model's own vocabulary (six
  characters or more, digits mixed into capitals or two digits or more: "EHGLP3", not "gpt-4o"). An id that
  first appears in a later result is ``used_before_produced``, not this.
- **numbers** (and numbers written as text): equal to a number stated before (92 to "92.00 EUR", 3 to "three
  nights", 0.15 to "15%"), or computed from those by a sum, difference, product, quotient or unit conversion
  (``statements.compare.derivations``). 0 and 1, and parameters that size a listing (``limit``, ``page``,
  ``top_k``, ...) or have a schema default, are the model's own choice and are not checked.
- **dates**: the same day as one stated before ("July 1" for ``2025-07-01``), or one stated before plus a
  number of days stated before (a check-in plus 3 nights); "tomorrow" and weekdays are read from the day the
  run started, when it is known.
- **names** (a short value with a capital: "Madrid", "Hotel Roma", "EUR"): one of its words, its initials or,
  for a currency code, the currency's name or symbol, stated before.

A call is checked only where the run's input and every earlier call's result or error are recorded. The
finding is uncertain (``detector_uncertain``, confidence 0.5) where the rule cannot be sure: the system prompt
was not recorded (the value may be there), the value is a short code in capitals (an airport code the model
knows), or a relative day could not be placed.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rapidfuzz.distance import OSA

from agentotel_eval.detectors.finding import Finding, finding
from agentotel_eval.detectors.rule import Rule
from agentotel_eval.detectors.statements import lexicon as lx
from agentotel_eval.detectors.statements.compare import derivations, same
from agentotel_eval.detectors.statements.scan import DATE, NUMBER, Fact, read
from agentotel_eval.detectors.tokens import contains_token, id_like, value_text
from agentotel_eval.detectors.types import SEQUENCE_ERROR
from agentotel_eval.detectors.view import RunView, normalized

SURE, LIKELY, UNSURE = 0.9, 0.8, 0.5
_MAX_VALUES = 32  # argument values checked per call
#: words of a parameter's name that say its value sizes, pages or tunes the call: the model's own choice
_OWN_CHOICE_WORDS = frozenset(
    {
        "limit",
        "page",
        "offset",
        "top",
        "k",
        "n",
        "size",
        "per",
        "count",
        "max",
        "min",
        "num",
        "retries",
        "retry",
        "tries",
        "attempts",
        "timeout",
        "temperature",
        "seed",
        "depth",
        "radius",
        "precision",
        "decimals",
        "digits",
        "round",
        "rounding",
        "version",
        "level",
        "priority",
        "rank",
        "index",
        "skip",
        "batch",
        "threshold",
        "interval",
        "delay",
        "wait",
        "verbose",
        "verbosity",
        "results",
        "items",
        "rows",
    }
)
_KEY_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_WORD = re.compile(r"[^\W\d_]{3,}")
_TOKEN = re.compile(r"[^\W_]+")
_ID_TOKEN = re.compile(r"[A-Za-z0-9_-]+")  # what ``contains_token`` takes for a whole token
_NAME = re.compile(r"[A-Z]")
_NAME_CHARS = re.compile(r"[^\W\d_][\w .,'’&-]*")  # a name: words, not a path, a command or an expression


def _leaves(
    value: Any, path: str = "", depth: int = 0, out: list[tuple[str, Any]] | None = None
) -> list[tuple[str, Any]]:
    """Each leaf of an argument value and its dotted path (a list's items share the list's path)."""
    if out is None:
        out = []
    if depth > 5:
        return out
    if isinstance(value, str):
        out.append((path, value))
    elif isinstance(value, dict | Mapping):  # a dict (frozen or not) is told before the ABC check
        for key, item in value.items():
            _leaves(item, f"{path}.{key}" if path else str(key), depth + 1, out)
    elif isinstance(value, list | tuple):
        for item in value[:20]:
            _leaves(item, path, depth + 1, out)
    else:
        out.append((path, value))
    return out


class _Known:
    """What was stated before a call: the run's texts (input, system prompt, tools, assistant text) and the
    calls added so far. Each reading (facts and numbers, words, ids, the text) is taken when a value first
    needs it and then only extended with the calls added since: a run whose arguments are all names
    never reads numbers."""

    def __init__(self, view: RunView) -> None:
        self.view = view
        self.texts = [
            t
            for t in (view.user_input, view.system_prompt, view.definitions_text, *view.assistant_texts)
            if t
        ]
        self._calls = 0  # calls whose arguments and results are known
        self._values_at = self._tokens_at = self._ids_at = -1  # calls each reading covers (-1: not read yet)
        self._facts: list[Fact] = []
        self._numbers: list[float] = []
        self._rounded: set[float] = set()
        self._currencies: set[str] = set()
        self._tokens: set[str] = set()
        self._ids: set[str] = set()
        self._text: str | None = None
        self._lower: str | None = None
        self._words: str | None = None

    def add(self, j: int) -> None:
        self._calls = j + 1
        self._text = self._lower = self._words = None

    def _read_values(self) -> None:
        view = self.view
        if self._values_at < 0:
            readings = [read(t) for t in self.texts]
            self._facts = [f for r in readings for f in r.facts]
            # every number as written, whatever the reader made of it ("6:30 PM" holds 6 and 30, "72 hours"
            # 72, "three hours" 3), and the quantities words state ("twice", "a decade", "pi")
            self._numbers = [f.value for f in self._facts if f.kind == NUMBER] + [
                n for r in readings for n in (*_written(r.text), *_quantities(r.lower))
            ]
            self._currencies = {f.unit for f in self._facts if f.kind == NUMBER and f.dim == "money"}
            self._rounded = {round(abs(n), 2) for n in self._numbers}
            self._values_at = 0
        for j in range(self._values_at, self._calls):
            written = _written(view.call_texts[j])
            self._numbers += written
            self._rounded.update(round(abs(n), 2) for n in written)
            for recorded in (*view.argument_facts(j), *view.result_facts(j), *view.error_facts(j)):
                fact = recorded.fact
                self._facts.append(fact)
                if fact.kind == NUMBER:
                    self._numbers.append(fact.value)
                    self._rounded.add(round(abs(fact.value), 2))
                    if fact.dim == "money" and fact.unit:
                        self._currencies.add(fact.unit)
        self._values_at = self._calls

    @property
    def facts(self) -> list[Fact]:
        if self._values_at != self._calls:
            self._read_values()
        return self._facts

    @property
    def numbers(self) -> list[float]:
        if self._values_at != self._calls:
            self._read_values()
        return self._numbers

    @property
    def rounded(self) -> set[float]:
        if self._values_at != self._calls:
            self._read_values()
        return self._rounded

    @property
    def currencies(self) -> set[str]:
        if self._values_at != self._calls:
            self._read_values()
        return self._currencies

    @property
    def tokens(self) -> set[str]:
        """The words known, lower-cased, identifiers split at "_" ("mei_kovacs" -> "mei", "kovacs")."""
        if self._tokens_at != self._calls:
            if self._tokens_at < 0:
                self._tokens = set(_TOKEN.findall("\n".join(self.texts).lower()))
                self._tokens_at = 0
            for text in self.view.call_texts[self._tokens_at : self._calls]:
                self._tokens.update(_TOKEN.findall(text.lower()))
            self._tokens_at = self._calls
        return self._tokens

    @property
    def ids(self) -> set[str]:
        if self._ids_at != self._calls:
            if self._ids_at < 0:
                self._ids = set(_ID_TOKEN.findall("\n".join(self.texts)))
                self._ids_at = 0
            for text in self.view.call_texts[self._ids_at : self._calls]:
                self._ids.update(_ID_TOKEN.findall(text))
            self._ids_at = self._calls
        return self._ids

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "\n".join([*self.texts, *self.view.call_texts[: self._calls]])
        return self._text

    @property
    def lower(self) -> str:
        if self._lower is None:
            self._lower = self.text.lower()
        return self._lower

    @property
    def words(self) -> str:
        """The known text lower-cased, identifiers split into words ("mei_kovacs_8020" ->
        "mei kovacs 8020")."""
        if self._words is None:
            self._words = self.lower.replace("_", " ")
        return self._words


def find(view: RunView) -> list[Finding]:
    calls = view.calls
    if not calls or not (view.user_input or "").strip():
        return []
    known = _Known(view)
    uncertain_prompt = view.system_prompt is None
    schema_defaults = _schema_defaults(view)
    # the words of each name the user gave that no call's string arguments used so far (a name, once used,
    # stays used: only the names still unused need the arguments' words)
    unused = [set(_TOKEN.findall(name)) for name in _asked_names(view.user_input or "")]
    used: set[str] = set()  # the words of the calls' string arguments so far
    out: list[Finding] = []
    for j, call in enumerate(calls):
        if j and (calls[j - 1].output is None and not calls[j - 1].error):
            break  # an earlier result not recorded: what follows may come from it
        args = call.input_parameters
        if isinstance(args, dict | Mapping):
            checked = 0
            leaves = _leaves(args)
            if unused:
                used.update(
                    t for _, value in leaves if isinstance(value, str) for t in _TOKEN.findall(value.lower())
                )
                unused = [words for words in unused if not words & used]
            replaced = bool(unused)
            for path, value in leaves:
                if checked >= _MAX_VALUES:
                    break
                checked += 1
                problem = _ungrounded(
                    view, known, j, path, value, schema_defaults.get(call.name, {}), replaced=replaced
                )
                if problem is None:
                    continue
                what, confidence = problem
                if uncertain_prompt:
                    confidence = min(confidence, UNSURE)
                out.append(
                    finding(
                        SEQUENCE_ERROR,
                        "ungrounded_argument",
                        "sequence_error.ungrounded",
                        call.name,
                        (j,),
                        f"call #{j + 1} to {call.name!r} used {path} = {value_text(value)[:60]!r}, "
                        f"which appears nowhere before it ({what})",
                        {
                            "value": value,
                            "argument": path,
                            "kind": what,
                            "used_by": j,
                            "system_prompt_recorded": not uncertain_prompt,
                        },
                        argument=path,
                        confidence=confidence,
                    )
                )
        known.add(j)
    return out


_DIGITS = re.compile(r"(?<![\d.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")


def _written(text: str) -> list[float]:
    """The numbers written in a text as digits, as they stand: "12,000" is 12000, and "200,300" is also 200
    and 300 (a list written without spaces)."""
    out: list[float] = []
    for m in _DIGITS.finditer(text):
        raw = m.group(0)
        out.append(float(raw.replace(",", "")))
        if "," in raw:
            out += [float(part) for part in raw.split(",") if part and part.replace(".", "", 1).isdigit()]
    return out


_QUANTITY = re.compile(
    r"(?<![\w])(" + "|".join(sorted(lx.QUANTITY_WORDS, key=len, reverse=True)) + r")(?![\w])"
)


def _quantities(lower: str) -> list[float]:
    return [lx.QUANTITY_WORDS[m.group(1)] for m in _QUANTITY.finditer(lower)]


def _schema_defaults(view: RunView) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for tool in view.tools or ():
        props = (
            (tool.parameters or {}).get("properties") if isinstance(tool.parameters, dict | Mapping) else None
        )
        if isinstance(props, dict | Mapping):
            out[tool.name] = {str(k): v for k, v in props.items() if isinstance(v, dict | Mapping)}
    return out


def _ungrounded(
    view: RunView,
    known: _Known,
    j: int,
    path: str,
    value: Any,
    schema: Mapping[str, Any],
    replaced: bool = False,
) -> tuple[str, float] | None:
    key = path.rsplit(".", 1)[-1]
    prop = schema.get(key)
    if isinstance(prop, dict | Mapping) and ("default" in prop or "enum" in prop or "const" in prop):
        return None  # the tool offers the values: the model chose among them
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return _number(known, key, float(value))
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    shape = _shape(text)
    if shape.kind == _ID:
        return _identifier(view, known, j, text)
    if shape.kind == NUMBER and shape.fact is not None:
        return _number(known, key, shape.fact.value)
    if shape.kind == DATE and shape.fact is not None:
        return _date(view, known, shape.fact)
    if shape.kind == _NAME_KIND:
        return _name(known, text, shape, replaced)
    return None


_ID, _NAME_KIND = "id", "name"


@dataclass(frozen=True, slots=True)
class _Shape:
    """What an argument's text is, whatever came before it: an id, a number or a date (its fact), a name (its
    words), or nothing to check ("")."""

    kind: str
    fact: Fact | None = None
    key: str = ""  # a name, normalized
    words: tuple[str, ...] = ()  # its words that are not stopwords


@lru_cache(maxsize=4096)
def _shape(text: str) -> _Shape:
    """Read once however many arguments (of this run or of others) hold the text."""
    if id_like(text):
        return _Shape(_ID)
    facts = read(text, statuses=False).facts
    if len(facts) == 1 and facts[0].end - facts[0].start >= 0.8 * len(text):
        fact = facts[0]
        if fact.kind == NUMBER:
            return _Shape(NUMBER, fact)
        if fact.kind == DATE and fact.dim != "relative":  # "tomorrow" as an argument: the model's own words
            return _Shape(DATE, fact)
        return _Shape("")
    if _NAME.search(text) and len(text) <= 60 and len(text.split()) <= 4 and _NAME_CHARS.fullmatch(text):
        key = normalized(text)
        return _Shape(_NAME_KIND, None, key, tuple(w for w in _WORD.findall(key) if w not in lx.STOPWORDS))
    return _Shape("")


def _number(known: _Known, key: str, value: float) -> tuple[str, float] | None:
    if abs(value) in (0.0, 1.0) or _own_choice(key):
        return None
    rounded = known.rounded
    if (
        round(abs(value), 2) in rounded
        or round(abs(value) * 100, 2) in rounded
        or round(abs(value) / 100, 2) in rounded
    ):
        return None  # stated before, as it is or as a percentage
    probe = Fact(NUMBER, value, 0, 0, f"{value:g}", decimals=_decimals(value))
    if any(same(probe, f) for f in known.facts if f.kind == NUMBER and f.dim):
        return None  # in another unit (°F, miles)
    if derivations(value, known.numbers, limit=1):
        return None
    return "a number", (LIKELY if abs(value) <= 10 and float(value).is_integer() else SURE)


def _own_choice(key: str) -> bool:
    return any(part.lower() in _OWN_CHOICE_WORDS for part in _KEY_PARTS.findall(key))


def _decimals(value: float) -> int:
    text = repr(value)
    return len(text.split(".")[1].rstrip("0")) if "." in text else 0


def _today(view: RunView) -> dt.date | None:
    return view.started.date() if view.started is not None else None


def _date(view: RunView, known: _Known, fact: Fact) -> tuple[str, float] | None:
    dates = [f for f in known.facts if f.kind == DATE]
    absolute = [f for f in dates if f.dim != "relative"]
    if any(same(fact, f) for f in absolute):
        return None
    today = _today(view)
    resolved = [_resolve(f, today) for f in dates if f.dim == "relative"]
    days = [int(n) for n in known.numbers if float(n).is_integer() and 0 < abs(n) <= 366]
    for y, m, d in fact.value:
        for base in [*(_as_dates(f) for f in absolute), *resolved]:
            for candidate in base or ():
                if candidate is None:
                    continue
                if (candidate.month, candidate.day) == (m, d) and (not y or candidate.year == y):
                    return None
                try:
                    target = dt.date(y or candidate.year, m, d)
                except ValueError:
                    continue
                if abs((target - candidate).days) in {*days, 1, 7}:
                    return None  # a stated date plus a stated number of days
    if any(f.dim == "relative" for f in dates) and today is None:
        return "a date, after a relative day that could not be placed", UNSURE
    return "a date", SURE


def _as_dates(fact: Fact) -> list[dt.date]:
    out = []
    for y, m, d in fact.value:
        try:
            out.append(dt.date(y or 2000, m, d))
        except ValueError:
            continue
    return out


def _resolve(fact: Fact, today: dt.date | None) -> list[dt.date]:
    if today is None:
        return []
    offset = fact.value[0]
    if isinstance(offset, int):
        return [today + dt.timedelta(days=offset)]
    word = next((w for w in lx.WEEKDAYS if w[:3] in fact.text.lower()), None)
    if word is not None:
        target = lx.WEEKDAYS.index(word)
        return [today + dt.timedelta(days=(target - today.weekday()) % 7 + extra) for extra in (0, 7)]
    return [today + dt.timedelta(days=n) for n in range(0, 32)]  # "next week", "next month": some day ahead


def _identifier(view: RunView, known: _Known, j: int, value: str) -> tuple[str, float] | None:
    if value in known.ids or value.lstrip("#") in known.ids:
        return None
    if any(ch in value for ch in ".:") and contains_token(known.text, value):
        return None
    if value.isdigit() and contains_token(known.text.replace(",", ""), value):
        return None  # "$10,000,000" holds the digits "10000000"
    digits = sum(ch.isdigit() for ch in value)
    if not (len(value) >= 6 and (digits >= 2 or (digits >= 1 and any(ch.isupper() for ch in value)))):
        return None  # short or word-like: the model's own vocabulary ("gpt-4o", "utf-8")
    if any(
        not view.fails[k] and contains_token(view.output_texts[k], value)
        for k in range(j + 1, len(view.calls))
    ):
        return None  # a later result holds it: used_before_produced says so
    return "an id", SURE


def _name(known: _Known, value: str, shape: _Shape, replaced: bool = False) -> tuple[str, float] | None:
    """``replaced``: a name the user gave is used by no call so far, so this one may stand in its place; else
    the name is one the model added from its own knowledge (a state for a city, a ticker for a company), and
    the finding is one the rule cannot be sure of."""
    key = shape.key
    if not key:
        return None
    tokens = known.tokens
    words = shape.words
    if any(w in tokens for w in words) or (" " not in key and key in tokens):
        return None
    letters = [w[0] for w in key.split() if w]
    if len(letters) >= 2 and "".join(letters) in tokens:
        return None  # "New York" for "NY"
    if " " in key and contains_token(known.words, key):
        return None
    if any(_near(w, tokens) for w in words if len(w) >= 5):
        return None  # the user's spelling corrected ("Chcicago")
    upper = value.upper()
    if upper in lx.CURRENCY_CODES and (upper in known.currencies or _currency_named(known.words, upper)):
        return None  # "EUR" for "euros" or "€"
    if len(value) <= 5 and value.isupper():
        return "a code", UNSURE  # an airport, a ticker, an exchange: the model's own knowledge
    if not words:
        return None
    return "a name", LIKELY if replaced else UNSURE


def _near(word: str, tokens: set[str]) -> bool:
    limit = max(1, len(word) // 5)
    return any(
        abs(len(t) - len(word)) <= limit and OSA.distance(word, t) <= limit
        for t in tokens
        if t[:1] == word[:1] or t[-1:] == word[-1:]
    )


#: capitalised words the user wrote that name nothing: months, days, and the first word of a sentence
_ASKED = re.compile(r"(?<![.!?\n]\s)(?<!^)\b([A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)*)|\b([A-Z]{2,5})\b")
_NOT_NAMES = frozenset({*lx.MONTHS, *lx.WEEKDAYS, "i", "i'm", "i’m", "ok"})


def _asked_names(text: str) -> list[str]:
    """The names the user gave (capitalised words past a sentence's first, and codes in
    capitals), lower-cased."""
    out = []
    for m in _ASKED.finditer(text):
        name = (m.group(1) or m.group(2)).lower()
        if name not in _NOT_NAMES and name.split()[0] not in _NOT_NAMES:
            out.append(name)
    return list(dict.fromkeys(out))


def _currency_named(lower: str, code: str) -> bool:
    names = [w for w, c in lx.CURRENCY_WORDS.items() if c == code] + [
        s.lower() for s, c in lx.CURRENCY_SYMBOLS.items() if c == code and not s.isalpha()
    ]
    return any(contains_token(lower, n) if n.isalpha() else n in lower for n in names)


RULE = Rule(
    "sequence_error.ungrounded_argument",
    SEQUENCE_ERROR,
    ("ungrounded_argument",),
    "an argument value (id, number, date or name) that appears nowhere before the call",
    find,
    needs=("input", "results"),
    confidence=SURE,
    label="sequence_error (grounding)",
)
