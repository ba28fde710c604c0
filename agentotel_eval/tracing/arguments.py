"""Name a call's arguments by the function's parameters, cheaply, on every call of a traced function.

``inspect.Signature.bind`` costs several microseconds and raises on a bad call; a traced call only needs the
names of what was passed, so the parameter layout is analysed once and each call is a ``zip``. The result
holds the arguments actually passed (defaults are not filled in: a tool's arguments are what its caller
chose), without ``self``/``cls``; extra ``**kwargs`` appear under their own names and extra positionals under
the ``*args`` name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_RECEIVERS = ("self", "cls")


class ArgumentBinder:
    """Maps ``(args, kwargs)`` of a call to ``{parameter name: value}``."""

    __slots__ = ("_count", "_extra", "_names", "_skip_first", "parameter_names")

    def __init__(self, fn: Callable[..., Any]) -> None:
        try:
            parameters = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):  # builtins and C callables without a signature
            parameters = [inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL)]
        names = [p.name for p in parameters if p.kind in _POSITIONAL]
        var_positional = [p.name for p in parameters if p.kind is inspect.Parameter.VAR_POSITIONAL]
        self._names = tuple(names)
        self._count = len(names)
        self._extra = var_positional[0] if var_positional else "args"
        self._skip_first = (
            bool(names) and parameters[0].name in _RECEIVERS and parameters[0].kind in _POSITIONAL
        )
        #: the parameters a caller can name (without self/cls and the ``*``/``**`` collectors)
        self.parameter_names = tuple(
            p.name
            for i, p in enumerate(parameters)
            if not (i == 0 and self._skip_first)
            and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        )

    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        # zip() stops at the shorter side, as wanted; passing strict=False would cost a keyword parse per call
        names, values = (self._names[1:], args[1:]) if self._skip_first else (self._names, args)
        bound = dict(zip(names, values))  # noqa: B905
        if len(args) > self._count:
            bound[self._extra] = list(args[self._count :])
        if kwargs:
            bound.update(kwargs)
        return bound
