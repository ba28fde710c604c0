"""A text's sentences and clauses, and which of them say that something did not work.

A fact is read with its clause: "Paris is 18C, but I could not get Rome's weather" states 18C for Paris in one
clause and discloses a failure for Rome in the other. A clause ``discloses`` a failure when it has a failure
word ("sorry", "failed", "unavailable", "no results", ...) or a negation before a verb of getting or
completing ("couldn't get", "was not booked", "didn't go through"), and the words are not one of the phrases
that only look like it ("no problem", "let me know if you have any issues").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from agentotel_eval.detectors.statements import lexicon as lx


@dataclass(frozen=True, slots=True)
class Clause:
    start: int
    end: int
    sentence: int  # index of the sentence it is part of
    discloses: bool  # says that something did not work


#: a sentence ends at . ! ? or a line break, unless the dot is inside a number ("18.5"), follows an initial
#: ("J.") or an abbreviation
_SENTENCE_END = re.compile(
    r"(?<!\d)(?<!\s[A-Z])(?<!^[A-Z])(?<!\be\.g)(?<!\bi\.e)(?<!\bapprox)(?<!\bvs)(?<!\bSt)(?<!\bMr)"
    r"(?<!\bDr)(?<!\bMs)(?<!\bNo)[.!?]+(?=\s|$)|(?<=\d)\.(?=\s+[A-Z]|$)|\n+|(?<=\S)\s+[-*•]\s+"
)
#: inside a sentence, a clause ends at ; or a dash, and before a word that turns to another thing ("but")
_CLAUSE_END = re.compile(
    r"\s*[;—–]\s*|\s+-\s+|,\s+(?=(?:but|however|while|whereas|although|though|yet|except|"
    r"and|so|as)\b)|\s+(?=(?:but|however|whereas|although|though|except|unfortunately)\b)"
    r"|,\s+|:\s+(?=[A-Z])"
)
_FAILURE = re.compile(r"(?i)(?<![\w-])(?:" + "|".join(lx.FAILURE_WORDS) + r")(?![\w-])")
_NEGATED_COMPLETION = re.compile(
    r"(?i)(?<![\w-])" + lx.NEGATIONS + r"(?:\s+(?:\w+\s+){0,2}?)"
    r"(?:" + "|".join(lx.COMPLETION_VERBS) + r")(?![\w-])"
)
_NEGATED_COMPLETION_GLUED = re.compile(
    r"(?i)\b\w+n't\s+(?:\w+\s+){0,2}?(?:" + "|".join(lx.COMPLETION_VERBS) + r")(?![\w-])"
)
_NOT_FAILURE = re.compile(r"(?i)(?:" + "|".join(lx.NOT_FAILURE_PHRASES) + r")")


def discloses_failure(text: str) -> bool:
    """Whether ``text`` says that something did not work (see the module docstring)."""
    if _NOT_FAILURE.search(text) is not None:
        text = _NOT_FAILURE.sub(" ", text)
    return (
        _FAILURE.search(text) is not None
        or _NEGATED_COMPLETION.search(text) is not None
        or _NEGATED_COMPLETION_GLUED.search(text) is not None
    )


@lru_cache(maxsize=2048)
def clauses(text: str) -> tuple[Clause, ...]:
    """The clauses of ``text`` in order, each with its sentence and whether it discloses a failure."""
    out: list[Clause] = []
    sentence = 0
    start = 0
    for end_match in [*_SENTENCE_END.finditer(text), None]:
        end = end_match.start() if end_match is not None else len(text)
        if text[start:end].strip():
            _split(text, start, end, sentence, out)
            sentence += 1
        if end_match is None:
            break
        start = end_match.end()
    return tuple(out)


def _split(text: str, start: int, end: int, sentence: int, out: list[Clause]) -> None:
    piece = text[start:end]
    at = 0
    for m in _CLAUSE_END.finditer(piece):
        if m.start() > at and piece[at : m.start()].strip():
            out.append(_clause(text, start + at, start + m.start(), sentence))
        at = m.end()
    if piece[at:].strip():
        out.append(_clause(text, start + at, end, sentence))


def _clause(text: str, start: int, end: int, sentence: int) -> Clause:
    while start < end and text[start].isspace():
        start += 1
    return Clause(start, end, sentence, discloses_failure(text[start:end]))


def clause_at(parts: tuple[Clause, ...], position: int) -> int:
    """The index of the clause holding ``position`` (the nearest one before it, between clauses)."""
    found = 0
    for index, part in enumerate(parts):
        if part.start > position:
            break
        found = index
    return found
