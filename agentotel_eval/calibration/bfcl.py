"""The BFCL suite: labelled tool-use error cases made by mutating BFCL v4's ground-truth calls.

Each ground-truth entry gives one clean case (its calls, with the first allowed value of every parameter) and
one case per mutation operator; BFCL's own AST checker judges every case, and a mutation is kept only when the
checker's verdict, mapped to our error types, is the operator's label. The data and the checker are read from
the ``bfcl-eval`` package's files (``sources.package_root``); the package itself is never imported.
"""

from __future__ import annotations

import copy
import difflib
import functools
import importlib.util
import json
import random
import re
import sys
import threading
import types
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from agentotel_eval.calibration.cases import CaseCall, LabelledCase
from agentotel_eval.calibration.sources import package_root

DISTRIBUTION = "bfcl-eval"
VERSION = "2026.3.23"
DEFAULT_CATEGORIES = ("simple_python", "multiple", "parallel", "live_simple", "live_multiple")

#: every operator with the labels its cases carry, in the order cases are emitted
OPERATORS: Mapping[str, frozenset[str]] = {
    "none": frozenset(),
    "drop_required": frozenset({"parameter_error"}),
    "add_unknown": frozenset({"parameter_error"}),
    "break_type": frozenset({"parameter_error"}),
    "outside_enum": frozenset({"parameter_error"}),
    "close_name": frozenset({"invalid_function"}),
    "far_name": frozenset({"invalid_function"}),
    "omit_optional": frozenset(),
}

#: what ``oracle_types`` returns for a checker failure none of our error types describes (a wrong call count,
#: a call to another offered function); it is no error type, so no case's labels can equal it
UNMAPPED = "unmapped"

# BFCL's checker looks the model up only to decide whether "." in names was sent as "_"; ours keep the dots
_MODEL_NAME = "agentotel-eval"

_TYPES = {"dict": "object", "float": "number", "tuple": "array"}

# parameters no BFCL tool declares under these names (each is checked against the schema anyway)
_UNKNOWN_PARAMETERS: tuple[tuple[str, Any], ...] = (
    ("verbose", True),
    ("timeout_seconds", 30),
    ("locale", "en"),
    ("response_format", "json"),
    ("max_results", 10),
    ("debug", True),
    ("callback_url", "https://example.com/hook"),
    ("priority", "high"),
)
_OUTSIDE_STRINGS = ("other", "unknown", "custom", "unspecified", "misc", "not_listed")


@dataclass(frozen=True, slots=True)
class BfclBuild:
    """A built suite and what was left out of it. ``skipped``: entries with no cases, by reason (BFCL's
    checker or the converted schema rejects their unmutated calls). ``rejected``: mutations dropped because
    BFCL's checker disagreed with the operator's label, by ``"<operator>: <checker error type>"``."""

    cases: tuple[LabelledCase, ...]
    entries: int
    skipped: Mapping[str, int]
    rejected: Mapping[str, int]

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())


def build_bfcl_suite(
    root: Path | None = None,
    *,
    categories: Sequence[str] = DEFAULT_CATEGORIES,
    per_category: int | None = None,
    seed: int = 0,
) -> list[LabelledCase]:
    """The suite's cases; see ``build_bfcl_suite_with_stats``."""
    return list(
        build_bfcl_suite_with_stats(root, categories=categories, per_category=per_category, seed=seed).cases
    )


