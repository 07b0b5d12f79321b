"""Buffers exported without the buffer protocol, as mpi4py takes them:

* DLPack tensors on the host: the capsule's tensor is read (it must be
  C-contiguous), its memory used as a writable buffer, and the capsule
  consumed (its deleter called, renamed ``used_dltensor``), as mpi4py does;
* objects with ``__cuda_array_interface__``: their pointer is taken as host
  memory, as an MPI library that is not CUDA-aware would take it (the
  simulated Cell has no GPU; the arrays of CuPy, Numba, PyTorch and JAX,
  which are in GPU memory, are refused with a clear error).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

__all__ = ["exported", "host_memory"]

KDL_CPU = 1
_KINDS = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_uint), ("device_id", ctypes.c_int)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int),
        ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_USED = ctypes.c_char_p(b"used_dltensor")  # the name must outlive the capsule


GPU_LIBRARIES = ("cupy", "numba", "torch", "jax", "pycuda")


def exported(obj: Any) -> tuple[np.ndarray, bool] | None:
    """The memory of a DLPack tensor or a CUDA-array-interface object (flat,
    of its dtype) and whether it is writable; None for anything else."""
    if isinstance(obj, np.ndarray):
        return None
    if hasattr(obj, "__cuda_array_interface__") or hasattr(obj, "__dlpack__"):
        lib = type(obj).__module__.split(".")[0]
        if lib in GPU_LIBRARIES:
            raise TypeError(
                f"message: a {lib} array is in GPU memory; the simulated Cell has no GPU (use numpy)"
            )
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return from_dlpack(obj), True
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return from_interface(cai)
    return None


def host_memory(address: int, nbytes: int, dtype: Any = np.uint8) -> np.ndarray:
    """``nbytes`` of host memory at ``address`` as a flat array."""
    if nbytes == 0 or not address:
        return np.zeros(0, dtype)
    raw = memoryview((ctypes.c_uint8 * nbytes).from_address(address)).cast("B")
    return np.frombuffer(raw, np.uint8).view(dtype)


def from_interface(cai: dict[str, Any]) -> tuple[np.ndarray, bool]:
    """The memory a CUDA array interface describes (C-contiguous only)."""
    dtype = np.dtype(cai["typestr"])
    shape = [int(x) for x in cai.get("shape", ())]
    strides = cai.get("strides")
    if strides is not None:
        expect = dtype.itemsize
        for n, st in zip(reversed(shape), reversed(list(strides)), strict=True):
            if n != 1 and st != expect:
                raise BufferError("message: the array interface is not C-contiguous")
            expect *= n
    address, readonly = cai["data"]
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return host_memory(int(address or 0), nbytes, dtype), not readonly


def from_dlpack(obj: Any) -> np.ndarray:
    """The tensor's memory as a writable numpy array (its dtype, flat)."""
    device, _ = obj.__dlpack_device__()
    if int(device) != KDL_CPU:
        raise TypeError(f"message: a DLPack tensor on device {device} is not in host memory")
    capsule = obj.__dlpack__()
    if not _api.PyCapsule_IsValid(capsule, b"dltensor"):
        raise BufferError("dlpack: invalid capsule object")
    managed = _Managed.from_address(_api.PyCapsule_GetPointer(capsule, b"dltensor"))
    try:
        t = managed.dl_tensor
        shape = [t.shape[i] for i in range(t.ndim)]
        if t.strides and t.ndim:
            expect, ok = 1, True
            for i in reversed(range(t.ndim)):
                ok &= shape[i] == 1 or t.strides[i] == expect
                expect *= shape[i]
            if not ok:
                raise BufferError("dlpack: the tensor is not C-contiguous")
        kind = _KINDS.get(int(t.dtype.code))
        if kind is None:
            raise BufferError(f"dlpack: data type code {t.dtype.code} is not supported")
        if kind == "f" and t.dtype.lanes == 2:  # a complex number as two real lanes
            kind = "c"
        dtype = np.dtype(f"{kind}{t.dtype.bits * t.dtype.lanes // 8}") if kind != "b" else np.dtype(np.bool_)
        n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        return host_memory(int(t.data or 0) + int(t.byte_offset), n, dtype)
    finally:
        if managed.deleter:
            managed.deleter(ctypes.addressof(managed))
        _api.PyCapsule_SetName(capsule, _USED)
