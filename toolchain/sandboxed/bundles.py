"""Values between a worker and the parent as shared memory instead of files: the transport that lets
the parent judge outputs where they are (on the device) without copying them to its CPU.

A bundle is one value (`tensor_files.encode_value`: a nest of tensors and scalars) whose tensors lie packed in
one shared block. The worker (`BundleSender`) fills a block and sends, over a Unix socket of its own
(SOCK_SEQPACKET: one packet per bundle), a JSON layout and the block's file descriptor (SCM_RIGHTS). The parent
(`BundleInbox`) maps the block and rebuilds the value from views into it. Two kinds of block:
- `cuda`: a `cuMemCreate` allocation exported as a descriptor (`device_share`): crosses the jail's PID
  namespace, where legacy CUDA IPC handles do not;
- `host`: a sealed memfd (the CPU): the sender cannot shrink it under the reader's mapping (SIGBUS), because
  the reader maps only a memfd whose size is sealed.

Everything in a packet is the sender's to forge; the inbox checks what it relies on: one descriptor per packet,
a packet and a layout of bounded size, at most `MAX_PENDING` bundles waiting, a block of the expected kind and
of at least its claimed size, and every tensor wholly inside it (`device_share.tensor_view` and
`_host_view`). A refusal is a TensorFileError naming why (the judge's forged or unreadable output), and
nothing the sender sent stays open.

The judge uses it when `VerifyConfig.shared_outputs` is on: by default on a CUDA GPU whose driver exports device
memory as a descriptor, files on the CPU and on ROCm. On the H200 (2026-12-03) the export from the jail, the
forgeries above and every bundled example both ways passed (bench/device_share_probe.py,
tests/gpu/test_shared_outputs_on_gpu.py; bench/results/2026-12-03-h200-suites-baseline-reward-path.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import mmap
import os
import socket
import stat
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelvault.toolchain.sandboxed import device_share
from kernelvault.toolchain.sandboxed.tensor_files import TensorFileError, decode_value, encode_value

MAX_PACKET = 256 << 10  # a layout's JSON: a function task's calls with many small tensors stay well under it
MAX_PENDING = (
    256  # bundles a job holds (a case's outputs: check, repeat, refill; timed spot checks): more is a
)
# sender filling the parent's descriptor table
ALIGNMENT = 256  # each tensor's offset in a block: coalesced access for any dtype
_HOST_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


def bundle_socketpair() -> tuple[socket.socket, socket.socket]:
    """(the parent's end, the worker's end): pass the worker's end's descriptor to its process."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


@dataclass
class _Block:
    kind: str  # "cuda" or "host"
    size: int
    fd: int
    views: Any  # cuda: the SharedBlock; host: the mmap
    device: torch.device

    def view(self, offset: int, dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
        if self.kind == "cuda":
            return device_share.tensor_view(self.views, offset, dtype, shape)
        return _host_view(self.views, self.size, offset, dtype, shape)

    def close(self) -> None:
        if self.kind == "cuda":
            self.views.close()  # closes the descriptor too
            return
        with contextlib.suppress(
            BufferError, ValueError
        ):  # a view still alive keeps the mapping (GC frees it)
            self.views.close()
        with contextlib.suppress(OSError):
            os.close(self.fd)


def _host_view(
    buffer: mmap.mmap, size: int, offset: int, dtype: torch.dtype, shape: tuple[int, ...]
) -> torch.Tensor:
    nbytes = device_share.view_bytes(offset, dtype, shape, size)  # refused unless wholly inside the block
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype)
    with warnings.catch_warnings():  # a read-only mapping: torch warns that the buffer is not writable
        warnings.simplefilter("ignore", UserWarning)
        return torch.frombuffer(buffer, dtype=dtype, count=math.prod(shape), offset=offset).view(shape)


