"""Argument matchers: what a trajectory step (or a forbid rule) says about one argument value.

A matcher is written as JSON (or TOML): a literal (JSON equality: ``100`` equals ``100.0``, a bool is not a
number), or an object of operators that must all hold (``{"$gt": 0, "$lt": 500}``), or, for a nested object,
a map of keys to matchers. ``compile_matcher`` turns the written form into a ``Matcher`` once;
``Matcher.test`` answers for one value with ``True`` / ``False`` / ``None`` (cannot be decided: the value was
not recorded) and a reason a person can read.

``$ref`` compares with a value an earlier call produced; the caller resolves it (``Refs``), since which call a
step id names depends on the alignment.
"""

from __future__ import annotations

import math
import numbers
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import regex

from agentotel_eval.metrics.matching import values_equal

#: a ``$regex`` longer than this is refused when the spec is read
MAX_PATTERN_CHARS = 1000
#: a value longer than this is not matched against a pattern (the reason says so)
MAX_SUBJECT_CHARS = 65_536
#: seconds one pattern may take on one value; catastrophic backtracking fails the key instead of hanging
REGEX_TIMEOUT_S = 0.05

NORMALISERS = ("case", "space", "punct")
JSON_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")
_REF_PARTS = ("args", "result")
_MISSING = object()
_WS = re.compile(r"\s+")
_PUNCT = str.maketrans("", "", string.punctuation)

#: the outcome of one key: True (holds), False (fails), None (not recorded, so not decided)
KeyOutcome = bool | None


class SpecError(ValueError):
    """A trajectory spec that cannot be read; the message names where (``steps[2].args.zip``)."""


def missing() -> Any:
    """The marker for an absent key (``Matcher.test(missing(), ...)``)."""
    return _MISSING


@dataclass(frozen=True, slots=True)
class Ref:
    """``$ref = "ID.args.PATH"`` or ``"ID.result.PATH"``: a value an earlier call produced."""

    target: str  # a step id, or a tool name (its latest earlier call)
    part: str  # "args" | "result"
    path: tuple[str, ...]
    text: str


#: resolves a ``Ref`` for the call being matched: ``(found, value, why_not)``; found None = not recorded
Refs = Callable[[Ref], tuple["KeyOutcome", Any, str]]


def _no_refs(ref: Ref) -> tuple[KeyOutcome, Any, str]:
    return False, None, f"{ref.target} has no earlier call"


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _show(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, numbers.Integral):
        return "integer"
    if isinstance(value, numbers.Real):
        return "integer" if float(value).is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def _has_type(value: Any, name: str) -> bool:
    actual = json_type_of(value)
    return actual == name or (name == "number" and actual == "integer")


def normalise_text(value: str, how: Sequence[str]) -> str:
    if "case" in how:
        value = value.casefold()
    if "punct" in how:
        value = value.translate(_PUNCT)
    if "space" in how:
        value = _WS.sub(" ", value).strip()
    return value


# --- matchers -----------------------------------------------------------------------------------------------


class Matcher:
    """One value's test. ``refs`` names the step ids whose bound calls the test depends on."""

    refs: tuple[Ref, ...] = ()

    def test(self, value: Any, resolve: Refs = _no_refs) -> tuple[KeyOutcome, str]:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Literal(Matcher):
    value: Any

    def test(self, value: Any, resolve: Refs = _no_refs) -> tuple[KeyOutcome, str]:
        if value is _MISSING:
            return False, "missing"
        if values_equal(self.value, value):
            return True, ""
        return False, f"expected {_show(self.value)}, got {_show(value)}"

    def describe(self) -> str:
        return _show(self.value)


@dataclass(frozen=True, slots=True)
class Nested(Matcher):
    """A nested object's keys, each with its own matcher (other keys free unless ``strict``)."""

    keys: tuple[tuple[str, Matcher], ...]
    strict: bool = False
    refs: tuple[Ref, ...] = ()

    def test(self, value: Any, resolve: Refs = _no_refs) -> tuple[KeyOutcome, str]:
        if value is _MISSING:
            return False, "missing"
        if not isinstance(value, Mapping):
            return False, f"expected an object, got {_show(value)}"
        for key, verdict, reason in check_keys(self.keys, value, self.strict, resolve):
            if verdict is not True:
                return verdict, f"{key}: {reason}"
        return True, ""

    def describe(self) -> str:
        return "{" + ", ".join(f"{k}: {m.describe()}" for k, m in self.keys) + "}"


