"""Frozen, slotted records built without their dataclass ``__init__``, for the records made once per call/run.

A frozen dataclass sets each field through ``object.__setattr__`` (a Python-level call per field): for ``AgentRun``
(18 fields) that costs more than assembling most of the run. ``slot_builder`` fills an instance of a mutable twin
class with the very same slots (plain attribute stores), then gives it the frozen class: CPython allows
``__class__`` assignment between classes of identical layout, and the object is from then on indistinguishable
from one the constructor made. Only for classes whose ``__init__`` does nothing else: no ``__post_init__``, or
values the caller has already made what ``__post_init__`` would make (see ``matching.new_tool_call``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def slot_builder(cls: type[T], fields: tuple[str, ...]) -> Callable[..., T]:
    """A function taking every field's value positionally, in ``fields`` order (which must be the class's own
    field order, so a change to the class fails here, at import, rather than filling the wrong slots)."""
    own = tuple(cls.__dataclass_fields__)  # type: ignore[attr-defined]
    if fields != own or tuple(getattr(cls, "__slots__", ())) != own:
        raise TypeError(f"{cls.__name__}: fields/slots are {own}, not {fields}")
    twin = type(f"_Building{cls.__name__}", (), {"__slots__": own})
    targets = ", ".join(f"obj.{name}" for name in fields)
    namespace: dict[str, Any] = {"twin": twin, "cls": cls}
    # the code dataclasses generate for __init__, with plain stores: the names are the class's own identifiers
    exec(f"def build(*values):\n    obj = twin()\n    {targets}, = values\n    obj.__class__ = cls\n    return obj\n",
         namespace)
    build = namespace["build"]
    probe = build(*(None for _ in fields))  # the layouts must match: checked once, here
    if type(probe) is not cls:
        raise TypeError(f"{cls.__name__}: could not build through a twin class")
    build.__name__ = f"build_{cls.__name__}"
    return build


def fixed_builder(cls: type[T], varying: tuple[str, ...], fixed: dict[str, Any]) -> Callable[..., T]:
    """``build(*varying values)``: like ``slot_builder``, with every other field set to its value in ``fixed``
    (values the caller has validated, e.g. by building one instance the ordinary way)."""
    own = tuple(cls.__dataclass_fields__)  # type: ignore[attr-defined]
    if tuple(getattr(cls, "__slots__", ())) != own or set(varying) | set(fixed) != set(own) or set(varying) & set(fixed):
        raise TypeError(f"{cls.__name__}: fields are {own}, not {varying} + {tuple(fixed)}")
    twin = type(f"_Building{cls.__name__}", (), {"__slots__": own})
    namespace: dict[str, Any] = {"twin": twin, "cls": cls}
    stores = []
    for k, name in enumerate(own):
        if name in fixed:
            namespace[f"_v{k}"] = fixed[name]
            stores.append(f"    obj.{name} = _v{k}\n")
        else:
            stores.append(f"    obj.{name} = {name}\n")
    exec(f"def build({', '.join(varying)}):\n    obj = twin()\n{''.join(stores)}    obj.__class__ = cls\n    return obj\n",
         namespace)
    build = namespace["build"]
    probe = build(*(None for _ in varying))
    if type(probe) is not cls:
        raise TypeError(f"{cls.__name__}: could not build through a twin class")
    build.__name__ = f"build_{cls.__name__}"
    return build
