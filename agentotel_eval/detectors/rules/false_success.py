"""``error_handling``/``false_success``: the final answer states a result or an outcome for something whose
every call failed, and does not say that it failed. For every tool, read tools included.

A failure is **open** when no later call of the tool succeeded about the same things (the names its arguments
were about: "Atlantis" in ``get_weather(city="Atlantis")``). It is **disclosed** when a clause of the answer
says that something did not work (``statements.clauses``: "Atlantis is unknown", "I couldn't book the hotel",
any tense) and that clause, or its sentence, is about the failed call: it names what the call was about or
what the tool is about ("weather" for ``get_weather``), or names nothing the calls were about (a general
apology). An open, undisclosed failure is a false success when a clause that does not disclose:

1. states a value (a number, date, time, code or status) about a name only failed calls were about
   ("Atlantis: 25C") — confidence 0.9;
2. claims the tool's action: its ``claims`` pattern from ``[[tools]]``, else its verb in the past tense
   (``book_hotel`` -> "booked"; tools whose verb reads, such as ``get_``, claim nothing), a success word
   ("successfully", "confirmed", "all set") or a status of success, in a clause about the call or its tool, or
   anywhere when the tool never succeeded in the run — 0.9, 0.8 unlinked;
3. says what the failed thing is ("Atlantis is mild", "Atlantis: dry") — 0.8;
4. states a value found nowhere on record (no result, argument or input holds it) in a sentence about nothing
   the calls were about, when the tool never succeeded — 0.8.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentotel_eval.detectors.declarations import ToolRule, bare_name
from agentotel_eval.detectors.failure import error_text
from agentotel_eval.detectors.finding import Finding, finding
from agentotel_eval.detectors.linking import context_of, mentioned_in, on_record
from agentotel_eval.detectors.rule import Rule
from agentotel_eval.detectors.statements.scan import CODE, DATE, NUMBER, STATUS, TIME
from agentotel_eval.detectors.types import ERROR_HANDLING
from agentotel_eval.detectors.view import RunView, mentions, tool_topics

#: a tool whose first word is one of these reads or computes: it performs no action an answer could claim
READ_VERBS = frozenset(
    {
        "get",
        "search",
        "find",
        "list",
        "lookup",
        "look",
        "fetch",
        "read",
        "query",
        "check",
        "retrieve",
        "calculate",
        "compute",
        "convert",
        "describe",
        "show",
        "view",
        "count",
        "validate",
        "verify",
        "estimate",
        "summarize",
        "summarise",
        "translate",
        "parse",
        "load",
        "browse",
        "ask",
        "answer",
        "analyze",
        "analyse",
        "explain",
        "compare",
        "recommend",
        "suggest",
        "predict",
        "classify",
        "detect",
        "extract",
        "resolve",
        "inspect",
        "scan",
    }
)
#: words that claim an action went through, whatever the action's verb
SUCCESS_WORDS = re.compile(
    r"(?i)\b(successfully|succeeded|confirmed|all set|done|went through|processed|"
    r"(?:has|have) been|is now|are now|completed|i've|i have|here(?:'s| is) your)\b"
)
_IRREGULAR = {
    "send": "sent",
    "pay": "paid",
    "set": "set",
    "put": "put",
    "make": "made",
    "buy": "bought",
    "write": "written|wrote",
    "run": "ran",
    "begin": "begun|began",
    "give": "given|gave",
    "transfer": "transferred",
    "cancel": "cancel+ed",
    "submit": "submitted",
    "ship": "shipped",
    "schedule": "scheduled",
    "refund": "refunded",
    "book": "booked",
    "reserve": "reserved",
    "order": "ordered",
    "create": "created",
    "add": "added",
    "update": "updated",
    "delete": "deleted",
    "remove": "removed",
    "upload": "uploaded",
    "post": "posted",
    "place": "placed",
    "sell": "sold",
    "swap": "swapped",
    "plan": "planned",
    "drop": "dropped",
    "stop": "stopped",
    "email": "emailed",
}
_POSITIVE = frozenset({"confirmed", "refunded", "shipped", "delivered", "active", "available", "on_time"})
#: what follows a name when a clause says what it is ("Atlantis is mild", "Atlantis: 25C",
#: "Atlantis's forecast")
_PREDICATE = re.compile(
    r"(?i)^(?:['’]s\b|\s+(?:is|are|was|were|will be|has|have|had|looks|seems|remains|stays|"
    r"reads|shows|stands at|came to|comes to|costs?|offers|features)\b|\s*[:=]\s*\S)"
)
VALUE, OUTCOME, PREDICATE, UNLINKED = 0.9, 0.9, 0.8, 0.8


@dataclass(frozen=True, slots=True)
class Claim:
    """An answer's claim for a failed call: what it said, how it says it, where (the facts it used)."""

    call: int
    attempts: tuple[int, ...]
    said: str
    how: str
    confidence: float
    positions: tuple[int, ...] = ()


