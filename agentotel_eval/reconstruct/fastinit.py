"""Frozen, slotted records built without their dataclass ``__init__``, for the records made once per call/run.

A frozen dataclass sets each field through ``object.__setattr__`` (a Python-level call per field): for ``AgentRun``
(18 fields) that costs more than assembling most of the run. ``slot_builder`` sets the slots directly. Only for
classes whose ``__init__`` does nothing else: no ``__post_init__``, or values the caller has already made what
``__post_init__`` would make (see ``matching.new_tool_call``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def slot_builder(cls: type[T], fields: tuple[str, ...]) -> Callable[..., T]:
    """A function taking every field's value positionally, in ``fields`` order (which must be the class's own
    field order, so a change to the class fails here, at import, rather than filling the wrong slots)."""
    if fields != tuple(cls.__dataclass_fields__):  # type: ignore[attr-defined]
        raise TypeError(f"{cls.__name__} fields are {tuple(cls.__dataclass_fields__)}, not {fields}")  # type: ignore[attr-defined]
    setters = tuple(cls.__dict__[name].__set__ for name in fields)  # the slots' member descriptors
    new = object.__new__

    def build(*values: Any) -> T:
        obj = new(cls)
        for set_value, value in zip(setters, values, strict=True):
            set_value(obj, value)
        return obj

    build.__name__ = f"build_{cls.__name__}"
    return build
