"""Peers' expectation files as trajectory specs: dataset lines ``{"name", "input", "expected_trajectory"}``.

Pure functions from parsed JSON to entries; the command (``agentotel-eval import-expectations``) reads the
files and writes the lines. Every spec made here is read back with ``parse_spec`` before it is returned.

- Google ADK eval sets (``*.evalset.json``, ``*.test.json``): one entry per invocation of each case (its user
  text as the input), its ``intermediate_data.tool_uses`` in order, arguments exact, as ADK's trajectory
  evaluator compares them (``mode``: ``EXACT``, ``IN_ORDER`` or ``ANY_ORDER``, the ``adk:`` presets); the
  older list format (``query`` / ``expected_tool_use`` with ``tool_name`` / ``tool_input``) too.
- BFCL ``possible_answer`` files (JSON lines ``{"id", "ground_truth": [{function: {param: [allowed
  values]}}]}``): each parameter may take any of its allowed values (``$in``, strings compared as BFCL's
  checker does: case, spaces and punctuation aside), ``""`` among them makes it optional, no other parameter
  is accepted (``strict_args``), several functions are one ``unordered`` group, and no other call is accepted
  (``extra = "forbid"``). The questions (BFCL's data file of the same category) give each entry its input.
- LangChain agentevals reference trajectories: OpenAI-style messages (a list, or ``{"messages": [...]}``), or
  a list of such trajectories; each assistant message's tool calls are one LLM turn (``mode``: ``strict``,
  ``unordered``, ``subset`` or ``superset``, the ``langchain:`` presets).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentotel_eval.trajectory.matchers import SpecError
from agentotel_eval.trajectory.spec import parse_spec

SOURCES = ("adk", "bfcl", "langchain")
ADK_MODES = ("EXACT", "IN_ORDER", "ANY_ORDER")
LANGCHAIN_MODES = ("strict", "unordered", "subset", "superset")
#: how BFCL's checker compares strings: case, spaces and punctuation aside
_BFCL_NORM = ["case", "space", "punct"]


class ImportFailure(ValueError):
    """A file that is not in the format named; the message says where and what was expected."""


Entry = dict[str, Any]


def _checked(entry: Entry, where: str) -> Entry:
    try:
        parse_spec(entry["expected_trajectory"], where)
    except SpecError as exc:  # a bug here, or a value no spec can hold: say which entry
        raise ImportFailure(f"{where}: the spec made from it cannot be read: {exc}") from None
    return entry


# --- Google ADK ---------------------------------------------------------------------------------------------


def _get(value: Mapping[str, Any], snake: str) -> Any:
    """A field of ADK's models, written snake_case or (its JSON aliases) camelCase."""
    if snake in value:
        return value[snake]
    head, *rest = snake.split("_")
    return value.get(head + "".join(part.title() for part in rest))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        parts = content.get("parts") or []
        return "".join(p.get("text") or "" for p in parts if isinstance(p, Mapping))
    return ""


def from_adk(data: Any, mode: str = "EXACT", where: str = "eval set") -> list[Entry]:
    """Entries of an ADK eval set (or the older list of queries)."""
    if mode not in ADK_MODES:
        raise ImportFailure(f"--mode for ADK is one of {', '.join(ADK_MODES)}, got {mode!r}")
    preset = f"adk:{mode}"
    entries: list[Entry] = []
    if isinstance(
        data, list
    ):  # the older format: [{"query", "expected_tool_use": [{"tool_name", "tool_input"}]}]
        for i, row in enumerate(data):
            if not isinstance(row, Mapping) or "query" not in row:
                raise ImportFailure(
                    f'{where}[{i}]: expected {{"query", "expected_tool_use"}} (ADK\'s older '
                    "format) or an eval set object with eval_cases"
                )
            tools = [
                {"tool": t.get("tool_name"), "args": t.get("tool_input") or {}}
                for t in row.get("expected_tool_use") or []
                if isinstance(t, Mapping)
            ]
            entries.append(
                _checked(
                    {
                        "name": f"{i}",
                        "input": str(row["query"]),
                        "expected_trajectory": {"preset": preset, "expected_tools": tools},
                    },
                    f"{where}[{i}]",
                )
            )
        return entries
    cases = _get(data, "eval_cases") if isinstance(data, Mapping) else None
    if not isinstance(cases, list):
        raise ImportFailure(
            f"{where}: not an ADK eval set (expected an object with eval_cases, or a list of queries)"
        )
    for i, case in enumerate(cases):
        case_id = str(_get(case, "eval_id") or i)
        conversation = _get(case, "conversation")
        if not isinstance(conversation, list):
            raise ImportFailure(
                f"{where}.eval_cases[{i}]: a case needs a conversation (a list of invocations)"
            )
        for k, invocation in enumerate(conversation):
            data_ = _get(invocation, "intermediate_data") or {}
            uses = _get(data_, "tool_uses") or []
            tools = [
                {"tool": u.get("name"), "args": u.get("args") or {}} for u in uses if isinstance(u, Mapping)
            ]
            name = case_id if len(conversation) == 1 else f"{case_id}#{k + 1}"
            entries.append(
                _checked(
                    {
                        "name": name,
                        "input": _text(_get(invocation, "user_content")),
                        "expected_trajectory": {"preset": preset, "expected_tools": tools},
                    },
                    f"{where}.eval_cases[{i}].conversation[{k}]",
                )
            )
    return entries


# --- BFCL ---------------------------------------------------------------------------------------------------