def verb_claim(tool: str) -> re.Pattern[str] | None:
    """How an answer claims a tool's action: its verb in the past tense; None for a tool whose verb reads."""
    words = [w for w in re.split(r"[_\-.\s/:]+|(?<=[a-z])(?=[A-Z])", bare_name(tool)) if w]
    if not words:
        return None
    verb = words[0].lower()
    if verb in READ_VERBS or len(verb) < 3:
        return None
    past = _IRREGULAR.get(verb)
    if past is None:
        if verb.endswith("e"):
            past = verb + "d"
        elif verb.endswith("y") and verb[-2:-1] not in "aeiou":
            past = verb[:-1] + "ied"
        else:
            past = verb + "ed"
    return re.compile(rf"(?i)\b({past})\b")


def claim_pattern(rule: ToolRule | None, tool: str) -> Any:
    if rule is not None and rule.claims is not None:
        return rule.claims
    return verb_claim(tool)


def claims(view: RunView) -> list[Claim]:
    """The answer's false claims, one per open failure (read once per run: ``contradicts_result`` leaves the
    facts they use alone)."""
    found: list[Claim] = view.once("false_success", _claims)
    return found


@dataclass(frozen=True, slots=True)
class _Open:
    call: int
    attempts: tuple[int, ...]
    failed_only: tuple[str, ...]
    own: tuple[str, ...]
    topics: frozenset[str]
    never_succeeded: bool


def _open_failures(view: RunView) -> list[_Open]:
    calls, fails, anchors = view.calls, view.fails, view.call_anchors
    tools = [bare_name(call.name) for call in calls]
    succeeded = {a for k in range(len(calls)) if not fails[k] for a in anchors[k]}
    out: list[_Open] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for j in range(len(calls) - 1, -1, -1):  # the last attempt stands for the earlier ones
        if not fails[j]:
            continue
        tool = tools[j]
        own = tuple(anchors[j])
        failed_only = tuple(a for a in own if a not in succeeded)
        key = (tool, failed_only or own)
        if key in seen:
            continue
        seen.add(key)
        later = [k for k in range(j + 1, len(calls)) if not fails[k] and tools[k] == tool]
        if later and not failed_only:
            continue  # a later call of the tool, about the same things, succeeded
        attempts = tuple(
            k
            for k in range(j + 1)
            if tools[k] == tool and fails[k] and (not own or set(anchors[k]) & set(own) or not anchors[k])
        )
        never = not any(not fails[k] and tools[k] == tool for k in range(len(calls)))
        out.append(_Open(j, attempts or (j,), failed_only, own, tool_topics(tool), never))
    out.reverse()
    return out


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text))


def _disclosed(view: RunView, failure: _Open, single: bool) -> bool:
    lower = view.answer_reading.lower
    parts = view.answer_clauses
    own = set(failure.own)
    for clause in parts:
        if not clause.discloses:
            continue
        names = mentioned_in(view, clause.start, clause.end)
        if names & own or failure.topics & _words(lower[clause.start : clause.end]):
            return True
        if names:
            continue  # about other things
        sentence = [c for c in parts if c.sentence == clause.sentence]
        start, end = sentence[0].start, sentence[-1].end
        around = mentioned_in(view, start, end)
        if around & own or failure.topics & _words(lower[start:end]) or not around or single:
            return True
    if not parts and view.answer_reading.text:
        from agentotel_eval.detectors.statements.clauses import discloses_failure

        return discloses_failure(view.answer_reading.text)
    return False


def _claims(view: RunView) -> list[Claim]:
    if not (view.answer or "").strip() or not any(view.fails):
        return []
    failures = _open_failures(view)
    single = len(failures) == 1
    out: list[Claim] = []
    for failure in failures:
        if _disclosed(view, failure, single):
            continue
        claim = (
            _value(view, failure)
            or _outcome(view, failure)
            or _predicate(view, failure)
            or _unlinked(view, failure)
        )
        if claim is None:
            continue
        tool = bare_name(view.calls[claim.call].name)
        same = next(
            (
                k
                for k, c in enumerate(out)
                if c.said == claim.said and c.how == claim.how and bare_name(view.calls[c.call].name) == tool
            ),
            None,
        )
        if same is None:
            out.append(claim)
        else:  # one claim ("Booked.") for several failed attempts of the tool: one finding naming them all
            earlier = out[same]
            out[same] = Claim(
                max(earlier.call, claim.call),
                tuple(sorted({*earlier.attempts, *claim.attempts})),
                claim.said,
                claim.how,
                max(earlier.confidence, claim.confidence),
                earlier.positions + claim.positions,
            )
    return out