def build_bfcl_suite_with_stats(
    root: Path | None = None,
    *,
    categories: Sequence[str] = DEFAULT_CATEGORIES,
    per_category: int | None = None,
    seed: int = 0,
) -> BfclBuild:
    """Cases from BFCL v4's ``categories``: all usable entries, or ``per_category`` of them per category drawn
    with ``seed``. ``root``: the directory holding the ``bfcl_eval`` package's files (default: the installed
    package, or its pinned wheel unpacked in the cache)."""
    root = package_root(DISTRIBUTION, VERSION, "bfcl_eval") if root is None else root
    checker = _load_checker(root.resolve())
    cases: list[LabelledCase] = []
    skipped: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    used = 0
    for category in categories:
        entries = sorted(_load_category(root, category), key=lambda pair: _natural_key(pair[0]["id"]))
        # far names come from the whole category, so an entry's cases do not depend on the sample or on the
        # other categories asked for
        all_names = sorted({f["name"] for entry, _ in entries for f in entry["function"]})
        if per_category is not None:
            random.Random(f"{seed}/{category}").shuffle(entries)
        taken: list[tuple[str, list[LabelledCase]]] = []
        for entry, truth in entries:
            if per_category is not None and len(taken) >= per_category:
                break
            built = _entry_cases(entry, truth, category, checker, all_names, seed, skipped, rejected)
            if built is not None:
                taken.append((entry["id"], built))
        for _, built in sorted(taken, key=lambda pair: _natural_key(pair[0])):
            cases.extend(built)
        used += len(taken)
    return BfclBuild(tuple(cases), used, dict(skipped), dict(rejected))


def oracle_types(oracle: Mapping[str, Any]) -> frozenset[str]:
    """Our error types for BFCL's verdict: empty when valid, ``{UNMAPPED}`` for a failure none describes."""
    if oracle.get("valid"):
        return frozenset()
    error_type = str(oracle.get("error_type", ""))
    if error_type.endswith(":cannot_find_match"):
        # a parallel batch reports only that some expected call found no partner; what the candidates got
        # wrong is the cause, and a call to a function nobody offered explains the miss on its own
        kinds = {_error_kind(sub) for sub in oracle.get("sub_error_types", ())}
        if "invalid_function" in kinds:
            return frozenset({"invalid_function"})
        return frozenset(kinds) if kinds == {"parameter_error"} else frozenset({UNMAPPED})
    return frozenset({_error_kind(error_type)})


