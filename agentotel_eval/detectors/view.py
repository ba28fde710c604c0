"""What the rules read of one run: its calls, the tools offered, the ``[[tools]]`` declarations, the final
answer, the user's input, the system prompt and the assistant's text between calls when the trace recorded
them, and what trace reconstruction found. Each derived reading (which calls failed, the answer's facts and
clauses, the names the calls were about, the facts each result holds) is computed on first use and
shared by every rule.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from agentotel_eval.detectors.declarations import ToolRule, rules_by_tool
from agentotel_eval.detectors.failure import failed
from agentotel_eval.detectors.statements import lexicon as lx
from agentotel_eval.detectors.statements.clauses import Clause, clauses
from agentotel_eval.detectors.statements.scan import NUMBER, Fact, Reading, read
from agentotel_eval.detectors.statements.values import Recorded, read_value
from agentotel_eval.detectors.tokens import value_text
from agentotel_eval.test_case import ToolCall, ToolDefinition

#: strings of arguments that can name what a call is about: short, not a sentence, not a flag
_MAX_ANCHOR = 60
_NAME_IN_TEXT = re.compile(
    r"(?<![\w'’])[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)*|(?<![\w-])[A-Z0-9]+(?:-[A-Z0-9]+)+(?![\w-])"
)
_FLAGS = frozenset({"true", "false", "none", "null", "yes", "no", "asc", "desc", "json", "text", "en", "us"})
_TOOL_WORD = re.compile(r"[A-Za-z][a-z]*|[A-Z]+(?![a-z])")
_JSON = json.JSONEncoder(default=str)  # json.dumps(value, default=str) without a new encoder per call


def normalized(text: str) -> str:
    """Lower case, one space between words, no punctuation around: how names are compared."""
    return " ".join(text.lower().split()).strip(" .,;:!?\"'()[]{}")


def anchors_of(value: Any) -> list[str]:
    """The names a call's argument value can be about: a short string whole ("Paris", "HTL-ROME-3"), the first
    part of "Paris, France", and the capitalised names and codes inside a longer text."""
    out: list[str] = []
    for text in _strings(value):
        out += _text_anchors(text)
    return [a for a in dict.fromkeys(out) if len(a) >= 2]


@lru_cache(maxsize=4096)
def _text_anchors(text: str) -> tuple[str, ...]:
    """One string's names (``anchors_of``), read once however many arguments hold it."""
    text = text.strip()
    if not text or text.lower() in _FLAGS:
        return ()
    words = text.split()
    if len(text) <= _MAX_ANCHOR and len(words) <= 4 and not _numberish(text):
        whole = normalized(text)
        return (whole, normalized(text.split(",")[0])) if "," in text else (whole,)
    return tuple(normalized(m.group(0)) for m in _NAME_IN_TEXT.finditer(text) if len(m.group(0)) >= 3)


#: what any text ``float`` reads holds: a digit, or "inf" or "nan"
_MAYBE_NUMBER = re.compile(r"\d|inf|nan", re.IGNORECASE)


def _numberish(text: str) -> bool:
    if _MAYBE_NUMBER.search(text) is None:
        return False  # a name: no exception to raise and catch
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def _strings(value: Any, depth: int = 0) -> list[str]:
    if depth > 4:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict | Mapping):  # a dict (frozen or not) is told before the ABC check
        return [s for v in value.values() for s in _strings(v, depth + 1)]
    if isinstance(value, list | tuple):
        return [s for v in value[:20] for s in _strings(v, depth + 1)]
    return []


def tool_topics(name: str) -> frozenset[str]:
    """The words of a tool's name that say what it is about ("get_weather" -> {"weather"})."""
    words = {w.lower() for w in _TOOL_WORD.findall(name)}
    return frozenset(w for w in words if len(w) >= 3 and w not in lx.TOOL_NAME_NOISE)


def mentions(lower: str, key: str) -> list[int]:
    """Where ``key`` stands in ``lower`` as whole words."""
    found = []
    start = lower.find(key)
    while start >= 0:
        end = start + len(key)
        before = lower[start - 1] if start else " "
        after = lower[end] if end < len(lower) else " "
        if not (before.isalnum() or before in "_-") and not (after.isalnum() or after in "_"):
            found.append(start)
        start = lower.find(key, start + 1)
    return found


@dataclass(frozen=True, slots=True)
class Mention:
    key: str
    start: int
    end: int