Test = Callable[[Any, Refs], tuple[KeyOutcome, str]]


@dataclass(frozen=True, slots=True)
class Operators(Matcher):
    """Operators that must all hold; the first that fails gives the reason."""

    tests: tuple[Test, ...]
    text: str
    absent_ok: bool = False  # ``$absent`` or ``$optional``: a missing key passes
    refs: tuple[Ref, ...] = ()

    def test(self, value: Any, resolve: Refs = _no_refs) -> tuple[KeyOutcome, str]:
        if value is _MISSING:
            return (True, "") if self.absent_ok else (False, "missing")
        for test in self.tests:
            verdict, reason = test(value, resolve)
            if verdict is not True:
                return verdict, reason
        return True, ""

    def describe(self) -> str:
        return self.text


def check_keys(
    keys: Sequence[tuple[str, Matcher]], value: Mapping[str, Any], strict: bool, resolve: Refs = _no_refs
) -> list[tuple[str, KeyOutcome, str]]:
    """Each named key's verdict, then (``strict``) each key the spec does not name, as a failure."""
    out: list[tuple[str, KeyOutcome, str]] = []
    for key, matcher in keys:
        verdict, reason = matcher.test(value.get(key, _MISSING), resolve)
        out.append((key, verdict, reason))
    if strict:
        named = {k for k, _ in keys}
        out.extend((key, False, "not expected (strict_args)") for key in value if key not in named)
    return out


# --- compiling the written form -----------------------------------------------------------------------------


def parse_ref(text: Any, where: str) -> Ref:
    if not isinstance(text, str):
        raise SpecError(f"{where}: $ref must be a string 'ID.args.PATH' or 'ID.result.PATH', got {text!r}")
    parts = text.split(".")
    if len(parts) < 2 or not parts[0] or parts[1] not in _REF_PARTS or any(p == "" for p in parts[2:]):
        raise SpecError(f"{where}: $ref must be 'ID.args.PATH' or 'ID.result.PATH', got {text!r}")
    return Ref(parts[0], parts[1], tuple(parts[2:]), text)


def compile_pattern(pattern: Any, where: str) -> Any:
    if not isinstance(pattern, str):
        raise SpecError(f"{where}: $regex must be a string, got {pattern!r}")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise SpecError(f"{where}: $regex is {len(pattern)} characters; the limit is {MAX_PATTERN_CHARS}")
    try:
        return regex.compile(pattern, regex.VERSION0)
    except regex.error as exc:
        raise SpecError(f"{where}: $regex {pattern!r} is not a valid pattern ({exc})") from None


def _number(value: Any, where: str, op: str) -> float:
    if not _is_number(value):
        raise SpecError(f"{where}: {op} needs a number, got {value!r}")
    if not math.isfinite(value):
        raise SpecError(f"{where}: {op} needs a finite number, got {value!r}")
    return float(value)


def _comparison(op: str, bound: float) -> Test:
    compare = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}[op]
    sign = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]

    def test(value: Any, resolve: Refs) -> tuple[KeyOutcome, str]:
        if not _is_number(value):
            return False, f"{_show(value)} is not a number"
        if compare(float(value), bound):
            return True, ""
        return False, f"{_show(value)} is not {sign} {_show(int(bound) if bound.is_integer() else bound)}"

    return test


def _approx(target: float, rel: float | None, abs_: float | None) -> Test:
    tolerance = " and ".join(
        t
        for t in (
            f"{rel:g} relative" if rel is not None else "",
            f"{abs_:g} absolute" if abs_ is not None else "",
        )
        if t
    )

    def test(value: Any, resolve: Refs) -> tuple[KeyOutcome, str]:
        if not _is_number(value):
            return False, f"{_show(value)} is not a number"
        ok = math.isclose(float(value), target, rel_tol=rel or 0.0, abs_tol=abs_ or 0.0)
        if rel is None and abs_ is None:
            ok = math.isclose(float(value), target)
        return (
            (True, "")
            if ok
            else (False, f"{_show(value)} is not within {tolerance or 'tolerance'} of {target:g}")
        )

    return test


