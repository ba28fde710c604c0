"""A read-only mapping whose dict is made on first read: for values that are costly to build and often never read
(an evaluation log's pairing details, a row's details given as the JSON text to store)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


class LazyMapping(Mapping[str, Any]):
    """Reads go to the dict ``_get`` returns, made (and kept) by the subclass the first time it is asked."""

    __slots__ = ()

    def _get(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self._get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __contains__(self, key: object) -> bool:
        return key in self._get()

    def __eq__(self, other: object) -> bool:
        return self._get() == other if isinstance(other, Mapping) else NotImplemented

    __hash__ = None  # type: ignore[assignment]
