"""GPU memory that one process exports as a file descriptor and another maps, across the jail's namespaces.

Why not CUDA IPC handles (`cudaIpcGetMemHandle`, torch's `share_memory_`): the legacy handle names the
exporting process by PID, and every worker lives in its own PID namespace (`kernelvault.toolchain.jail`), so the
driver refuses it there. The driver's virtual memory management API does not: an allocation made with
`cuMemCreate` and exported with `cuMemExportToShareableHandle` as a POSIX file descriptor is a kernel object,
which SCM_RIGHTS carries over a Unix socket like any other descriptor; the receiver imports and maps it. This
is the path that lets the parent judge a worker's outputs on the device without copying them
to its CPU.

What a hostile sender can do with it, and what the receiver checks:
- send a descriptor that is not a CUDA allocation (a file, a pipe, a memfd): the import fails, an error;
- claim a larger allocation than it made: mapping the claimed size fails, an error;
- name a tensor outside what was mapped: `tensor_view` refuses any view not wholly inside the mapping, so
  the receiver never reads memory it did not map;
- keep writing the memory while the receiver reads it: it can only change its own answer, which the
  receiver reads once.

Only the driver (libcuda) through ctypes: this runs in the parent and in the workers, and a worker's
harness may use what the candidate may not (the static wall forbids ctypes in candidate code).
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import torch

# cuda.h enums
_CU_MEM_ALLOCATION_TYPE_PINNED = 1
_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
_CU_MEM_LOCATION_TYPE_DEVICE = 1
_CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0
CU_MEM_ACCESS_FLAGS_PROT_READ = 1
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3


class DeviceShareError(Exception):
    """A driver call refused (the message names the call and the driver's error), or a view out of bounds."""


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]  # fmt: skip


class _AllocationProp(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]  # fmt: skip


