"""The robustness suite: real recorded runs (a directory of OTLP traces, such as the repository's fixtures)
changed the ways users meet tool-use errors, worded the ways models word answers.

Each run whose calls record their arguments and results is rebuilt (trace reconstruction) and becomes the base
of cases, one per operator that applies to it, each with a seeded choice of the call, the
phrasing and the format:

| operator | type it holds | what changes |
|---|---|---|
| ``none`` | none | nothing: the recorded run |
| ``fail_claim`` | error_handling | a call fails; the answer states a value or claims the action it was for |
| ``fail_honest`` | none | a call fails; the answer says so (34 phrasings) |
| ``fail_omit`` | none | a call fails; the answer speaks of the other calls only |
| ``change_value`` | result_ignored | the answer states another value than the result (of a kind below) |
| ``restate_value`` | none | the answer states the result's value in another format (below) |
| ``unground`` | sequence_error | an argument the input gave is replaced by one found nowhere |
| ``reground`` | none | the same replacement, and the input gives the new value (in another format) |
| ``repeat_equivalent`` | repeated_failure | a failing call is retried with the argument written differently |
| ``retry_changed`` | none | a failing call is retried with what made it fail taken out, and succeeds |
| ``unknown_tool`` | invalid_function | a call names a tool that was not offered |
| ``prompt_tool`` | none | the same, and the system prompt offers that tool as a team member |
| ``drop_required`` | parameter_error | a required argument is left out |

The values changed are numbers, temperatures, money, dates and codes; the other formats are another unit,
currency, words or date format.

Statements are drawn from ``phrasings`` (at least 30 per family), answers of one or several sentences. The
labels hold by construction: the generator reads results with patterns of its own, never
the detectors' reader.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agentotel_eval.calibration import phrasings as say
from agentotel_eval.calibration import phrasings_heldout
from agentotel_eval.calibration.cases import CaseCall, LabelledCase
from agentotel_eval.detectors.failure import partial

SUITE = "robustness"
#: the phrasing families: the suite's own, and one written without sight of the detectors (held out)
FAMILIES = {"own": say, "heldout": phrasings_heldout}
OPERATORS: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "fail_claim": frozenset({"error_handling"}),
    "fail_honest": frozenset(),
    "fail_omit": frozenset(),
    "change_value": frozenset({"result_ignored"}),
    "restate_value": frozenset(),
    "unground": frozenset({"sequence_error"}),
    "reground": frozenset(),
    "repeat_equivalent": frozenset({"repeated_failure"}),
    "retry_changed": frozenset(),
    "unknown_tool": frozenset({"invalid_function"}),
    "prompt_tool": frozenset(),
    "drop_required": frozenset({"parameter_error"}),
}
#: names the suite gives made-up things: none is in any recorded run
NEW_NAMES = (
    "Valparaiso",
    "Trondheim",
    "Ljubljana",
    "Cartagena",
    "Bratislava",
    "Kaunas",
    "Ushuaia",
    "Zanzibar",
    "Tbilisi",
    "Mendoza",
    "Hobart",
    "Windhoek",
)
_VALUE = re.compile(
    r"(?P<date>\b\d{4}-\d{2}-\d{2}\b)|(?P<money>\b\d+(?:\.\d+)?) (?P<ccy>EUR|USD|GBP|JPY)\b|"
    r"(?P<temp>-?\b\d+)C\b|(?P<code>\b[A-Z]{2,}-[A-Z]+-\d+\b|\b[A-Z]{2}\d{2,4}\b)"
)
_TOOL_WORDS = re.compile(r"[a-z]+")
_VERBS = {
    "get",
    "search",
    "find",
    "fetch",
    "lookup",
    "list",
    "convert",
    "ask",
    "book",
    "send",
    "create",
    "check",
}
_PAST = {"book": "booked", "send": "sent", "create": "created", "reserve": "reserved", "order": "ordered"}


@dataclass(frozen=True, slots=True)
class Base:
    """A recorded run, as the suite changes it."""

    name: str
    user_input: str
    system_prompt: str
    tools: tuple[Mapping[str, Any], ...]
    calls: tuple[CaseCall, ...]
    answer: str


@dataclass(frozen=True, slots=True)
class Value:
    """A value a result states, as the generator reads it: its kind, the number (or text) and the unit."""

    kind: str  # date | money | temp | code
    text: str
    number: float = 0.0
    unit: str = ""


def _values(result: Any) -> list[Value]:
    text = result if isinstance(result, str) else _text_of(result)
    out = []
    for m in _VALUE.finditer(text or ""):
        if m.group("date"):
            out.append(Value("date", m.group("date")))
        elif m.group("money"):
            out.append(Value("money", m.group(0), float(m.group("money")), m.group("ccy")))
        elif m.group("temp"):
            out.append(Value("temp", m.group(0), float(m.group("temp")), "C"))
        else:
            out.append(Value("code", m.group("code")))
    return out


def _text_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return " ".join(_text_of(v) for v in value.values())
    if isinstance(value, list | tuple):
        return " ".join(_text_of(v) for v in value)
    return ""


def _entity(call: CaseCall) -> tuple[str, str] | None:
    """The argument a call is about: its first string value that is a name ("Paris")."""
    if not isinstance(call.arguments, Mapping):
        return None
    for key, value in call.arguments.items():
        if (
            isinstance(value, str)
            and value[:1].isupper()
            and 2 < len(value) <= 30
            and len(value.split()) <= 3
            and not any(ch.isdigit() for ch in value)
        ):
            return str(key), value
    return None


def _topic(name: str) -> str:
    words = [w for w in _TOOL_WORDS.findall(name.lower()) if w not in _VERBS]
    return words[-1] if words else "result"


def _action(name: str) -> tuple[str, str] | None:
    words = _TOOL_WORDS.findall(name.lower())
    if not words or words[0] not in _PAST:
        return None
    return _PAST[words[0]], (words[-1] if len(words) > 1 else "request")


# -- bases ---------------------------------------------------------------------------------------------------


def bases_from_traces(directory: Path) -> list[Base]:
    """Every run of the traces in ``directory`` whose calls record their arguments and
    results, with its input."""
    from agentotel_eval.otlp import decode
    from agentotel_eval.reconstruct.pipeline import reconstruct

    out = []
    for path in sorted(directory.glob("*.pb")):
        if path.name.endswith(".logs.pb"):
            continue
        spans = decode("traces", "protobuf", path.read_bytes()).records
        logs_path = path.with_name(path.name.removesuffix(".pb") + ".logs.pb")
        logs = decode("logs", "protobuf", logs_path.read_bytes()).records if logs_path.exists() else []
        for n, run in enumerate(reconstruct(spans, logs)):
            base = _base(f"{path.stem}#{n}", run)
            if base is not None:
                out.append(base)
    return out


def _base(name: str, run: Any) -> Base | None:
    calls = []
    turns: dict[str, int] = {}
    for call in run.tool_calls:
        if (
            not isinstance(call.input_parameters, Mapping)
            or (call.output is None and call.status != "error")
            or partial(call)
        ):
            return None  # a call whose arguments or result the capture did not keep whole
        turn = turns.setdefault(call.llm_turn or f"call{len(turns)}", len(turns))
        calls.append(
            CaseCall(
                call.name,
                _plain(call.input_parameters),
                _plain(call.output),
                call.error if call.status == "error" else None,
                call_id=call.call_id or "",
                turn=turn,
            )
        )
    if (
        not calls
        or not (run.input or "").strip()
        or not (run.output or "").strip()
        or run.input.strip().lower() in ("null", "none", "__redacted__")
    ):
        return None
    tools = tuple(
        {"name": t.name, "description": t.description or "", "parameters": _plain(t.parameters) or {}}
        for t in run.tool_definitions
    )
    return Base(name, run.input, run.system_prompt or "", tools, tuple(calls), run.output)


def _plain(value: Any) -> Any:
    from agentotel_eval.frozen import thaw

    return thaw(value)


# -- the cases -----------------------------------------------------------------------------------------------


def build_robustness_suite(
    directory: Path, *, seed: int = 0, limit: int | None = None, family: str = "own"
) -> list[LabelledCase]:
    """The suite over the traces in ``directory``: every operator on every run it applies to (``limit``: at
    most that many runs), worded with a phrasing ``family`` (``FAMILIES``)."""
    words = FAMILIES[family]
    suite = SUITE if family == "own" else f"{SUITE}-{family}"
    bases = bases_from_traces(directory)
    if limit is not None:
        bases = bases[:limit]
    cases: list[LabelledCase] = []
    for base in bases:
        for operator in OPERATORS:
            rng = _Phrased(f"{suite}/{seed}/{base.name}/{operator}", words)
            made = _OPERATORS[operator](base, rng)
            if made is not None:
                calls, answer, user_input, system_prompt, meta = made
                cases.append(
                    LabelledCase(
                        id=f"{suite}/{base.name}/{operator}",
                        suite=suite,
                        operator=operator,
                        user_input=user_input,
                        tools=base.tools,
                        calls=tuple(calls),
                        answer=answer,
                        labels=OPERATORS[operator],
                        system_prompt=system_prompt,
                        meta={"base": base.name, **meta},
                    )
                )
    return cases


class _Phrased(random.Random):
    """A seeded generator that also knows the phrasing family to draw sentences from."""

    def __init__(self, seed: str, words: Any) -> None:
        super().__init__(seed)
        self.words = words


Made = tuple[list[CaseCall], str, str, str, dict[str, Any]]


def _same(base: Base, calls: list[CaseCall], answer: str, **meta: Any) -> Made:
    return calls, answer, base.user_input, base.system_prompt, meta


def _none(base: Base, rng: random.Random) -> Made | None:
    return _same(base, list(base.calls), base.answer)


def _candidates(base: Base, *, needs_value: bool) -> list[int]:
    """Calls that succeeded, are about a name no other call is about, and (``needs_value``) whose result
    states a value the generator can read."""
    out = []
    for i, call in enumerate(base.calls):
        found = _entity(call)
        if call.error or found is None:
            continue
        others = [c for j, c in enumerate(base.calls) if j != i and found[1] in _text_of(c.arguments)]
        if others:
            continue
        if needs_value and not _values(call.result):
            continue
        out.append(i)
    return out


def _others(base: Base, skip: int, rng: random.Random, *, every: bool = False) -> list[str]:
    """True statements about the other calls' results, as an answer adds them (some of them, or ``every``)."""
    sentences = []
    for j, call in enumerate(base.calls):
        found = _entity(call)
        values = _values(call.result) if not call.error else []
        if j == skip or found is None or not values:
            continue
        sentences.append(f"{found[1]}: {values[0].text}.")
    rng.shuffle(sentences)
    return sentences if every else sentences[: rng.randint(0, 2)]


