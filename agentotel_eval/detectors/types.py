"""The six tool-use error types: their names and the definition the judge is given. The one list every part of
the product reads (the detectors' rules, the judge's prompt, ``calibrate``, the config's
``error_types``, the pages)."""

from __future__ import annotations

PARAMETER_ERROR = "parameter_error"
INVALID_FUNCTION = "invalid_function"
SEQUENCE_ERROR = "sequence_error"
RESULT_IGNORED = "result_ignored"
REPEATED_FAILURE = "repeated_failure"
ERROR_HANDLING = "error_handling"

#: the six types, in the order the judge's prompt lists them, with the definition it is given
ERROR_TYPES: dict[str, str] = {
    PARAMETER_ERROR: "wrong argument types, missing required parameters, or invalid argument values",
    INVALID_FUNCTION: "a call to a function that does not exist or is not available to the agent",
    SEQUENCE_ERROR: (
        "tools called in the wrong order, e.g. booking before searching, or using a result before the "
        "call that produces it"
    ),
    RESULT_IGNORED: (
        "a tool's result or error message ignored: later calls or the final response disregard or "
        "contradict what a tool returned"
    ),
    REPEATED_FAILURE: "the same failing call repeated without changing what made it fail",
    ERROR_HANDLING: "bad handling of errors: a failure hidden from the user, a false claim of success, or no "
    "recovery where one was possible",
}
#: the order reports and tables show them in: what the model called, how, in what order,
#: then what it made of it
TABLE_ORDER = (
    INVALID_FUNCTION,
    PARAMETER_ERROR,
    SEQUENCE_ERROR,
    RESULT_IGNORED,
    REPEATED_FAILURE,
    ERROR_HANDLING,
)
SEVERITIES = ("none", "low", "medium", "high")


def check_error_types(value: object) -> tuple[str, ...]:
    """A list of type names, validated (``ValueError`` names the unknown ones)."""
    if not isinstance(value, list | tuple) or not value:
        raise ValueError(f"must be a non-empty list of {list(ERROR_TYPES)}")
    bad = [t for t in value if t not in ERROR_TYPES]
    if bad:
        raise ValueError(f"unknown error_types {bad}; expected some of {list(ERROR_TYPES)}")
    return tuple(str(t) for t in value)