def _layout(tensors: dict[str, torch.Tensor]) -> tuple[dict[str, dict[str, Any]], int]:
    entries, cursor = {}, 0
    for name, tensor in tensors.items():
        entries[name] = {
            "offset": cursor,
            "dtype": str(tensor.dtype).removeprefix("torch."),
            "shape": list(tensor.shape),
        }
        cursor += -(-tensor.numel() * tensor.element_size() // ALIGNMENT) * ALIGNMENT
    return entries, max(cursor, ALIGNMENT)


def _new_block(kind: str, nbytes: int, device: torch.device) -> _Block:
    if kind == "cuda":
        shared = device_share.export_block(nbytes, device)
        return _Block("cuda", shared.size, shared.fd, shared, shared.device)
    size = -(-nbytes // mmap.PAGESIZE) * mmap.PAGESIZE
    fd = os.memfd_create("kv-bundle", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
        buffer = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _HOST_SEALS)
    except BaseException:
        os.close(fd)
        raise
    return _Block("host", size, fd, buffer, torch.device("cpu"))


class BundleSender:
    """The worker's side: `send(name, value, device)` puts the value's tensors in a new block and sends its
    layout and descriptor. Blocks stay alive (for the parent to map) until `release()`, which the worker calls
    once the parent has judged them (the candidate's at the job's end, the reference's at the next case)."""

    def __init__(self, fd: int) -> None:
        self.channel = socket.socket(fileno=fd)
        self.live: list[_Block] = []

    def send(self, name: str, value: Any, device: torch.device) -> None:
        """A block on `device` (a CUDA block on a GPU, a sealed memfd on the CPU) holding `value`'s tensors."""
        structure, tensors = encode_value(value)
        entries, nbytes = _layout(tensors)
        block = _new_block("cuda" if device.type == "cuda" else "host", nbytes, device)
        try:
            for tensor_name, tensor in tensors.items():
                entry = entries[tensor_name]
                target = block.view(entry["offset"], tensor.dtype, tuple(entry["shape"]))
                if target.numel():
                    target.copy_(tensor)
            if block.kind == "cuda":
                torch.cuda.synchronize(block.device)  # the parent reads it from another context
            packet = json.dumps({"name": name, "kind": block.kind, "size": block.size, "structure": structure,
                                 "tensors": entries}).encode()  # fmt: skip
            if len(packet) > MAX_PACKET:
                raise TensorFileError(f"a value of {len(tensors)} tensors has a layout too large to share")
            socket.send_fds(self.channel, [packet], [block.fd])
        except BaseException:
            block.close()
            raise
        self.live.append(block)

    def release(self) -> None:
        while self.live:
            self.live.pop().close()


@dataclass
class BundleInbox:
    """The parent's side of one worker's bundles: `collect()` takes what has arrived, `open(name)` maps one
    and rebuilds its value, `release()` unmaps everything opened (after judging: the values are views), and
    `close()` also lets go of every bundle received (the job's end)."""

    channel: socket.socket
    kind: str  # the only kind of block this inbox maps: "cuda" on a GPU platform, "host" on the CPU
    device: torch.device
    pending: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    opened: list[_Block] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)  # what a sender sent that was not a bundle

    def collect(self) -> None:
        """Take every packet that has arrived, without waiting."""
        self.channel.setblocking(False)
        while True:
            try:
                packet, fds, flags, _ = socket.recv_fds(self.channel, MAX_PACKET + 1, 2)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:
                self.refusals.append(f"the bundle channel failed: {error}")
                return
            if not packet and not fds:
                return  # the worker's end is closed
            problem = self._refusal(packet, fds, flags)
            if problem is not None:
                for fd in fds:
                    os.close(fd)
                self.refusals.append(problem)
                continue
            message = json.loads(packet)
            stale = self.pending.pop(message["name"], None)
            if stale is not None:  # sent again under the same name: the last one counts
                os.close(stale[0])
            self.pending[message["name"]] = (fds[0], message)

    def _refusal(self, packet: bytes, fds: list[int], flags: int) -> str | None:
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC) or len(packet) > MAX_PACKET:
            return "a bundle packet too large, or with too many descriptors"
        if len(fds) != 1:
            return f"a bundle packet with {len(fds)} descriptors, not 1"
        if len(self.pending) >= MAX_PENDING:
            return f"more than {MAX_PENDING} bundles waiting"
        try:
            message = json.loads(packet)
        except ValueError:
            return "a bundle layout that is not JSON"
        if not (isinstance(message, dict) and isinstance(message.get("name"), str) and isinstance(message.get("size"), int)
                and isinstance(message.get("tensors"), dict) and "structure" in message):  # fmt: skip
            return "a bundle layout without a name, a size, its tensors and its structure"
        return None

    def open(self, name: str) -> Any:
        """The value sent under `name`, its tensors views into the mapped block (valid until `release`)."""
        self.collect()
        if name not in self.pending:
            refused = f" (refused from this worker: {self.refusals[-1]})" if self.refusals else ""
            raise TensorFileError(f"no shared output named {name!r} arrived{refused}")
        fd, message = self.pending[
            name
        ]  # kept until `close`: an output is judged more than once (a repeat run)
        if message.get("kind") != self.kind:
            raise TensorFileError(f"a shared output of kind {message.get('kind')!r}, not {self.kind!r}")
        block = self._map(os.dup(fd), int(message["size"]))
        self.opened.append(block)
        tensors = {}
        for tensor_name, entry in message["tensors"].items():
            try:
                dtype = getattr(torch, str(entry["dtype"]))
                if not isinstance(dtype, torch.dtype):
                    raise TypeError(entry["dtype"])
                tensors[str(tensor_name)] = block.view(entry["offset"], dtype, tuple(entry["shape"]))
            except (KeyError, TypeError, AttributeError, device_share.DeviceShareError) as error:
                raise TensorFileError(f"a shared tensor that cannot be read: {error}") from None
        return decode_value(message["structure"], tensors, self.device)

    def _map(self, fd: int, size: int) -> _Block:
        if self.kind == "cuda":
            try:
                shared = device_share.import_block(
                    fd, size, self.device
                )  # owns fd from here, on success or not
            except device_share.DeviceShareError as error:
                raise TensorFileError(
                    f"a shared output that is not a mappable device block: {error}"
                ) from None
            return _Block("cuda", shared.size, shared.fd, shared, shared.device)
        try:
            info = os.fstat(fd)
            seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        except OSError as error:
            os.close(fd)
            raise TensorFileError(f"a shared output that is not a sealed memory file: {error}") from None
        if (
            not stat.S_ISREG(info.st_mode)
            or seals & _HOST_SEALS != _HOST_SEALS
            or not 0 < size <= info.st_size
        ):
            os.close(fd)
            raise TensorFileError(
                f"a shared output that is not a sealed memory file of at least {size} bytes"
            )
        try:
            buffer = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
        except (OSError, ValueError) as error:
            os.close(fd)
            raise TensorFileError(f"a shared output that cannot be mapped: {error}") from None
        return _Block("host", size, fd, buffer, torch.device("cpu"))

    def release(self) -> None:
        """Unmap every opened block (after judging: the values opened are views into them)."""
        while self.opened:
            self.opened.pop().close()

    def close(self) -> None:
        """`release`, and close what is still waiting (the job is over, or the worker is gone)."""
        self.release()
        for fd, _ in self.pending.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pending.clear()