def to_json_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A BFCL parameter schema in JSON Schema: its types renamed ("any" loses the constraint), recursively."""
    out = {key: value for key, value in schema.items() if key not in ("properties", "items")}
    kind = schema.get("type")
    if kind == "any":
        del out["type"]
    elif isinstance(kind, str):
        out["type"] = _TYPES.get(kind, kind)
    if isinstance(schema.get("properties"), Mapping):
        out["properties"] = {name: to_json_schema(sub) for name, sub in schema["properties"].items()}
    if isinstance(schema.get("items"), Mapping):
        out["items"] = to_json_schema(schema["items"])
    # BFCL puts an array's allowed items on the array itself; as JSON Schema that would reject every list
    if out.get("type") == "array" and "enum" in out:
        items = dict(out.get("items") or {})
        items.setdefault("enum", out.pop("enum"))
        out["items"] = items
    return out


def to_tool(function: Mapping[str, Any]) -> dict[str, Any]:
    """A BFCL function as an OpenAI-style API receives it (dotted names kept: the
    checker is told they are)."""
    return {
        "name": function["name"],
        "description": function.get("description", ""),
        "parameters": to_json_schema(function["parameters"]),
    }


# --- one entry ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Mutation:
    operator: str
    calls: list[dict[str, Any]]  # [{name: arguments}]
    call_index: int | None = None
    param: str | None = None


def _entry_cases(
    entry: Mapping[str, Any],
    truth: list[Mapping[str, Any]],
    category: str,
    checker: _Checker,
    all_names: Sequence[str],
    seed: int,
    skipped: Counter[str],
    rejected: Counter[str],
) -> list[LabelledCase] | None:
    functions = entry["function"]
    schemas = {f["name"]: f["parameters"] for f in functions}
    if any(next(iter(answer)) not in schemas for answer in truth):
        skipped["ground truth calls an undeclared function"] += 1
        return None
    calls = [_truth_call(answer, schemas) for answer in truth]
    tools = tuple(to_tool(f) for f in functions)
    validators = {tool["name"]: Draft202012Validator(tool["parameters"]) for tool in tools}
    if not all(validators[name].is_valid(arguments) for call in calls for name, arguments in call.items()):
        skipped["unmutated call fails its converted schema"] += 1
        return None
    clean = checker.check(functions, calls, truth, category)
    if not clean["valid"]:
        skipped[f"BFCL's checker rejects the unmutated call ({clean['error_type']})"] += 1
        return None

    user_input = "\n".join(m["content"] for turn in entry["question"] for m in turn if m["role"] == "user")
    system_prompt = "\n".join(
        m["content"] for turn in entry["question"] for m in turn if m["role"] == "system"
    )
    cases = []
    for mutation in _mutations(entry["id"], calls, truth, schemas, all_names, seed):
        if mutation.operator == "none":
            oracle = clean
        else:
            oracle = checker.check(functions, mutation.calls, truth, category)
        labels = OPERATORS[mutation.operator]
        if oracle_types(oracle) != labels:
            rejected[f"{mutation.operator}: {oracle['error_type'] or 'valid'}"] += 1
            continue
        suffix = f"/{mutation.param}" if mutation.param is not None else ""
        cases.append(
            LabelledCase(
                id=f"bfcl/{entry['id']}/{mutation.operator}{suffix}",
                suite="bfcl",
                operator=mutation.operator,
                user_input=user_input,
                tools=tools,
                calls=tuple(
                    CaseCall(name, arguments, result=None, call_id=f"call_{k}")
                    for k, call in enumerate(mutation.calls)
                    for name, arguments in call.items()
                ),
                answer="",
                labels=labels,
                system_prompt=system_prompt,
                oracle=oracle,
                meta={
                    "category": category,
                    "entry_id": entry["id"],
                    "call_index": mutation.call_index,
                    "param": mutation.param,
                    "source": f"{DISTRIBUTION} {VERSION}",
                },
            )
        )
    return cases


def _truth_call(answer: Mapping[str, Any], schemas: Mapping[str, Any]) -> dict[str, Any]:
    """The ground truth's call with each parameter's first allowed value ("" marks an omissible one)."""
    ((name, allowed),) = answer.items()
    properties = schemas[name].get("properties", {})
    arguments = {}
    for param, values in allowed.items():
        found, value = _first_allowed(values)
        if found:
            arguments[param] = _resolve(value, properties.get(param, {}))
    return {name: arguments}


def _first_allowed(values: Any) -> tuple[bool, Any]:
    if not isinstance(values, list):
        return True, values
    # null stands for a parameter's null default: sent, it would break the declared type;
    # omitted, it is the same
    for value in values:
        if value != "" and value is not None:
            return True, copy.deepcopy(value)
    return False, None


def _resolve(value: Any, schema: Mapping[str, Any]) -> Any:
    # a dict's ground truth lists allowed values per key, one level deep (as BFCL's dict checker reads it)
    kind = schema.get("type")
    if kind == "dict" and isinstance(value, dict):
        return _resolve_dict(value)
    items = schema.get("items") or {}
    if kind in ("array", "tuple") and isinstance(value, list) and items.get("type") == "dict":
        return [_resolve_dict(item) if isinstance(item, dict) else item for item in value]
    return value


def _resolve_dict(allowed: Mapping[str, Any]) -> dict[str, Any]:
    resolved = {}
    for key, values in allowed.items():
        found, value = _first_allowed(values)
        if found:
            resolved[key] = value
    return resolved


def _mutations(
    entry_id: str,
    calls: list[dict[str, Any]],
    truth: list[Mapping[str, Any]],
    schemas: Mapping[str, Any],
    all_names: Sequence[str],
    seed: int,
) -> Iterator[_Mutation]:
    """The clean calls, then one mutation per operator that applies (call and parameter
    drawn with ``seed``)."""
    yield _Mutation("none", copy.deepcopy(calls))
    offered = set(schemas)

    def rng(operator: str) -> random.Random:
        # one stream per entry and operator: a case does not change when other entries or operators do
        return random.Random(f"{seed}/{entry_id}/{operator}")

    def pairs(accept: Callable[[str, Mapping[str, Any], str, Any], bool]) -> list[tuple[int, str]]:
        found = []
        for k, call in enumerate(calls):
            ((name, arguments),) = call.items()
            properties = schemas[name].get("properties", {})
            allowed = truth[k][name]
            found += [
                (k, param)
                for param in arguments
                if accept(name, properties.get(param, {}), param, allowed.get(param, []))
            ]
        return found

    def with_arguments(k: int, change: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
        mutated = copy.deepcopy(calls)
        ((_, arguments),) = mutated[k].items()
        change(arguments)
        return mutated

    def with_name(k: int, new_name: str) -> list[dict[str, Any]]:
        mutated = copy.deepcopy(calls)
        ((_, arguments),) = mutated[k].items()
        mutated[k] = {new_name: arguments}
        return mutated

    def name_of(k: int) -> str:
        return next(iter(calls[k]))

    candidates = pairs(lambda name, _s, param, _a: param in schemas[name].get("required", []))
    if candidates:
        k, param = rng("drop_required").choice(candidates)
        yield _Mutation("drop_required", with_arguments(k, lambda args: args.pop(param)), k, param)

    r = rng("add_unknown")
    k = r.randrange(len(calls))
    declared = set(schemas[name_of(k)].get("properties", {}))
    unknown = [(param, value) for param, value in _UNKNOWN_PARAMETERS if param not in declared]
    if unknown:
        param, value = r.choice(unknown)
        yield _Mutation(
            "add_unknown", with_arguments(k, lambda args: args.__setitem__(param, value)), k, param
        )

    candidates = pairs(lambda _n, schema, _p, _a: schema.get("type") in _BREAKERS)
    if candidates:
        k, param = rng("break_type").choice(candidates)
        kind = schemas[name_of(k)]["properties"][param]["type"]
        broken = _BREAKERS[kind](calls[k][name_of(k)][param])
        yield _Mutation(
            "break_type", with_arguments(k, lambda args: args.__setitem__(param, broken)), k, param
        )

    candidates = pairs(lambda _n, schema, _p, allowed: bool(_outside_enum(schema, allowed)))
    if candidates:
        r = rng("outside_enum")
        k, param = r.choice(candidates)
        outside = r.choice(
            _outside_enum(schemas[name_of(k)]["properties"][param], truth[k][name_of(k)][param])
        )
        yield _Mutation(
            "outside_enum", with_arguments(k, lambda args: args.__setitem__(param, outside)), k, param
        )

    r = rng("close_name")
    k = r.randrange(len(calls))
    edits = [edit for edit in _small_edits(name_of(k)) if edit not in offered]
    if edits:
        yield _Mutation("close_name", with_name(k, r.choice(edits)), k)

    r = rng("far_name")
    k = r.randrange(len(calls))
    far = _far_name(offered, all_names, r)
    if far is not None:
        yield _Mutation("far_name", with_name(k, far), k)

    candidates = pairs(
        lambda name, _s, param, allowed: (
            isinstance(allowed, list) and "" in allowed and param not in schemas[name].get("required", [])
        )
    )
    if candidates:
        k, param = rng("omit_optional").choice(candidates)
        yield _Mutation("omit_optional", with_arguments(k, lambda args: args.pop(param)), k, param)


def _string_to_number(value: Any) -> int | float:
    for parse in (int, float):
        try:
            return parse(str(value))
        except ValueError:
            pass
    return 1


# a value of another JSON type, by the parameter's BFCL type ("any" accepts every type, so it has none)
_BREAKERS: Mapping[str, Callable[[Any], Any]] = {
    "integer": str,
    "float": str,
    "string": _string_to_number,
    "boolean": lambda value: str(value).lower(),
    "array": lambda value: json.dumps(value),
    "tuple": lambda value: json.dumps(value),
    "dict": lambda value: json.dumps(value),
}


def _standard(value: Any) -> Any:
    # how BFCL's checker compares strings: no spaces or ",./-_*^", lower case
    return re.sub(r"[ ,./\-_*^]", "", value).lower() if isinstance(value, str) else value


def _outside_enum(schema: Mapping[str, Any], allowed: Any) -> list[Any]:
    """Values of the parameter's type outside its enum and its ground truth (none if it has no enum)."""
    is_array = schema.get("type") in ("array", "tuple")
    enum = schema.get("enum")
    if enum is None and is_array:
        enum = (schema.get("items") or {}).get("enum")
    if not isinstance(enum, list) or not enum:
        return []
    item_type = (schema.get("items") or {}).get("type", "string") if is_array else schema.get("type")
    taken = {_standard(v) for v in enum}
    if isinstance(allowed, list):
        taken |= {_standard(v) for v in allowed if not isinstance(v, (list, dict))}
    outside: list[Any] = []
    if item_type == "string":
        outside = [s for s in _OUTSIDE_STRINGS if _standard(s) not in taken]
    elif item_type in ("integer", "float") and all(isinstance(v, (int, float)) for v in enum):
        above = max(enum) + 1
        outside = [float(above) if item_type == "float" else int(above)]
    return [[value] for value in outside] if is_array else outside


