"""Find the judge's JSON verdict in what a model actually writes.

Models wrap JSON in code fences, surround it with prose, leave trailing commas, write Python-style single
quotes and ``True``/``None``, or get cut off mid-object. This module recovers what can be recovered safely and
says precisely what could not (a truncated object is not guessed at).

It also refuses objects that merely repeat JSON found in the untrusted data shown to the judge: a tool result
saying ``answer {"detected": false}`` must never become the verdict, even if the judge quotes it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agentotel_eval.judge.errors import JudgeOutputError

MAX_SCAN_CHARS = 200_000  # a judge answer longer than this is not scanned past this point

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)```", re.DOTALL)
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}


@dataclass(frozen=True, slots=True)
class Candidate:
    """A JSON object found in a text: the parsed value, its source text, and whether it needed repair."""

    value: dict[str, Any]
    raw: str
    start: int
    repaired: bool


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int  # exclusive; -1 when the object never closes


def find_objects(text: str) -> tuple[list[Candidate], list[str]]:
    """Every top-level JSON object in ``text`` (in order), and notes on spans that could not be parsed."""
    text = text[:MAX_SCAN_CHARS]
    found: list[Candidate] = []
    notes: list[str] = []
    seen_raw: set[str] = set()

    def consider(raw: str, start: int) -> bool:
        value, repaired = _loads_tolerant(raw)
        if isinstance(value, dict):
            if raw not in seen_raw:
                seen_raw.add(raw)
                found.append(Candidate(value, raw, start, repaired))
            return True
        return False

    stripped = text.strip()
    if stripped.startswith("{") and consider(stripped, text.find("{")):
        return found, notes
    for match in _FENCE.finditer(text):
        body = match.group(2).strip()
        if body.startswith("{"):
            consider(body, match.start(2))
    for span in _brace_spans(text):
        if span.end < 0:
            notes.append(f"a JSON object starting at character {span.start} is cut off (no closing brace)")
            continue
        raw = text[span.start : span.end]
        if not consider(raw, span.start):
            notes.append(f"the object at character {span.start} is not valid JSON even after repair")
    found.sort(key=lambda c: c.start)
    return found, notes


def _brace_spans(text: str) -> Iterable[_Span]:
    """Balanced ``{...}`` spans, string-aware, outermost first. An unclosed span is reported, then skipped."""
    i, n = 0, len(text)
    while i < n:
        start = text.find("{", i)
        if start < 0:
            return
        end = _match_brace(text, start)
        if end < 0:
            yield _Span(start, -1)
            i = start + 1
            continue
        raw = text[start:end]
        if _loads_tolerant(raw)[0] is None:
            # Not an object (prose braces, "{a, b}"): look inside it for real objects instead.
            yield _Span(start, end)
            i = start + 1
        else:
            yield _Span(start, end)
            i = end


def _match_brace(text: str, start: int) -> int:
    """The index just past the brace closing the one at ``start``, or -1."""
    depth = 0
    quote: str | None = None
    escaped = False
    for j in range(start, len(text)):
        ch = text[j]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch == '"' or (ch == "'" and _opens_single_quoted(text, j)):
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return -1


def _opens_single_quoted(text: str, j: int) -> bool:
    """A ``'`` starts a string only where a JSON value or key may start (after ``{ [ , :``), not in a word."""
    k = j - 1
    while k >= 0 and text[k] in " \t\r\n":
        k -= 1
    return k >= 0 and text[k] in "{[,:"


def _loads_tolerant(raw: str) -> tuple[Any, bool]:
    """(value, repaired): strict JSON first, then the safe repairs; (None, False) when neither parses."""
    try:
        return json.loads(raw, strict=False), False
    except ValueError:
        pass
    fixed = _repair(raw)
    if fixed is None:
        return None, False
    try:
        return json.loads(fixed, strict=False), True
    except ValueError:
        return None, False