def _compose(main: str, others: Sequence[str], rng: random.Random) -> str:
    parts = [main, *others]
    if len(parts) > 1 and rng.random() < 0.5:
        parts = [*others, main]
    # a sentence without an end of its own (a markdown bullet) ends its line
    return "".join(p + ("\n" if p.rstrip()[-1:] not in ".!?" else " ") for p in parts).strip()


def _words(rng: random.Random) -> Any:
    return getattr(rng, "words", say)


def _fail(call: CaseCall, entity: str, rng: random.Random) -> CaseCall:
    error = rng.choice(_words(rng).ERRORS).format(entity=entity)
    return CaseCall(
        call.name, call.arguments, None, error, call.call_id, call.executed, call.requested, call.turn
    )


def _failing(base: Base, rng: random.Random, *, needs_value: bool) -> tuple[int, str, list[CaseCall]] | None:
    chosen = _candidates(base, needs_value=needs_value)
    if not chosen:
        return None
    i = rng.choice(chosen)
    entity = _entity(base.calls[i])
    assert entity is not None
    calls = list(base.calls)
    calls[i] = _fail(calls[i], entity[1], rng)
    return i, entity[1], calls


def _fail_claim(base: Base, rng: random.Random) -> Made | None:
    chosen = [
        i
        for i in _candidates(base, needs_value=False)
        if _values(base.calls[i].result) or _action(base.calls[i].name)
    ]
    if not chosen:
        return None
    i = rng.choice(chosen)
    call = base.calls[i]
    entity = _entity(call)
    assert entity is not None
    calls = list(base.calls)
    calls[i] = _fail(call, entity[1], rng)
    action = _action(call.name)
    values = _values(call.result)
    if action is not None and (not values or rng.random() < 0.5):
        past, noun = action
        main = rng.choice(_words(rng).ACTION_CLAIMS).format(entity=entity[1], noun=noun, past=past)
    else:
        value = _format(values[0], rng, changed=rng.random() < 0.5)
        alone = not _others(base, i, random.Random(0), every=True)
        if alone and rng.random() < 0.4:  # the one thing asked about: the answer need not name it
            return _same(
                base, calls, rng.choice(say.ANONYMOUS).format(topic=_topic(call.name), value=value), call=i
            )
        main = rng.choice(_words(rng).STATEMENTS).format(
            entity=entity[1], topic=_topic(call.name), value=value
        )
    return _same(base, calls, _compose(main, _others(base, i, rng), rng), call=i)