@dataclass
class RunView:
    """One run as the rules read it (see the module docstring). ``system_prompt`` is None when the trace did
    not record one, "" when it recorded that there was none."""

    calls: Sequence[ToolCall]
    tools: list[ToolDefinition] | None = None
    declarations: Sequence[ToolRule] = ()
    answer: str | None = None
    user_input: str | None = None
    system_prompt: str | None = None
    assistant_texts: tuple[str, ...] = ()
    reconstruction: Mapping[str, Any] | None = None
    service: str | None = None
    agent: str | None = None
    started: dt.datetime | None = None  # when the run started, for "tomorrow" in its input
    _results: dict[int, tuple[Recorded, ...]] = field(default_factory=dict, repr=False)
    _arguments: dict[int, tuple[Recorded, ...]] = field(default_factory=dict, repr=False)
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)
    failures: list[str] = field(default_factory=list, repr=False)  # rules that raised on this run, and why

    def once(self, key: str, compute: Callable[[RunView], Any]) -> Any:
        """``compute(self)``, computed once per run: a reading two rules share (the answer's false claims)."""
        if key not in self._memo:
            self._memo[key] = compute(self)
        return self._memo[key]

    # -- calls -----------------------------------------------------------------------------------------------
    @cached_property
    def fails(self) -> list[bool]:
        return [failed(call) for call in self.calls]

    @cached_property
    def rules(self) -> dict[str, ToolRule]:
        """The declarations that hold for this run, by every name a call used for the declared tool."""
        if not self.declarations:
            return {}
        return rules_by_tool(self.declarations, self.service, self.agent, [c.name for c in self.calls])

    def result_facts(self, j: int) -> tuple[Recorded, ...]:
        """The facts call ``j``'s result holds (nothing for a failed call: what it returned is its error)."""
        found = self._results.get(j)
        if found is None:
            call = self.calls[j]
            found = self._results[j] = (
                read_value(call.output, self.output_texts[j])
                if call.output is not None and not self.fails[j]
                else ()
            )
        return found

    def error_facts(self, j: int) -> tuple[Recorded, ...]:
        """The facts a failed call's error or result states (an error may name the value to use)."""
        key = -1 - j
        found = self._results.get(key)
        if found is None:
            call = self.calls[j]
            found = self._results[key] = (
                read_value(call.output if call.output is not None else call.error) if self.fails[j] else ()
            )
        return found

    def argument_facts(self, j: int) -> tuple[Recorded, ...]:
        found = self._arguments.get(j)
        if found is None:
            args = (
                self.calls[j].input_parameters
                if self.calls[j].input_parameters is not None
                else self.calls[j].raw_arguments
            )
            found = self._arguments[j] = read_value(args, self.argument_texts[j]) if args is not None else ()
        return found

    @cached_property
    def call_anchors(self) -> list[list[str]]:
        """The names each call's arguments are about (``anchors_of``)."""
        return [
            anchors_of(c.input_parameters if c.input_parameters is not None else c.raw_arguments)
            for c in self.calls
        ]

    @cached_property
    def anchor_calls(self) -> dict[str, set[int]]:
        """Each name -> the calls whose arguments are about it."""
        out: dict[str, set[int]] = {}
        for j, names in enumerate(self.call_anchors):
            for name in names:
                out.setdefault(name, set()).add(j)
        return out

    @cached_property
    def output_texts(self) -> list[str]:
        """Each call's result as text (JSON for values; "" when not recorded), for whole-token search."""
        return [value_text(call.output) for call in self.calls]

    @cached_property
    def argument_texts(self) -> list[str]:
        """Each call's arguments as text (JSON for values; "" when not recorded)."""
        return [
            value_text(c.input_parameters if c.input_parameters is not None else c.raw_arguments)
            for c in self.calls
        ]

    @cached_property
    def call_texts(self) -> list[str]:
        """Each call's arguments, result and error as one text (JSON for values), for whole-token search."""
        out = []
        for call, args, output in zip(self.calls, self.argument_texts, self.output_texts, strict=True):
            recorded = call.input_parameters is not None or call.raw_arguments is not None
            parts = [
                args if recorded else None,
                output if call.output is not None else None,
                value_text(call.error) if call.error is not None else None,
            ]
            out.append("\n".join(p for p in parts if p is not None))
        return out

    # -- the answer ------------------------------------------------------------------------------------------
    @cached_property
    def answer_reading(self) -> Reading:
        return read(self.answer)

    @cached_property
    def answer_clauses(self) -> tuple[Clause, ...]:
        return clauses(self.answer_reading.text) if self.answer_reading.text else ()

    @cached_property
    def result_names(self) -> set[str]:
        """The names the successful results hold beside their facts (a hotel's name beside its price)."""
        return {
            name
            for j in range(len(self.calls))
            if not self.fails[j]
            for r in self.result_facts(j)
            for name in r.beside
            if len(name) <= _MAX_ANCHOR
        }

    @cached_property
    def name_words(self) -> frozenset[str]:
        """The words of the names the calls and results are about ("new", "york"): they say whom, not what."""
        return frozenset(w for key in (*self.anchor_calls, *self.result_names) for w in key.split())

    @cached_property
    def answer_mentions(self) -> list[Mention]:
        """Where the answer names what the calls were about (each name the calls used, and names their results
        hold beside a fact), in order; a longer name wins where two overlap ("new york" over "york")."""
        lower = self.answer_reading.lower
        if not lower:
            return []
        found: list[Mention] = []
        for key in sorted(set(self.anchor_calls) | self.result_names, key=len, reverse=True):
            for start in mentions(lower, key):
                end = start + len(key)
                if not any(m.start < end and start < m.end for m in found):
                    found.append(Mention(key, start, end))
        found.sort(key=lambda m: m.start)
        return found

    @cached_property
    def input_facts(self) -> tuple[Fact, ...]:
        """The facts the user's input and the system prompt state."""
        return read(self.user_input).facts + read(self.system_prompt).facts

    @cached_property
    def record_numbers(self) -> list[float]:
        """Every number on record: the successful results', the arguments', the input's (at most 200)."""
        numbers: list[float] = []
        for j in range(len(self.calls)):
            numbers += [r.fact.value for r in self.result_facts(j) if r.fact.kind == NUMBER]
            numbers += [r.fact.value for r in self.argument_facts(j) if r.fact.kind == NUMBER]
            if len(numbers) > 200:
                break
        numbers += [f.value for f in self.input_facts if f.kind == NUMBER]
        return list(dict.fromkeys(numbers))[:200]

    # -- what was known before a call ------------------------------------------------------------------------
    @cached_property
    def definitions_text(self) -> str:
        """The tools' descriptions and schemas as text: a value an argument takes from them is grounded."""
        if not self.tools:
            return ""
        return "\n".join(
            f"{t.name} {t.description or ''} {_JSON.encode(t.parameters) if t.parameters else ''}"
            for t in self.tools
        )

    @cached_property
    def context_text(self) -> str:
        """What the model was told before any call: the user's input, the system prompt, the tools."""
        return "\n".join(filter(None, (self.user_input, self.system_prompt, self.definitions_text)))