def _pattern_test(compiled: Any, pattern: str) -> Test:
    def test(value: Any, resolve: Refs) -> tuple[KeyOutcome, str]:
        if not isinstance(value, str):
            return False, f"{_show(value)} is not a string"
        if len(value) > MAX_SUBJECT_CHARS:
            return False, f"a value of {len(value)} characters is not matched (limit {MAX_SUBJECT_CHARS})"
        try:
            found = compiled.fullmatch(value, timeout=REGEX_TIMEOUT_S)
        except TimeoutError:
            return False, f"the pattern {pattern!r} took too long on this value"
        return (True, "") if found else (False, f"{_show(value)} does not match /{pattern}/")

    return test


def _length_test(spec: Matcher | int) -> Test:
    def test(value: Any, resolve: Refs) -> tuple[KeyOutcome, str]:
        if not isinstance(value, str | list | tuple | Mapping):
            return False, f"{_show(value)} has no length"
        if isinstance(spec, int):
            return (True, "") if len(value) == spec else (False, f"length {len(value)}, expected {spec}")
        verdict, reason = spec.test(len(value), resolve)
        return verdict, f"length {len(value)}: {reason}" if verdict is not True else ""

    return test


def _contains_test(needle: Any) -> Test:
    def test(value: Any, resolve: Refs) -> tuple[KeyOutcome, str]:
        if isinstance(value, str):
            ok = isinstance(needle, str) and needle in value
        elif isinstance(value, list | tuple):
            wanted = needle if isinstance(needle, list | tuple) else [needle]
            ok = all(any(values_equal(w, v) for v in value) for w in wanted)
        elif isinstance(value, Mapping):
            wanted = needle if isinstance(needle, list | tuple) else [needle]
            ok = all(isinstance(w, str) and w in value for w in wanted)
        else:
            return False, f"{_show(value)} cannot contain anything"
        return (True, "") if ok else (False, f"{_show(value)} does not contain {_show(needle)}")

    return test


def _schema_test(schema: Mapping[str, Any], where: str) -> Test:
    import jsonschema

    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise SpecError(f"{where}: $schema is not a valid JSON Schema ({exc.message})") from None
    validator = validator_class(schema)

    def test(value: Any, resolve: Refs) -> tuple[KeyOutcome, str]:
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        return (True, "") if error is None else (False, f"schema: {error.message}")

    return test


def _ref_test(ref: Ref, norm: Sequence[str]) -> Test:
    def test(value: Any, resolve: Refs) -> tuple[KeyOutcome, str]:
        found, produced, why = resolve(ref)
        if found is None:
            return None, f"{ref.text}: {why or 'not recorded'}"
        if not found:
            return False, f"{ref.text}: {why}"
        same = (
            normalise_text(value, norm) == normalise_text(produced, norm)
            if norm and isinstance(value, str) and isinstance(produced, str)
            else values_equal(produced, value)
        )
        return (
            (True, "") if same else (False, f"expected {_show(produced)} from {ref.text}, got {_show(value)}")
        )

    return test


def _eq_test(expected: Any, norm: Sequence[str]) -> Test:
    def test(value: Any, resolve: Refs) -> tuple[KeyOutcome, str]:
        if norm and isinstance(expected, str) and isinstance(value, str):
            same = normalise_text(expected, norm) == normalise_text(value, norm)
        else:
            same = values_equal(expected, value)
        return (True, "") if same else (False, f"expected {_show(expected)}, got {_show(value)}")

    return test


def _in_test(options: Sequence[Any], norm: Sequence[str]) -> Test:
    eqs = [_eq_test(option, norm) for option in options]

    def test(value: Any, resolve: Refs) -> tuple[KeyOutcome, str]:
        if any(eq(value, resolve)[0] for eq in eqs):
            return True, ""
        return False, f"{_show(value)} is not one of {_show(list(options), 80)}"

    return test