def _fail_honest(base: Base, rng: random.Random) -> Made | None:
    failing = _failing(base, rng, needs_value=False)
    if failing is None:
        return None
    i, entity, calls = failing
    error = calls[i].error or "error"
    main = rng.choice(_words(rng).HONEST).format(entity=entity, topic=_topic(calls[i].name), error=error)
    return _same(base, calls, _compose(main, _others(base, i, rng), rng), call=i)


def _fail_omit(base: Base, rng: random.Random) -> Made | None:
    failing = _failing(base, rng, needs_value=False)
    if failing is None:
        return None
    i, _entity_name, calls = failing
    others = _others(base, i, rng, every=True)
    if not others:
        return None
    return _same(base, calls, " ".join(others), call=i)


def _format(value: Value, rng: random.Random, *, changed: bool = False) -> str:
    """The value in one of the ways an answer writes it, changed (another value of its kind) when asked."""
    if value.kind == "date":
        year, month, day = (int(p) for p in value.text.split("-"))
        if changed:
            day = day + rng.choice((2, 3, 5, 9)) if day <= 18 else day - rng.choice((2, 3, 5, 9))
        return say.date(year, month, day, rng)
    if value.kind == "code":
        return _changed_code(value.text, rng) if changed else value.text
    number = value.number
    if changed:
        step = max(1.0, round(abs(number) * rng.choice((0.1, 0.15, 0.3, 0.5))))
        number = number + step if rng.random() < 0.7 or number <= step else number - step
    if value.kind == "money":
        return say.money(number, value.unit, rng)
    return say.temperature(number, rng)