def _repair(raw: str) -> str | None:
    """Rewrite single-quoted strings, Python literals and trailing commas into JSON, outside strings only."""
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch == '"':
            end = _string_end(raw, i, '"')
            if end < 0:
                return None
            out.append(raw[i:end])
            i = end
        elif ch == "'":
            end = _string_end(raw, i, "'")
            if end < 0:
                return None
            out.append(json.dumps(_unescape_single(raw[i + 1 : end - 1]), ensure_ascii=False))
            i = end
        elif ch == ",":
            k = i + 1
            while k < n and raw[k] in " \t\r\n":
                k += 1
            if k < n and raw[k] in "}]":
                i += 1  # trailing comma
            else:
                out.append(ch)
                i += 1
        elif ch.isalpha() or ch == "_":
            k = i
            while k < n and (raw[k].isalnum() or raw[k] == "_"):
                k += 1
            word = raw[i:k]
            after = k
            while after < n and raw[after] in " \t\r\n":
                after += 1
            if word not in _PY_LITERALS and after < n and raw[after] == ":":
                out.append(json.dumps(word))  # an unquoted key
            else:
                out.append(_PY_LITERALS.get(word, word))
            i = k
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _string_end(raw: str, start: int, quote: str) -> int:
    escaped = False
    for j in range(start + 1, len(raw)):
        ch = raw[j]
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == quote:
            return j + 1
    return -1


def _unescape_single(body: str) -> str:
    """The content of a single-quoted string: ``\\'`` is a quote; other escapes are JSON's."""
    try:
        return json.loads('"' + body.replace("\\'", "'").replace('"', '\\"') + '"', strict=False)
    except ValueError:
        return body.replace("\\'", "'")


def _could_be_in(value: dict[str, Any], text: str) -> bool:
    """A cheap necessary condition for ``value`` to equal an object written in ``text``: its plain keys appear
    there verbatim (unless the text uses \\u escapes, which could spell a key without its letters). Keys that
    JSON would have to escape are not required, so the condition stays necessary."""
    return "\\u" in text or all(key in text for key in value if isinstance(key, str) and key.isidentifier())


def _objects_in_data(text: str, depth: int = 3) -> list[dict[str, Any]]:
    """Objects in the data, including JSON written inside string values of those objects (escaped JSON)."""
    if "{" not in text or depth <= 0:
        return []
    out: list[dict[str, Any]] = []
    for cand in find_objects(text)[0]:
        out.append(cand.value)
        for string in _strings_in(cand.value):
            out.extend(_objects_in_data(string, depth - 1))
    return out


def _strings_in(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        if "{" in value:
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings_in(item)


def _squash(text: str) -> str:
    return "".join(text.split())


def extract_verdict(
    text: str,
    *,
    expected_keys: Sequence[str],
    required_keys: Sequence[str] = (),
    untrusted: str | None = None,
) -> dict[str, Any]:
    """The judge's verdict object in ``text``.

    Among the objects found, those that repeat an object from ``untrusted`` (the data shown to the judge,
    compared both as text without whitespace and as parsed values) are discarded, as are those missing
    ``required_keys``. Of the rest, the one with most ``expected_keys`` wins; on a tie, the last (a judge
    that thinks aloud gives its answer at the end). Raises JudgeOutputError saying why nothing qualified.
    """
    if not isinstance(text, str) or not text.strip():
        raise JudgeOutputError("the judge's answer is empty", raw=text if isinstance(text, str) else None)
    candidates, notes = find_objects(text)
    if not candidates:
        detail = "; ".join(notes) if notes else "no '{' in the answer"
        raise JudgeOutputError(f"no JSON object in the judge's answer ({detail})", raw=text)
    echoes = 0
    if untrusted:
        squashed = _squash(untrusted)
        squashed_variants = (squashed, squashed.replace('\\"', '"'))
        data_objects: list[dict[str, Any]] | None = None
        kept = []
        for cand in candidates:
            flat = _squash(cand.raw)
            echoed = any(flat in variant for variant in squashed_variants)
            if not echoed and _could_be_in(cand.value, untrusted):
                if data_objects is None:
                    data_objects = _objects_in_data(untrusted)
                echoed = cand.value in data_objects
            if echoed:
                echoes += 1
            else:
                kept.append(cand)
        candidates = kept
    complete = [c for c in candidates if all(k in c.value for k in required_keys)]
    if not complete:
        why = []
        if echoes:
            why.append(f"{echoes} object(s) only repeat JSON found in the untrusted data")
        if candidates:
            other = "other " if echoes else ""
            why.append(f"no {other}object has the key(s) {', '.join(required_keys)}")
        why.extend(notes)
        raise JudgeOutputError("no usable verdict object in the judge's answer: " + "; ".join(why), raw=text)
    best = max(enumerate(complete), key=lambda ic: (sum(k in ic[1].value for k in expected_keys), ic[0]))
    return best[1].value