def _small_edits(name: str) -> list[str]:
    """Typos of ``name``: one character dropped, two neighbours swapped, or one appended."""
    edits = {name[:i] + name[i + 1 :] for i in range(len(name))}
    edits |= {
        name[:i] + name[i + 1] + name[i] + name[i + 2 :]
        for i in range(len(name) - 1)
        if name[i] != name[i + 1]
    }
    edits |= {name + "s", name + "2"}
    edits.discard(name)
    edits.discard("")
    return sorted(edits)


def _far_name(offered: set[str], all_names: Sequence[str], r: random.Random) -> str | None:
    """Another entry's function name, unlike every name offered here."""
    order = list(all_names)
    r.shuffle(order)
    for candidate in order:
        if candidate not in offered and all(
            difflib.SequenceMatcher(None, candidate.lower(), name.lower()).ratio() < 0.5 for name in offered
        ):
            return candidate
    return None


# --- data ---------------------------------------------------------------------------------------------------


def _load_category(root: Path, category: str) -> list[tuple[dict[str, Any], list[Mapping[str, Any]]]]:
    data = root / "bfcl_eval" / "data"
    answers = _read_lines(data / "possible_answer" / f"BFCL_v4_{category}.json")
    truths = {row["id"]: row["ground_truth"] for row in answers}
    return [
        (entry, truths[entry["id"]])
        for entry in _read_lines(data / f"BFCL_v4_{category}.json")
        if entry["id"] in truths
    ]


