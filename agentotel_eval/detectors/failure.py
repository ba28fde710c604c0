"""Whether a call failed, by its status or by what its result says, and its error as text."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from agentotel_eval.test_case import PARTIAL_SOURCE, ToolCall

_NUMBERS = re.compile(r"\d+(\.\d+)?")
_QUOTED = re.compile(r"(['\"]).*?\1")
_HEX = re.compile(r"\b[0-9a-f]{8,}\b", re.I)


def failed(call: ToolCall) -> bool:
    """Whether a call failed: an error status, or a result that says so (``isError``, a truthy ``error`` or
    ``failed``, ``success: false``, an HTTP status of 400 or more). A call rebuilt from a trace (it has
    ``sources``) has its status from reconstruction, which reads those signals itself (and honours
    ``[reconstruction] text_failures``): that status is the answer."""
    if call.status == "error":
        return True
    if call.sources and call.status == "ok":
        return False
    result = call.output
    kind = type(result)
    if result is None or kind is list or kind is int or kind is float or kind is bool:
        return False  # the usual results, told by their exact type before any ABC check
    if kind is str:
        if result[:1] != "{":
            return False
        try:
            result = json.loads(result)
        except ValueError:
            return False
    if not isinstance(result, dict | Mapping):
        return False
    if result.get("isError") is True or result.get("failed") is True or result.get("success") is False:
        return True
    error = result.get("error")
    if error not in (None, False, "", 0, [], {}):
        return True
    status = result.get("status_code", result.get("status"))
    return isinstance(status, int) and not isinstance(status, bool) and status >= 400


def error_text(call: ToolCall) -> str:
    """The call's error message, else what its result says."""
    if call.error:
        return str(call.error)
    result = call.output
    if isinstance(result, dict | Mapping):
        return str(result.get("error") or result.get("message") or result)
    return "" if result is None else str(result)


def error_signature(text: str) -> str:
    """An error with its specifics (numbers, quoted values, ids) taken out: equal for "the same error"."""
    text = _QUOTED.sub("'…'", text.strip().lower())
    return _NUMBERS.sub("#", _HEX.sub("#", text))[:200]


def args_text(call: ToolCall) -> str:
    return (
        json.dumps(call.input_parameters, sort_keys=True, default=str)
        if call.input_parameters is not None
        else ""
    )


def arguments_of(call: ToolCall) -> Any:
    """What the call was given: its parsed arguments, else as recorded."""
    return call.input_parameters if call.input_parameters is not None else call.raw_arguments


def partial(call: ToolCall) -> bool:
    """Whether the capture kept only some of the call's argument values."""
    return str((call.sources or {}).get("arguments") or "").endswith(PARTIAL_SOURCE)