def _changed_code(code: str, rng: random.Random) -> str:
    digits = [k for k, ch in enumerate(code) if ch.isdigit()]
    k = rng.choice(digits) if digits else len(code) - 1
    old = code[k]
    new = rng.choice([d for d in "0123456789" if d != old]) if old.isdigit() else "X" if old != "X" else "Y"
    return code[:k] + new + code[k + 1 :]


def _value_case(base: Base, rng: random.Random, *, changed: bool) -> Made | None:
    chosen = _candidates(base, needs_value=True)
    if not chosen:
        return None
    i = rng.choice(chosen)
    call = base.calls[i]
    entity = _entity(call)
    assert entity is not None
    value = rng.choice(_values(call.result))
    if not changed and value.kind == "code":
        return None  # a code has one way to be written
    written = _format(value, rng, changed=changed)
    if len(base.calls) == 1 and rng.random() < 0.4:  # the one thing asked about: the answer need not name it
        return _same(
            base,
            list(base.calls),
            rng.choice(say.ANONYMOUS).format(topic=_topic(call.name), value=written),
            call=i,
            value=value.text,
        )
    main = rng.choice(_words(rng).STATEMENTS).format(entity=entity[1], topic=_topic(call.name), value=written)
    return _same(base, list(base.calls), _compose(main, _others(base, i, rng), rng), call=i, value=value.text)


