"""``result_ignored``/``answer_contradicts_result``: the final answer states a value of the same kind, about
the same thing, as a value a successful call returned, and it is another value.

Every fact the answer states is read (``statements.scan``: numbers with units and currencies, dates, times,
codes, status words) and compared with the facts of the results (``statements.values``):

- **the same kind**: a money amount with money (in the same currency: no exchange rate is assumed), a
  temperature with a temperature (°F converted), a date with a date, a code with a code, a status with a
  status on a shared axis ("confirmed" and "cancelled"); a bare number only with a result value whose key the
  clause names ("3 bags" next to ``bags: 2``);
- **about the same thing**: the nearest name in its clause (or sentence) that a call was about, or that stands
  beside the value in the result ("Porto: 150 EUR" against the Madrid-Porto search), and the result keys the
  clause names ("the refund of $486" against ``refund_amount``);
- **another value**: not equal within the rounding the answer used (92 for 92.4), nor equal to any value on
  record (any result, argument, the input), nor computed from them (a total, a difference); a code is another
  value only when it looks like the recorded one (a changed character), not when it is some other identifier.

A clause that says something did not work states nothing (it discloses). An answer that claims the outcome of
a failed call (``false_success``) reports that outcome, which no result holds: its values are the false
success's evidence, not contradictions. A finding linked by name or key is sure
(confidence 0.9); one linked only by kind, where the results hold one value of that kind, 0.8; where they hold
several, it is uncertain (0.5).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rapidfuzz.distance import OSA

from agentotel_eval.detectors.finding import Finding, finding
from agentotel_eval.detectors.linking import context_of, on_record
from agentotel_eval.detectors.rule import Rule
from agentotel_eval.detectors.rules.false_success import claims
from agentotel_eval.detectors.statements.compare import code_key, derivations, same, tolerance
from agentotel_eval.detectors.statements.scan import CODE, DATE, NUMBER, STATUS, Fact
from agentotel_eval.detectors.statements.values import Recorded, key_words
from agentotel_eval.detectors.types import RESULT_IGNORED
from agentotel_eval.detectors.view import RunView

_WORD = re.compile(r"[a-z][a-z]+")
SURE, BY_KIND, UNSURE = 0.9, 0.8, 0.5


def _about(view: RunView, j: int, record: Recorded, name: str) -> bool:
    return name in record.beside or name in view.call_anchors[j]


def find(view: RunView) -> list[Finding]:
    facts = view.answer_reading.facts
    if not facts:
        return []
    records = [(j, r) for j in range(len(view.calls)) if not view.fails[j] for r in view.result_facts(j)]
    if not records:
        return []
    if claims(view):
        # an answer that claims a failed call's outcome reports it: its values are the false success's
        return []
    out: list[Finding] = []
    for fact in facts:
        if fact.kind == DATE and fact.dim == "relative":
            continue
        found = _contradiction(view, fact, records, facts)
        if found is not None:
            out.append(found)
    return out


def _contradiction(
    view: RunView, fact: Fact, records: list[tuple[int, Recorded]], facts: Sequence[Fact]
) -> Finding | None:
    comparable = [(j, r) for j, r in records if same(fact, r.fact) is not None]
    if not comparable:
        return None
    context = context_of(view, fact)
    if context.clause.discloses:
        return None
    linked = keyed = False
    for name in context.names:
        about = [(j, r) for j, r in comparable if _about(view, j, r, name)]
        if about:
            others = [
                r
                for j, r in comparable
                for other in context.names
                if other != name and _about(view, j, r, other)
            ]
            if any(same(fact, r.fact) for r in others):
                return None  # the value of another thing the clause names: the pairing is not ours to read
            comparable, linked = about, True
            break
        if name in view.anchor_calls and not any(r.beside for _, r in comparable):
            return None  # about something whose results hold nothing of this kind
    words = set(_WORD.findall(context.text)) - view.name_words  # what the clause names, not whom
    overlap = [len(r.words & words) for _, r in comparable]
    best = max(overlap, default=0)
    if best:  # the values whose keys the clause names best ("exchange price difference" over "price")
        comparable, keyed = [item for item, n in zip(comparable, overlap, strict=True) if n == best], True
    if fact.kind == NUMBER and not fact.dim and not keyed:
        return None  # a bare number says what it counts only through a key the clause names
    if fact.kind == STATUS and not (linked or keyed):
        return None
    if any(same(fact, r.fact) for _, r in comparable):
        return None
    if _given(view, fact, context.names[0] if linked else None):
        return None
    if fact.kind == NUMBER and _computed(view, fact, [r.fact.value for _, r in comparable]):
        return None
    stated_elsewhere = any(
        other is not fact and same(other, r.fact) for other in facts for _, r in comparable
    )
    if stated_elsewhere and (not linked or fact.kind == STATUS):
        return None  # the answer states the recorded value too: this one is about something else
    j, record = _closest(fact, comparable)
    if fact.kind == CODE and not _looks_like(fact.value, record.fact.value):
        return None
    distinct = {r.fact.text for _, r in comparable}
    confidence = SURE if (linked or keyed) else BY_KIND if len(distinct) == 1 else UNSURE
    call = view.calls[j]
    key = record.key if key_words(record.key) else ""
    what = f" for {key!r}" if key else ""
    return finding(
        RESULT_IGNORED,
        "answer_contradicts_result",
        "result_ignored.answer_contradicts_result",
        call.name,
        (j,),
        f"the final answer states {fact.text!r}{what}, but call #{j + 1} ({call.name}) returned "
        f"{record.fact.text!r}",
        {
            "stated": fact.text,
            "recorded": record.fact.text,
            "kind": fact.kind,
            "key": key,
            "call": j,
            "linked_by": "name" if linked else "key" if keyed else "kind",
        },
        argument=key or None,
        confidence=confidence,
    )


def _closest(fact: Fact, comparable: list[tuple[int, Recorded]]) -> tuple[int, Recorded]:
    if fact.kind == NUMBER:
        return min(comparable, key=lambda item: abs(abs(item[1].fact.value) - abs(fact.value)))
    if fact.kind == CODE:
        return min(
            comparable, key=lambda item: OSA.distance(code_key(fact.value), code_key(item[1].fact.value))
        )
    return comparable[-1]


def _looks_like(stated: str, recorded: str) -> bool:
    """A code that is the recorded one with a character or two changed, not another identifier."""
    a, b = code_key(stated), code_key(recorded)
    if abs(len(a) - len(b)) > 1 or len(b) < 4:
        return False
    return OSA.distance(a, b) <= max(1, min(2, len(b) // 4))


def _given(view: RunView, fact: Fact, name: str | None) -> bool:
    """Whether the stated value is on record where the answer could have taken it: for a fact about a name,
    the input or the arguments of the calls about that name (another thing's result holding it is no excuse:
    "Lima is 20C" when Tokyo is); for any other fact, anywhere on record."""
    if name is None:
        return on_record(view, fact)
    if any(same(fact, f) for f in view.input_facts):
        return True
    return any(same(fact, r.fact) for j in view.anchor_calls.get(name, ()) for r in view.argument_facts(j))


def _computed(view: RunView, fact: Fact, values: list[float]) -> bool:
    """A total or a difference of the values the answer is about, or one of them times a count on record ("3
    nights at 92 EUR": 276 EUR)."""
    tol = max(0.005, tolerance(fact))
    if derivations(fact.value, values, tol=tol, limit=1, conversions=False):
        return True
    counts = {
        f.value
        for f in (*view.answer_reading.facts, *view.input_facts)
        if f.kind == NUMBER and _count(f.value)
    }
    counts |= {
        r.fact.value
        for j in range(len(view.calls))
        for r in view.argument_facts(j)
        if r.fact.kind == NUMBER and _count(r.fact.value)
    }
    return any(
        abs(abs(fact.value) - abs(v * n)) <= tol or abs(abs(fact.value) - abs(v / n)) <= tol
        for v in values
        for n in counts
    )


def _count(value: float) -> bool:
    return float(value).is_integer() and 1 < abs(value) <= 100


RULE = Rule(
    "result_ignored.answer_contradicts_result",
    RESULT_IGNORED,
    ("answer_contradicts_result",),
    "the final answer states a value about something that a successful call returned another value for",
    find,
    needs=("answer", "results"),
    confidence=SURE,
)
