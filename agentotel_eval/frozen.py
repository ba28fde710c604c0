"""Read-only JSON-like containers, so a ToolCall stays immutable and hashable with nested arguments.

They subclass ``dict`` / ``list`` on purpose: ``json.dumps``, ``==`` against plain dicts and lists, and
``isinstance(x, dict)`` all keep working, while every mutating method raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn


def _refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is immutable")


class FrozenDict(dict):
    """A dict that refuses mutation and hashes by content."""

    __slots__ = ("_hash",)
    _hash: int  # set on the first hash (a slot: no class attribute)

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        try:
            return self._hash
        except AttributeError:
            h = hash(frozenset((k, hashable(v)) for k, v in self.items()))
            object.__setattr__(self, "_hash", h)
            return h

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self

    def __repr__(self) -> str:
        return dict.__repr__(self)

    def thaw(self) -> dict[str, Any]:
        """A plain, mutable deep copy."""
        return thaw(self)


class FrozenList(list):
    """A list that refuses mutation and hashes by content."""

    __slots__ = ("_hash",)
    _hash: int  # set on the first hash (a slot: no class attribute)

    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __iadd__ = __imul__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        try:
            return self._hash
        except AttributeError:
            h = hash(tuple(hashable(v) for v in self))
            object.__setattr__(self, "_hash", h)
            return h

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList:
        return self

    def __repr__(self) -> str:
        return list.__repr__(self)


def hashable(value: Any) -> Any:
    if isinstance(value, (FrozenDict, FrozenList)):
        return value
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


_ALREADY_FROZEN = frozenset({str, int, float, bool, bytes, type(None), FrozenDict, FrozenList})


def freeze(value: Any) -> Any:
    """Deep-convert dicts to FrozenDict and lists/tuples to FrozenList; other values are kept as they are."""
    if type(value) in _ALREADY_FROZEN:  # most values, before the (slow) ABC checks
        return value
    if isinstance(value, (dict, Mapping)):
        return FrozenDict({k: v if type(v) in _ALREADY_FROZEN else freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return FrozenList([v if type(v) in _ALREADY_FROZEN else freeze(v) for v in value])
    return value


def thaw(value: Any) -> Any:
    """Deep-convert frozen containers back to plain dicts and lists."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value