def _type_test(names: Sequence[str]) -> Test:
    def test(value: Any, resolve: Refs) -> tuple[KeyOutcome, str]:
        if any(_has_type(value, name) for name in names):
            return True, ""
        return False, f"expected {' or '.join(names)}, got {json_type_of(value)}"

    return test


def _present(value: Any, resolve: Refs) -> tuple[KeyOutcome, str]:
    return True, ""


def _absent(value: Any, resolve: Refs) -> tuple[KeyOutcome, str]:
    return False, f"present ({_show(value)}), expected absent"  # reached only for a present key


@dataclass(frozen=True, slots=True)
class _Reading:
    """What an operator's compiler reads besides its own argument: the whole object (``$approx`` takes ``rel``
    and ``abs`` from it), where it is written, the ``$norm`` normalisers, and the
    ``$ref`` references found."""

    spec: Mapping[str, Any]
    where: str
    norm: Sequence[str]
    refs: list[Ref]


@dataclass(frozen=True, slots=True)
class _Operator:
    """How one operator is read: ``compile`` turns its argument into its test (None: it has
    no test of its own)."""

    compile: Callable[[Any, _Reading], Test | None]
    absent_ok: bool = False  # a missing key passes (``$absent``, ``$optional``)
    bare: bool = False  # described by its name alone (its argument is always ``true``)
    modifier: bool = False  # changes another operator (``$norm``, ``rel``, ``abs``): not described on its own
    normalised: bool = False  # compares text after ``$norm``


def _true(op: str, test: Test | None) -> Callable[[Any, _Reading], Test | None]:
    """An operator written ``op = true``: ``test``, or an error for any other argument."""

    def compile_(arg: Any, reading: _Reading) -> Test | None:
        if arg is not True:
            raise SpecError(f"{reading.where}: write {op} = true")
        return test

    return compile_


def _modifier(arg: Any, reading: _Reading) -> None:
    return None  # read by the operator it changes


def _compile_in(arg: Any, reading: _Reading) -> Test:
    if not isinstance(arg, list | tuple) or not arg:
        raise SpecError(f"{reading.where}: $in needs a non-empty list, got {arg!r}")
    return _in_test(arg, reading.norm)


def _compile_type(arg: Any, reading: _Reading) -> Test:
    names = [arg] if isinstance(arg, str) else arg
    if not isinstance(names, list | tuple) or not names or any(n not in JSON_TYPES for n in names):
        raise SpecError(
            f"{reading.where}: $type takes JSON Schema type names {list(JSON_TYPES)}, got {arg!r}"
        )
    return _type_test(tuple(names))


def _compile_schema(arg: Any, reading: _Reading) -> Test:
    if not isinstance(arg, Mapping):
        raise SpecError(f"{reading.where}: $schema needs an object (an inline JSON Schema), got {arg!r}")
    return _schema_test(_plain(arg), reading.where)


def _compile_bound(op: str) -> Callable[[Any, _Reading], Test]:
    return lambda arg, reading: _comparison(op, _number(arg, reading.where, op))


def _compile_approx(arg: Any, reading: _Reading) -> Test:
    spec, where = reading.spec, reading.where
    rel = _number(spec["rel"], where, "rel") if "rel" in spec else None
    abs_ = _number(spec["abs"], where, "abs") if "abs" in spec else None
    if (rel is not None and rel < 0) or (abs_ is not None and abs_ < 0):
        raise SpecError(f"{where}: rel and abs must not be negative")
    return _approx(_number(arg, where, "$approx"), rel, abs_)


def _compile_len(arg: Any, reading: _Reading) -> Test:
    if isinstance(arg, bool) or not isinstance(arg, int | Mapping):
        raise SpecError(f"{reading.where}: $len needs a whole number or a matcher object, got {arg!r}")
    return _length_test(arg if isinstance(arg, int) else compile_matcher(arg, f"{reading.where}.$len"))


def _compile_ref(arg: Any, reading: _Reading) -> Test:
    ref = parse_ref(arg, reading.where)
    reading.refs.append(ref)
    return _ref_test(ref, reading.norm)