def _read_lines(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def _natural_key(text: str) -> tuple[Any, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


# --- BFCL's checker -----------------------------------------------------------------------------------------


def _error_kind(error_type: str) -> str:
    prefix, _, suffix = error_type.partition(":")
    if suffix == "wrong_func_name":
        return "invalid_function"
    if prefix in ("type_error", "value_error") or suffix in (
        "missing_required",
        "unexpected_param",
        "missing_optional",
    ):
        return "parameter_error"
    return UNMAPPED


class _AnyModel(dict[str, Any]):
    """BFCL's model table for a stub ``model_config``: every model keeps "." in function names."""

    def __missing__(self, key: str) -> Any:
        return types.SimpleNamespace(underscore_to_dot=False)


@dataclass(frozen=True, slots=True)
class _Checker:
    ast_checker: Callable[..., dict[str, Any]]
    language: Any  # BFCL's Language.PYTHON, from the same enums module the checker compares against

    def check(
        self,
        functions: list[Mapping[str, Any]],
        calls: list[dict[str, Any]],
        truth: list[Mapping[str, Any]],
        category: str,
    ) -> dict[str, Any]:
        """BFCL's verdict, reduced to what ``oracle_types`` reads (plus a parallel
        failure's sub error types)."""
        try:
            result = self.ast_checker(
                functions, copy.deepcopy(calls), truth, self.language, category, _MODEL_NAME
            )
        except (
            Exception
        ) as exc:  # the checker assumes well-formed answers; a crash is its verdict on this one
            return {
                "valid": False,
                "error_type": f"checker_crashed:{type(exc).__name__}",
                "sub_error_types": [],
            }
        valid = bool(result["valid"])
        verdict: dict[str, Any] = {
            "valid": valid,
            "error_type": "" if valid else str(result["error_type"]),
            "sub_error_types": [],
        }
        if str(verdict["error_type"]).endswith(":cannot_find_match"):
            verdict["sub_error_types"] = _sub_error_types(
                result["error"], {str(f["name"]) for f in functions}
            )
        return verdict


def _sub_error_types(errors: list[Any], offered: set[str]) -> list[str]:
    """The failed candidates' error types, leaving out calls to other offered functions (they are the batch's
    other calls, not attempts at the unmatched one)."""
    found = []
    for error in errors:
        if not isinstance(error, dict):
            continue
        for detail in error.values():
            (called,) = detail["model_output_item"]
            (expected,) = detail["possible_answer_item"]
            if called == expected or called not in offered:
                found.append(str(detail["sub_error_type"]))
    return found


_PACKAGES = (
    "bfcl_eval",
    "bfcl_eval.constants",
    "bfcl_eval.eval_checker",
    "bfcl_eval.eval_checker.ast_eval",
    "bfcl_eval.eval_checker.ast_eval.type_convertor",
)
# in dependency order: each one's bfcl_eval imports are loaded before it runs
_MODULES = (
    "bfcl_eval.constants.enums",
    "bfcl_eval.constants.type_mappings",
    "bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter",
    "bfcl_eval.eval_checker.ast_eval.type_convertor.js_type_converter",
    "bfcl_eval.eval_checker.ast_eval.ast_checker",
)
_CONFIG = "bfcl_eval.constants.model_config"
_LOADING = threading.Lock()


@functools.cache
def _load_checker(root: Path) -> _Checker:
    """BFCL's AST checker run from ``root``'s files. Its imports are served by entries put in ``sys.modules``
    for the load only: bare packages (not BFCL's ``__init__`` files) and a stub ``model_config``, whose real
    table imports every model SDK. The loaded modules keep their references; ``sys.modules`` is restored."""
    names = (*_PACKAGES, _CONFIG, *_MODULES)
    with _LOADING:
        saved = {name: sys.modules[name] for name in names if name in sys.modules}
        try:
            for name in _PACKAGES:
                package = types.ModuleType(name)
                package.__path__ = [str(root.joinpath(*name.split(".")))]
                sys.modules[name] = package
            config = types.ModuleType(_CONFIG)
            config.MODEL_CONFIG_MAPPING = _AnyModel()  # type: ignore[attr-defined]
            sys.modules[_CONFIG] = config
            loaded = {}
            for name in _MODULES:
                path = root.joinpath(*name.split(".")).with_suffix(".py")
                spec = importlib.util.spec_from_file_location(name, path)
                if spec is None or spec.loader is None:
                    raise ImportError(f"cannot load {path}")
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                spec.loader.exec_module(module)
                loaded[name] = module
        finally:
            for name in names:
                if name in saved:
                    sys.modules[name] = saved[name]
                else:
                    sys.modules.pop(name, None)
    return _Checker(loaded[_MODULES[-1]].ast_checker, loaded[_MODULES[0]].Language.PYTHON)
