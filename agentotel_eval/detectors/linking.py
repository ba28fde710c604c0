"""What a fact the answer states is about: the clause it stands in, and the names of that clause (or, when the
clause names none, of its sentence) that the run's calls were about, nearest first.

"Paris is 18C and Rome 25C": 18C is about Paris, 25C about Rome (the nearer name). "In Rome, it is 25C": the
clause "it is 25C" names nothing, so its sentence's name is used.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentotel_eval.detectors.statements.clauses import Clause, clause_at
from agentotel_eval.detectors.statements.compare import same
from agentotel_eval.detectors.statements.scan import Fact
from agentotel_eval.detectors.view import Mention, RunView


@dataclass(frozen=True, slots=True)
class Context:
    """Where an answer's fact stands: its clause, the names near it (nearest first), and the clause's text."""

    clause: Clause
    names: tuple[str, ...]
    text: str  # the clause, lower-cased
    sentence_text: str


def context_of(view: RunView, fact: Fact) -> Context:
    """Read once per run and place in the answer: the answer rules ask about the same facts."""
    contexts: dict[tuple[int, int], Context] = view.once("contexts", _no_contexts)
    found = contexts.get((fact.start, fact.end))
    if found is None:
        found = contexts[(fact.start, fact.end)] = _context(view, fact)
    return found


def _no_contexts(view: RunView) -> dict[tuple[int, int], Context]:
    return {}


def _context(view: RunView, fact: Fact) -> Context:
    parts = view.answer_clauses
    lower = view.answer_reading.lower
    if not parts:
        whole = Clause(0, len(lower), 0, False)
        return Context(whole, _nearest(view.answer_mentions, fact, 0, len(lower)), lower, lower)
    index = clause_at(parts, fact.start)
    clause = parts[index]
    names = _nearest(view.answer_mentions, fact, clause.start, clause.end)
    sentence = [c for c in parts if c.sentence == clause.sentence]
    start, end = sentence[0].start, sentence[-1].end
    if not names:
        names = _nearest(view.answer_mentions, fact, start, end)
    return Context(clause, names, lower[clause.start : clause.end], lower[start:end])


def _nearest(found: list[Mention], fact: Fact, start: int, end: int) -> tuple[str, ...]:
    inside = [m for m in found if m.start >= start and m.end <= end]
    if not inside:
        return ()

    def distance(m: Mention) -> int:
        # a name just before the fact ("Paris: 18C") is as near as one just after it ("18C in Paris")
        return fact.start - m.end if m.end <= fact.start else max(0, m.start - fact.end)

    ordered = sorted(inside, key=distance)
    return tuple(dict.fromkeys(m.key for m in ordered))


def mentioned_in(view: RunView, start: int, end: int) -> set[str]:
    """The names the calls were about that stand between ``start`` and ``end`` of the answer."""
    return {m.key for m in view.answer_mentions if m.start >= start and m.end <= end}


def on_record(view: RunView, fact: Fact) -> bool:
    """Whether some successful result, some call's arguments, the input or the system
    prompt hold the value."""
    for j in range(len(view.calls)):
        if any(same(fact, r.fact) for r in view.result_facts(j)) or any(
            same(fact, r.fact) for r in view.argument_facts(j)
        ):
            return True
    return any(same(fact, f) for f in view.input_facts)