def _change_value(base: Base, rng: random.Random) -> Made | None:
    return _value_case(base, rng, changed=True)


def _restate_value(base: Base, rng: random.Random) -> Made | None:
    return _value_case(base, rng, changed=False)


def _grounded_argument(base: Base, rng: random.Random) -> tuple[int, str, Any] | None:
    """A call's argument whose value the input states as written (a name, a number, a date)."""
    options = []
    for i, call in enumerate(base.calls):
        if not isinstance(call.arguments, Mapping):
            continue
        for key, value in call.arguments.items():
            written = (
                value
                if isinstance(value, str)
                else f"{value:g}"
                if isinstance(value, int | float) and not isinstance(value, bool)
                else None
            )
            if (
                written
                and written in base.user_input
                and len(written) >= 2
                and written not in ("0", "1")
                and not any(written in _text_of(c.arguments) for c in base.calls[:i])
            ):
                options.append((i, str(key), value))
    return rng.choice(options) if options else None


def _new_value(value: Any, base: Base, rng: random.Random) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        factor = rng.choice((3, 7, 11, 13))
        new = value * factor + rng.choice((1, 3, 7))
        return type(value)(new)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        year, month, day = (int(p) for p in value.split("-"))
        day = day + 11 if day <= 15 else day - 11
        return f"{year}-{month:02d}-{day:02d}"
    everything = " ".join(
        [
            base.user_input,
            base.answer,
            base.system_prompt,
            *(_text_of(c.result) + _text_of(c.arguments) for c in base.calls),
        ]
    )
    fresh = [n for n in NEW_NAMES if n not in everything]
    return rng.choice(fresh)


def _unground(base: Base, rng: random.Random) -> Made | None:
    found = _grounded_argument(base, rng)
    if found is None:
        return None
    i, key, value = found
    calls = list(base.calls)
    new = _new_value(value, base, rng)
    calls[i] = replace(calls[i], arguments={**dict(calls[i].arguments), key: new})  # type: ignore[arg-type]
    return _same(base, calls, base.answer, call=i, argument=key, value=new)