#: every operator and how it is read: the one list, so an operator the spec accepts always has its test
_OPERATORS: Mapping[str, _Operator] = {
    "$eq": _Operator(lambda arg, reading: _eq_test(arg, reading.norm), normalised=True),
    "$norm": _Operator(_modifier, modifier=True),
    "$in": _Operator(_compile_in, normalised=True),
    "$any": _Operator(_true("$any", _present), bare=True),
    "$absent": _Operator(_true("$absent", _absent), absent_ok=True, bare=True),
    # the key may be left out; when given, the other operators must hold
    "$optional": _Operator(_true("$optional", None), absent_ok=True, bare=True),
    "$type": _Operator(_compile_type),
    "$schema": _Operator(_compile_schema),
    "$regex": _Operator(lambda arg, reading: _pattern_test(compile_pattern(arg, reading.where), arg)),
    **{op: _Operator(_compile_bound(op)) for op in ("$gt", "$gte", "$lt", "$lte")},
    "$approx": _Operator(_compile_approx),
    "rel": _Operator(_modifier, modifier=True),
    "abs": _Operator(_modifier, modifier=True),
    "$contains": _Operator(lambda arg, reading: _contains_test(_plain(arg))),
    "$len": _Operator(_compile_len),
    "$ref": _Operator(_compile_ref, normalised=True),
}
OPERATORS = tuple(_OPERATORS)
_NORMALISED = tuple(op for op, operator in _OPERATORS.items() if operator.normalised)


def _operators(spec: Mapping[str, Any], where: str) -> Operators:
    unknown = [k for k in spec if k not in _OPERATORS]
    if unknown:
        raise SpecError(f"{where}: unknown operator(s) {unknown}; known: {', '.join(OPERATORS)}")
    norm_value = spec.get("$norm", ())
    norm = [norm_value] if isinstance(norm_value, str) else norm_value
    if not isinstance(norm, list | tuple) or any(n not in NORMALISERS for n in norm):
        raise SpecError(f"{where}: $norm takes some of {list(NORMALISERS)}, got {norm_value!r}")
    if ("rel" in spec or "abs" in spec) and "$approx" not in spec:
        raise SpecError(f"{where}: rel/abs go with $approx")
    reading = _Reading(spec, where, norm, [])
    tests: list[Test] = []
    texts: list[str] = []
    absent_ok = False
    for op, arg in spec.items():
        operator = _OPERATORS[op]
        if operator.modifier:
            continue
        texts.append(op if operator.bare else f"{op} {_show(arg, 40)}")
        test = operator.compile(arg, reading)
        if test is not None:
            tests.append(test)
        absent_ok = absent_ok or operator.absent_ok
    if "$absent" in spec and len(tests) > 1:
        raise SpecError(f"{where}: $absent cannot be combined with other operators")
    if "$norm" in spec and not any(op in spec for op in _NORMALISED):
        raise SpecError(f"{where}: $norm goes with {', '.join(_NORMALISED[:-1])} or {_NORMALISED[-1]}")
    return Operators(tuple(tests), ", ".join(texts), absent_ok, tuple(reading.refs))


def _plain(value: Any) -> Any:
    """A written value as plain dicts and lists (TOML and frozen values alike)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _has_operator(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(isinstance(k, str) and k.startswith("$") for k in value) or any(
            _has_operator(v) for v in value.values()
        )
    if isinstance(value, list | tuple):
        return False  # operators inside arrays are not read: an array is a literal
    return False


def compile_matcher(spec: Any, where: str) -> Matcher:
    """The matcher a written value means (see the module's docstring)."""
    if isinstance(spec, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in spec):
            return _operators(spec, where)
        if _has_operator(spec):
            return compile_keys(spec, where, strict=False)
    return Literal(_plain(spec))


def compile_keys(spec: Mapping[str, Any], where: str, strict: bool) -> Nested:
    """Matchers for an object's keys (a step's ``args``, or a nested object in them)."""
    keys = tuple((str(k), compile_matcher(v, f"{where}.{k}")) for k, v in spec.items())
    return Nested(keys, strict, tuple(r for _, m in keys for r in m.refs))
