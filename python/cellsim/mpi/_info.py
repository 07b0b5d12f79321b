"""``MPI.Info``: hints, as ordered string keys and values (cellsim.mpi takes
none, but programs pass them around), with mpi4py's handle semantics and
its mapping methods."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from . import _types as T
from ._handle import Handle

__all__ = ["INFO_ENV", "INFO_NULL", "Info"]


class Info(Handle):
    """An info handle."""

    __slots__ = ()
    _h: dict[str, str] | None

    @classmethod
    def Create(cls) -> Info:
        """An empty info object."""
        return cls._of({})

    @property
    def _items(self) -> dict[str, str]:
        if self._h is None:
            raise T.Exception(T.ERR_INFO, "the info is MPI_INFO_NULL")
        return self._h

    def Free(self) -> None:
        """Frees it (the handle becomes ``INFO_NULL``)."""
        if self is INFO_ENV:
            raise T.Exception(T.ERR_INFO, "MPI_Info_free: MPI_INFO_ENV is predefined")
        self._items  # noqa: B018  (freeing INFO_NULL is an error)
        self._h = None

    def Dup(self) -> Info:
        """A copy."""
        i = Info.Create()
        i._h = dict(self._items)
        return i

    def Get(self, key: str, maxlen: int = -1) -> str | None:
        """The value of ``key``, or None."""
        v = self._items.get(str(key))
        return v if v is None or maxlen < 0 else v[:maxlen]

    def Set(self, key: str, value: str) -> None:
        self._items[str(key)] = str(value)

    def Delete(self, key: str) -> None:
        if str(key) not in self._items:
            raise T.Exception(T.ERR_INFO_NOKEY, f"MPI_Info_delete: no key {key!r}")
        del self._items[str(key)]

    def Get_nkeys(self) -> int:
        return len(self._items)

    def Get_nthkey(self, n: int) -> str:
        return list(self._items)[n]

    # the mapping interface of mpi4py
    def __len__(self) -> int:
        return len(self._h) if self._h is not None else 0

    def __contains__(self, key: object) -> bool:
        return self._h is not None and key in self._h

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._h or {}))

    def __getitem__(self, key: str) -> str:
        if key not in self:
            raise KeyError(key)
        return self._items[key]

    def __setitem__(self, key: str, value: str) -> None:
        self.Set(key, value)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        del self._items[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._h.get(key, default) if self._h is not None else default

    def keys(self) -> list[str]:
        return list(self._h or {})

    def values(self) -> list[str]:
        return list((self._h or {}).values())

    def items(self) -> list[tuple[str, str]]:
        return list((self._h or {}).items())

    def update(self, other: Any = (), **kwds: str) -> None:
        for k, v in dict(other, **kwds).items():
            self.Set(k, v)

    def copy(self) -> Info:
        return self.Dup()

    def clear(self) -> None:
        self._items.clear()


INFO_NULL = Info()
INFO_ENV = Info.Create()