def _reground(base: Base, rng: random.Random) -> Made | None:
    found = _grounded_argument(base, rng)
    if found is None:
        return None
    i, key, value = found
    calls = list(base.calls)
    new = _new_value(value, base, rng)
    calls[i] = replace(calls[i], arguments={**dict(calls[i].arguments), key: new})  # type: ignore[arg-type]
    old = value if isinstance(value, str) else f"{value:g}"
    if isinstance(new, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", new):
        year, month, day = (int(p) for p in new.split("-"))
        written = say.date(year, month, day, rng)
    elif isinstance(new, int | float):
        written = say.number(float(new), rng)
    else:
        written = rng.choice((new, new.upper(), new.lower()))
    user_input = base.user_input.replace(old, written, 1)
    return calls, base.answer, user_input, base.system_prompt, {"call": i, "argument": key, "value": new}


def _repeat_equivalent(base: Base, rng: random.Random) -> Made | None:
    failing = _failing(base, rng, needs_value=False)
    if failing is None:
        return None
    i, entity, calls = failing
    key = next(k for k, v in calls[i].arguments.items() if v == entity)  # type: ignore[union-attr]
    variant = rng.choice((entity.upper(), entity.lower(), f" {entity} ", f"{entity}.", entity.swapcase()))
    again = replace(
        calls[i],
        arguments={**dict(calls[i].arguments), key: variant},  # type: ignore[arg-type]
        call_id=f"{calls[i].call_id}-retry",
        turn=calls[i].turn + 1,
    )
    calls = [*calls[: i + 1], again, *(replace(c, turn=c.turn + 1) for c in calls[i + 1 :])]
    main = rng.choice(_words(rng).HONEST).format(
        entity=entity, topic=_topic(calls[i].name), error=calls[i].error or ""
    )
    return _same(base, calls, _compose(main, _others(base, i, rng), rng), call=i)


def _retry_changed(base: Base, rng: random.Random) -> Made | None:
    chosen = _candidates(base, needs_value=False)
    if not chosen:
        return None
    i = rng.choice(chosen)
    call = base.calls[i]
    entity = _entity(call)
    assert entity is not None
    vague = f"{entity[1]} area"
    first = CaseCall(
        call.name,
        {**dict(call.arguments), entity[0]: vague},  # type: ignore[arg-type]
        None,
        f"Ambiguous value '{vague}': be more specific",
        f"{call.call_id}-first",
        turn=call.turn,
    )
    calls = [*base.calls[:i], first, *(replace(c, turn=c.turn + 1) for c in base.calls[i:])]
    return _same(base, calls, base.answer, call=i)


def _renamed(base: Base, rng: random.Random) -> tuple[int, str, list[CaseCall]] | None:
    if not base.tools:
        return None
    offered = {t["name"] for t in base.tools}
    i = rng.randrange(len(base.calls))
    call = base.calls[i]
    name = rng.choice(
        (f"{call.name}_v2", f"lookup_{_topic(call.name)}_data", f"{_topic(call.name)}_assistant")
    )
    if name in offered:
        return None
    calls = list(base.calls)
    calls[i] = replace(call, name=name)
    return i, name, calls


def _unknown_tool(base: Base, rng: random.Random) -> Made | None:
    renamed = _renamed(base, rng)
    if renamed is None:
        return None
    i, name, calls = renamed
    return _same(base, calls, base.answer, call=i, tool=name)


def _prompt_tool(base: Base, rng: random.Random) -> Made | None:
    renamed = _renamed(base, rng)
    if renamed is None:
        return None
    i, name, calls = renamed
    team = (
        f"You manage a team. Team members you can call like tools: {name} (answers {_topic(name)} questions)."
    )
    system = f"{base.system_prompt}\n\n{team}".strip()
    return calls, base.answer, base.user_input, system, {"call": i, "tool": name}


def _drop_required(base: Base, rng: random.Random) -> Made | None:
    options = []
    schemas = {t["name"]: t.get("parameters") or {} for t in base.tools}
    for i, call in enumerate(base.calls):
        schema = schemas.get(call.name)
        required = schema.get("required") if isinstance(schema, Mapping) else None
        if isinstance(required, list) and isinstance(call.arguments, Mapping):
            options += [(i, key) for key in required if key in call.arguments]
    if not options:
        return None
    i, key = rng.choice(options)
    calls = list(base.calls)
    calls[i] = replace(
        calls[i],
        arguments={
            k: v
            for k, v in calls[i].arguments.items()  # type: ignore[union-attr]
            if k != key
        },
    )
    return _same(base, calls, base.answer, call=i, argument=key)


_OPERATORS = {
    "none": _none,
    "fail_claim": _fail_claim,
    "fail_honest": _fail_honest,
    "fail_omit": _fail_omit,
    "change_value": _change_value,
    "restate_value": _restate_value,
    "unground": _unground,
    "reground": _reground,
    "repeat_equivalent": _repeat_equivalent,
    "retry_changed": _retry_changed,
    "unknown_tool": _unknown_tool,
    "prompt_tool": _prompt_tool,
    "drop_required": _drop_required,
}


def phrasing_counts() -> Iterator[tuple[str, int]]:
    """How many phrasings each family has (the suite's own check: at least 30)."""
    yield from (
        ("statements", len(say.STATEMENTS)),
        ("action claims", len(say.ACTION_CLAIMS)),
        ("honest failures", len(say.HONEST)),
    )