def _own_values(view: RunView, j: int) -> list[Any]:
    return [r.fact for r in view.argument_facts(j)]


def _value(view: RunView, failure: _Open) -> Claim | None:
    if not failure.failed_only:
        return None
    from agentotel_eval.detectors.statements.compare import same

    own = _own_values(view, failure.call)
    for fact in view.answer_reading.facts:
        if fact.kind == DATE and fact.dim == "relative":
            continue
        context = context_of(view, fact)
        if context.clause.discloses or not context.names or context.names[0] not in failure.failed_only:
            continue
        if any(same(fact, mine) for mine in own):
            continue  # the request restated ("for 3 nights"), not a result
        return Claim(
            failure.call,
            failure.attempts,
            fact.text,
            f"a value about {context.names[0]!r}",
            VALUE,
            (fact.start,),
        )
    return None


def _outcome(view: RunView, failure: _Open) -> Claim | None:
    tool = view.calls[failure.call].name
    rule = view.rules.get(tool)
    pattern = claim_pattern(rule, tool)
    if pattern is None:
        return None
    lower = view.answer_reading.lower
    text = view.answer_reading.text
    facts = view.answer_reading.facts
    for clause in view.answer_clauses or ():
        if clause.discloses:
            continue
        piece = text[clause.start : clause.end]
        names = mentioned_in(view, clause.start, clause.end)
        linked = bool(names & set(failure.failed_only)) or bool(
            failure.topics & _words(lower[clause.start : clause.end])
        )
        if not linked and (names or not failure.never_succeeded):
            continue
        match = pattern.search(piece)
        said = match.group(0) if match is not None else None
        if said is None and rule is None:
            lexicon = SUCCESS_WORDS.search(piece)
            status = next(
                (
                    f
                    for f in facts
                    if f.kind == STATUS and clause.start <= f.start < clause.end and f.value in _POSITIVE
                ),
                None,
            )
            said = lexicon.group(0) if lexicon is not None else status.text if status is not None else None
        if said is not None:
            return Claim(
                failure.call, failure.attempts, said, "the action's success", OUTCOME if linked else 0.8
            )
    return None


def _predicate(view: RunView, failure: _Open) -> Claim | None:
    text = view.answer_reading.text
    lower = view.answer_reading.lower
    parts = view.answer_clauses
    for name in failure.failed_only:
        for start in mentions(lower, name):
            end = start + len(name)
            clause = next((c for c in parts if c.start <= start < c.end), None)
            if clause is None or clause.discloses:
                continue
            rest = text[end : clause.end]
            if _PREDICATE.match(rest) and len(rest.strip(" :=.'’s")) >= 3:
                return Claim(
                    failure.call,
                    failure.attempts,
                    text[start : clause.end].strip(),
                    f"what {name!r} is",
                    PREDICATE,
                )
    return None


def _unlinked(view: RunView, failure: _Open) -> Claim | None:
    if not failure.never_succeeded:
        return None
    for fact in view.answer_reading.facts:
        if (
            fact.kind not in (NUMBER, DATE, TIME, CODE)
            or (fact.kind == NUMBER and not fact.dim)
            or fact.dim == "relative"
        ):
            continue
        context = context_of(view, fact)
        if context.clause.discloses or context.names or on_record(view, fact):
            continue
        return Claim(
            failure.call, failure.attempts, fact.text, "a value no call returned", UNLINKED, (fact.start,)
        )
    return None


def find(view: RunView) -> list[Finding]:
    out = []
    for claim in claims(view):
        call = view.calls[claim.call]
        error = error_text(call)
        out.append(
            finding(
                ERROR_HANDLING,
                "false_success",
                "error_handling.false_success",
                call.name,
                claim.attempts,
                f"the final answer states {claim.said!r} ({claim.how}), but the last call "
                f"of {call.name!r} (#{claim.call + 1}) failed: {error[:120]}",
                {"claim": claim.said, "how": claim.how, "last_call": claim.call, "error": error[:200]},
                confidence=claim.confidence,
            )
        )
    return out


RULE = Rule(
    "error_handling.false_success",
    ERROR_HANDLING,
    ("false_success",),
    "the final answer states a result or an outcome for something whose every call failed, and does not "
    "say it failed",
    find,
    needs=("answer",),
    confidence=VALUE,
)