def _bfcl_matcher(allowed: Any, where: str) -> Any:
    if not isinstance(allowed, list):
        raise ImportFailure(f"{where}: BFCL lists the allowed values of a parameter, got {allowed!r}")
    values = [v for v in allowed if v != ""]
    matcher: dict[str, Any] = {}
    if len(values) < len(allowed):
        matcher["$optional"] = True  # BFCL's "" among the allowed values: the parameter may be left out
    if values:
        matcher["$in"] = values
        if any(isinstance(v, str) for v in values):
            matcher["$norm"] = _BFCL_NORM
    return matcher


def from_bfcl(
    lines: Iterable[Any], questions: Mapping[str, str] | None = None, where: str = "possible answers"
) -> list[Entry]:
    """Entries of BFCL ``possible_answer`` lines; ``questions``: id -> the user's question."""
    entries: list[Entry] = []
    for n, row in enumerate(lines, 1):
        at = f"{where}:{n}"
        if not isinstance(row, Mapping) or not isinstance(row.get("ground_truth"), list):
            raise ImportFailure(
                f'{at}: expected {{"id", "ground_truth": [{{function: {{param: [values]}}}}]}} '
                "(a BFCL possible_answer line)"
            )
        calls = []
        for k, call in enumerate(row["ground_truth"]):
            if not isinstance(call, Mapping) or len(call) != 1:
                raise ImportFailure(f"{at}: ground_truth[{k}] is one {{function: {{param: [values]}}}}")
            ((function, params),) = call.items()
            if not isinstance(params, Mapping):
                raise ImportFailure(
                    f"{at}: ground_truth[{k}].{function}: expected its parameters' allowed values"
                )
            calls.append(
                {
                    "tool": function,
                    "strict_args": True,
                    "args": {p: _bfcl_matcher(v, f"{at}: {function}.{p}") for p, v in params.items()},
                }
            )
        steps = calls if len(calls) == 1 else [{"unordered": calls}]
        case_id = str(row.get("id", n))
        entries.append(
            _checked(
                {
                    "name": case_id,
                    "input": (questions or {}).get(case_id, case_id),
                    "expected_trajectory": {"steps": steps, "extra": "forbid"},
                },
                at,
            )
        )
    return entries


def bfcl_questions(lines: Iterable[Any]) -> dict[str, str]:
    """id -> the last user message of the first turn, from a BFCL data file's lines."""
    out: dict[str, str] = {}
    for row in lines:
        if not isinstance(row, Mapping) or "id" not in row:
            continue
        turns = row.get("question") or []
        first = turns[0] if turns and isinstance(turns[0], list) else turns
        users = [m.get("content") for m in first if isinstance(m, Mapping) and m.get("role") == "user"]
        if users and isinstance(users[-1], str):
            out[str(row["id"])] = users[-1]
    return out


# --- LangChain agentevals -----------------------------------------------------------------------------------


def _call(call: Mapping[str, Any], where: str) -> dict[str, Any]:
    function = call.get("function")
    if isinstance(function, Mapping):  # OpenAI: {"function": {"name", "arguments": "<json>"}}
        name, args = function.get("name"), function.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                raise ImportFailure(f"{where}: the arguments of {name!r} are not JSON: {args!r}") from None
    else:  # LangChain: {"name", "args"}
        name, args = call.get("name"), call.get("args")
    if not isinstance(name, str) or not name:
        raise ImportFailure(f"{where}: a tool call needs a name, got {call!r}")
    return {"tool": name, "args": args if isinstance(args, Mapping) else {}}


def _messages(value: Any) -> list[Mapping[str, Any]] | None:
    if isinstance(value, Mapping):
        for key in ("messages", "reference_outputs", "outputs"):
            if key in value:
                return _messages(value[key])
        return None
    if isinstance(value, list) and all(
        isinstance(m, Mapping) and ("role" in m or "type" in m) for m in value
    ):
        return list(value)
    return None


def from_langchain(
    data: Any, mode: str = "strict", ignore_args: bool = False, where: str = "trajectory"
) -> list[Entry]:
    """Entries of agentevals reference trajectories (one trajectory, or a list of them)."""
    if mode not in LANGCHAIN_MODES:
        raise ImportFailure(f"--mode for LangChain is one of {', '.join(LANGCHAIN_MODES)}, got {mode!r}")
    single = _messages(data)
    trajectories: Sequence[Any] = [data] if single is not None else data if isinstance(data, list) else []
    entries: list[Entry] = []
    for i, trajectory in enumerate(trajectories):
        messages = _messages(trajectory)
        at = where if single is not None else f"{where}[{i}]"
        if messages is None:
            raise ImportFailure(
                f'{at}: expected a list of chat messages (role, content, tool_calls) or {{"messages": [...]}}'
            )
        turns: list[list[Any]] = []
        user = ""
        for k, message in enumerate(messages):
            role = message.get("role", message.get("type"))
            content = message.get("content")
            if role in ("user", "human") and not user and isinstance(content, str):
                user = content
            calls = message.get("tool_calls") if role in ("assistant", "ai") else None
            if calls:
                turn = [_call(c, f"{at}.messages[{k}]") for c in calls if isinstance(c, Mapping)]
                turns.append([c["tool"] for c in turn] if ignore_args else turn)
        name = str(trajectory.get("id", i)) if isinstance(trajectory, Mapping) else str(i)
        entries.append(
            _checked(
                {
                    "name": name,
                    "input": user,
                    "expected_trajectory": {"preset": f"langchain:{mode}", "expected_tools": turns},
                },
                at,
            )
        )
    if not entries:
        raise ImportFailure(f"{where}: no trajectory found (expected chat messages with tool_calls)")
    return entries
