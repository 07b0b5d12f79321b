"""MPI handles, as mpi4py has them: a Python object refers to an MPI object
(``_h``); ``Kind(other)`` refers to the same one, ``Kind()`` to none (the
null handle: ``MPI.Comm() == MPI.COMM_NULL``); handles are equal when they
refer to the same object, false when null; ``Free`` makes a handle null."""

from __future__ import annotations

from typing import Any, TypeVar

__all__ = ["Handle"]

H = TypeVar("H", bound="Handle")


class Handle:
    """The handle semantics every MPI object kind shares."""

    __slots__ = ("_h",)
    _h: Any
    _kind: type = object
    """The kind a handle may be made from (``Comm(cartcomm)`` is a Comm)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if Handle in cls.__bases__:
            cls._kind = cls

    # As in mpi4py, the handle is copied in __new__ (mpi4py's __cinit__), so that a
    # subclass's own __new__ may call super().__new__(cls, comm) and its own __init__
    # may take other arguments: Kind(other, *more) is not an error of the handle's.
    def __new__(cls, other: Any = None, *args: Any, **kwargs: Any) -> Any:
        new = super().__new__(cls)
        new._h = other._h if isinstance(other, Handle) and isinstance(other, cls._kind) else None
        return new

    def __init__(self, other: Any = None, *args: Any, **kwargs: Any) -> None:
        if other is not None and not isinstance(other, self._kind):
            raise TypeError(f"{type(self).__name__}({other!r}): expected a {self._kind.__name__}")
        if isinstance(other, Handle):
            self._h = other._h

    @classmethod
    def _of(cls: type[H], h: Any) -> H:
        """A handle of this kind to ``h``."""
        new = cls.__new__(cls)
        new._h = h
        return new

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Handle):
            return NotImplemented
        return self._h is other._h

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return id(self._h)

    def __bool__(self) -> bool:
        return self._h is not None