class _AccessDesc(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_DRIVER: ctypes.CDLL | None = None


def _driver() -> ctypes.CDLL:
    global _DRIVER
    if _DRIVER is None:
        try:
            _DRIVER = ctypes.CDLL("libcuda.so.1")
        except OSError as error:
            raise DeviceShareError(f"no CUDA driver: {error}") from error
    return _DRIVER


def _call(name: str, *arguments: Any) -> None:
    result = getattr(_driver(), name)(*arguments)
    if result != 0:
        text = ctypes.c_char_p()
        _driver().cuGetErrorName(result, ctypes.byref(text))
        raise DeviceShareError(f"{name}: {(text.value or b'error').decode()} ({result})")


def _prepare(device: torch.device) -> int:
    """The device's ordinal, with torch's (primary) context current on this thread for the driver calls."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    torch.cuda.set_device(index)
    torch.cuda.init()
    torch.empty(1, device=f"cuda:{index}")  # makes the primary context current (the runtime does it lazily)
    return index


def _properties(index: int) -> _AllocationProp:
    prop = _AllocationProp()
    prop.type = _CU_MEM_ALLOCATION_TYPE_PINNED
    prop.requestedHandleTypes = _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    prop.location = _Location(_CU_MEM_LOCATION_TYPE_DEVICE, index)
    return prop


def granularity(device: torch.device) -> int:
    """The size every shared allocation is rounded up to (2 MiB on current NVIDIA GPUs)."""
    index = _prepare(device)
    size = ctypes.c_size_t()
    _call("cuMemGetAllocationGranularity", ctypes.byref(size), ctypes.byref(_properties(index)),
          _CU_MEM_ALLOC_GRANULARITY_MINIMUM)  # fmt: skip
    return size.value


@dataclass
class SharedBlock:
    """One mapped allocation: made here and exported (`export_block`), or received and mapped (`import_block`).
    `fd` is the descriptor to send (exporter) or the one received (importer); `close` unmaps and releases."""

    pointer: int
    size: int
    fd: int
    device: torch.device
    _handle: int = field(repr=False)
    _closed: bool = field(default=False, repr=False)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for name, arguments in (("cuMemUnmap", (ctypes.c_uint64(self.pointer), ctypes.c_size_t(self.size))),
                                ("cuMemAddressFree", (ctypes.c_uint64(self.pointer), ctypes.c_size_t(self.size))),
                                ("cuMemRelease", (ctypes.c_uint64(self._handle),))):  # fmt: skip
            try:
                _call(name, *arguments)
            except DeviceShareError:
                pass  # already gone with the context: nothing left to free
        try:
            os.close(self.fd)
        except OSError:
            pass


def _map(handle: int, size: int, index: int, access: int) -> int:
    """Reserve an address range, map the whole of `size` bytes of `handle` there, grant `access`."""
    pointer = ctypes.c_uint64()
    _call("cuMemAddressReserve", ctypes.byref(pointer), ctypes.c_size_t(size), ctypes.c_size_t(0),
          ctypes.c_uint64(0), ctypes.c_uint64(0))  # fmt: skip
    try:
        _call("cuMemMap", pointer, ctypes.c_size_t(size), ctypes.c_size_t(0), ctypes.c_uint64(handle),
              ctypes.c_uint64(0))  # fmt: skip
    except DeviceShareError:
        _call("cuMemAddressFree", pointer, ctypes.c_size_t(size))
        raise
    access_desc = _AccessDesc(_Location(_CU_MEM_LOCATION_TYPE_DEVICE, index), access)
    try:
        _call("cuMemSetAccess", pointer, ctypes.c_size_t(size), ctypes.byref(access_desc), ctypes.c_size_t(1))
    except DeviceShareError:
        _call("cuMemUnmap", pointer, ctypes.c_size_t(size))
        _call("cuMemAddressFree", pointer, ctypes.c_size_t(size))
        raise
    return pointer.value


def export_block(nbytes: int, device: torch.device) -> SharedBlock:
    """A new device allocation of at least `nbytes` (rounded up to the granularity), mapped read-write here and
    exported as a file descriptor (`SharedBlock.fd`) for another process to import."""
    index = _prepare(device)
    unit = granularity(device)
    size = max(unit, -(-nbytes // unit) * unit)
    handle = ctypes.c_uint64()
    _call("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(_properties(index)),
          ctypes.c_uint64(0))  # fmt: skip
    try:
        pointer = _map(handle.value, size, index, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
    except DeviceShareError:
        _call("cuMemRelease", handle)
        raise
    fd = ctypes.c_int(-1)
    block = SharedBlock(pointer, size, -1, torch.device("cuda", index), handle.value)
    try:
        _call("cuMemExportToShareableHandle", ctypes.byref(fd), handle, _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
              ctypes.c_uint64(0))  # fmt: skip
    except DeviceShareError:
        block.close()
        raise
    block.fd = fd.value
    return block


def import_block(
    fd: int, size: int, device: torch.device, access: int = CU_MEM_ACCESS_FLAGS_PROT_READ
) -> SharedBlock:
    """Map `size` bytes of the allocation behind a received descriptor (which this block then owns). Refused
    with DeviceShareError when the descriptor is not a CUDA allocation of at least `size` bytes."""
    index = _prepare(device)
    if size <= 0 or size % granularity(device):
        os.close(fd)
        raise DeviceShareError(
            f"a shared block's size must be a positive multiple of the granularity, not {size}"
        )
    handle = ctypes.c_uint64()
    try:
        _call("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd),
              _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)  # fmt: skip
    except DeviceShareError:
        os.close(fd)
        raise
    try:
        pointer = _map(handle.value, size, index, access)
    except DeviceShareError:
        _call("cuMemRelease", handle)
        os.close(fd)
        raise
    return SharedBlock(pointer, size, fd, torch.device("cuda", index), handle.value)


@functools.cache
def exportable(index: int) -> str | None:
    """None if this process can make, export and map a shareable block on GPU `index` (checked once per
    process); else why not (a driver without the virtual memory API, a MIG slice that refuses the export...)."""
    try:
        export_block(1, torch.device("cuda", index)).close()
    except (DeviceShareError, RuntimeError, OSError) as error:  # RuntimeError: torch cannot reach the device
        reason = f"{type(error).__name__}: {error}"
        # said once per process (the result is cached): the verdicts are the same, the judging slower
        sys.stderr.write(f"kernelvault: outputs are judged through files on GPU {index}: {reason}\n")
        return reason
    return None


# Bound when this module loads, before a candidate's guards wrap `torch.as_tensor` (`integrity.TensorFromData`):
# the harness writes a candidate's outputs into shared blocks while the monitor still watches, and its own view of a
# block is not candidate data (every GPU check failed on the wrapped one, H100 2026-12-07).
_AS_TENSOR = torch.as_tensor


class _CudaArray:
    """What torch.as_tensor reads device memory through (the CUDA array interface, version 3)."""

    def __init__(self, pointer: int, nbytes: int, read_only: bool) -> None:
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (pointer, read_only),
                                         "version": 3, "strides": None}  # fmt: skip


def view_bytes(offset: int, dtype: torch.dtype, shape: tuple[int, ...], block_size: int) -> int:
    """The bytes of a contiguous `dtype` tensor of `shape` at byte `offset` of a block of `block_size` bytes,
    refused (DeviceShareError) unless it lies wholly inside the block and is aligned for its dtype: a forged
    descriptor cannot make the reader touch memory it did not map. Device blocks and host memfds alike."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    if any(not isinstance(size, int) or size < 0 for size in shape):
        raise DeviceShareError(f"a shared tensor's shape must be non-negative integers, not {shape}")
    count = 1
    for size in shape:
        count *= size
    nbytes = count * itemsize
    if not isinstance(offset, int) or offset < 0 or offset % itemsize or offset + nbytes > block_size:
        raise DeviceShareError(
            f"a shared tensor of {nbytes} bytes at offset {offset} is not inside the {block_size}-byte block"
        )
    return nbytes


def tensor_view(block: SharedBlock, offset: int, dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
    """A contiguous tensor of `dtype` and `shape` at byte `offset` of `block`, refused unless it lies wholly
    inside the mapping (`view_bytes`)."""
    nbytes = view_bytes(offset, dtype, shape, block.size)
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype, device=block.device)
    raw = _AS_TENSOR(_CudaArray(block.pointer + offset, nbytes, read_only=False), device=block.device)
    return raw.view(dtype).view(shape)
