"""Values through shared memory between processes (toolchain/sandboxed/bundles.py), on the CPU's kind of block:
a sealed memfd sent over a Unix socket. The CUDA kind is the same protocol over `device_share`, probed on a GPU
(bench/device_share_probe.py). Every forgery a sender can make must be a one-line refusal that leaves no
descriptor open in the receiver."""

from __future__ import annotations

import json
import mmap
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from kernelvault.toolchain.sandboxed.bundles import MAX_PENDING, BundleInbox, bundle_socketpair
from kernelvault.toolchain.sandboxed.tensor_files import TensorFileError

ROOT = Path(__file__).resolve().parents[1]

SENDER = """
import sys, torch
from kernelvault.toolchain.sandboxed.bundles import BundleSender
sender = BundleSender(int(sys.argv[1]))
torch.manual_seed(0)
matrix = torch.randn(33, 17)
value = (matrix, torch.arange(10, dtype=torch.int64), matrix.t(), 2.5, {"scale": torch.tensor(3.0), "mode": "fast"})
sender.send("out/check0.st", value, torch.device("cpu"))
sender.send("out/empty.st", [torch.empty(0, 4), None], torch.device("cpu"))
print("sent", flush=True)  # as a worker replies to its request after sending: the parent opens after the reply
sys.stdin.read()  # until the test has read them: the blocks stay alive as long as the sender holds them
sender.release()
"""


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def inbox() -> Iterator[tuple[BundleInbox, socket.socket]]:
    parent, child = bundle_socketpair()
    box = BundleInbox(parent, "host", torch.device("cpu"))
    yield box, child
    box.close()
    parent.close()
    child.close()


def sealed_memfd(size: int, seals: int = 0) -> int:
    import fcntl

    fd = os.memfd_create("forged", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    if seals:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    return fd


def send(channel: socket.socket, message: object, fds: list[int]) -> None:
    packet = message if isinstance(message, bytes) else json.dumps(message).encode()
    socket.send_fds(channel, [packet], fds)
    for fd in fds:
        os.close(fd)


def layout(name: str, size: int, offset: int = 0, shape: list[int] | None = None, kind: str = "host") -> dict:
    return {"name": name, "kind": kind, "size": size, "structure": {"tensor": "t0"},
            "tensors": {"t0": {"offset": offset, "dtype": "float32", "shape": shape or [4]}}}  # fmt: skip


def test_a_nest_of_tensors_arrives_from_another_process_through_shared_memory(inbox) -> None:  # noqa: ANN001
    box, child = inbox
    before = open_descriptors()
    process = subprocess.Popen([sys.executable, "-c", SENDER, str(child.fileno())], pass_fds=(child.fileno(),),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    try:
        child.close()
        assert process.stdout is not None and process.stdout.readline() == b"sent\n"
        matrix, arange, transposed, scalar, keywords = box.open("out/check0.st")
        torch.manual_seed(0)
        expected = torch.randn(33, 17)
        assert torch.equal(matrix, expected) and torch.equal(arange, torch.arange(10))
        assert torch.equal(transposed, expected.t()) and transposed.stride() == expected.t().stride()
        assert scalar == 2.5 and keywords["mode"] == "fast" and keywords["scale"].item() == 3.0
        again = box.open(
            "out/check0.st"
        )  # an output is judged twice: against a repeat run, then the reference
        assert torch.equal(again[0], expected)
        empty, nothing = box.open("out/empty.st")
        assert empty.shape == (0, 4) and nothing is None
        with pytest.raises(TensorFileError, match="no shared output named 'out/other.st'"):
            box.open("out/other.st")
    finally:
        process.communicate(b"", timeout=60)
    box.close()
    assert open_descriptors() <= before


@pytest.mark.parametrize(
    ("forgery", "refusal"),
    [
        ("a regular file", "not a sealed memory file"),
        ("an unsealed memfd", "not a sealed memory file"),
        ("a size beyond the memfd", "not a sealed memory file of at least"),
        ("a tensor past the end of the block", "not inside the 4096-byte block"),
        ("a negative offset", "not inside"),
        ("a block of the device's kind", "of kind 'cuda', not 'host'"),
    ],
)
def test_a_forged_bundle_is_refused_and_closed(inbox, tmp_path: Path, forgery: str, refusal: str) -> None:  # noqa: ANN001
    import fcntl

    box, child = inbox
    seals = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
    before = open_descriptors()
    if forgery == "a regular file":
        (tmp_path / "plain").write_bytes(b"\0" * 4096)
        send(child, layout("x", 4096), [os.open(tmp_path / "plain", os.O_RDONLY)])
    elif forgery == "an unsealed memfd":
        send(child, layout("x", 4096), [sealed_memfd(4096)])
    elif forgery == "a size beyond the memfd":
        send(child, layout("x", 8192), [sealed_memfd(4096, seals)])
    elif forgery == "a tensor past the end of the block":
        send(child, layout("x", 4096, offset=4092, shape=[4]), [sealed_memfd(4096, seals)])
    elif forgery == "a negative offset":
        send(child, layout("x", 4096, offset=-16), [sealed_memfd(4096, seals)])
    else:
        send(child, layout("x", 4096, kind="cuda"), [sealed_memfd(4096, seals)])
    with pytest.raises(TensorFileError, match=refusal):
        box.open("x")
    box.close()
    assert open_descriptors() <= before


def test_packets_that_are_not_bundles_are_refused_without_keeping_a_descriptor(inbox) -> None:  # noqa: ANN001
    box, child = inbox
    before = open_descriptors()
    send(child, b"not json", [sealed_memfd(4096)])
    send(child, {"name": "x"}, [sealed_memfd(4096)])  # no size, tensors or structure
    send(child, layout("two", 4096), [sealed_memfd(4096), sealed_memfd(4096)])
    socket.send_fds(child, [json.dumps(layout("none", 4096)).encode()], [])
    box.collect()
    assert box.pending == {} and len(box.refusals) == 4
    assert "not JSON" in box.refusals[0] and "2 descriptors, not 1" in box.refusals[2]
    assert open_descriptors() <= before


def test_a_flood_of_bundles_stops_at_the_limit(inbox) -> None:  # noqa: ANN001
    box, child = inbox
    before = open_descriptors()
    child.setblocking(False)
    sent = 0
    for index in range(MAX_PENDING + 8):
        try:
            send(child, layout(f"b{index}", 4096), [sealed_memfd(4096)])
            sent += 1
        except BlockingIOError:  # the socket's buffer is full: read some, go on
            box.collect()
    box.collect()
    assert len(box.pending) == MAX_PENDING and len(box.refusals) == sent - MAX_PENDING
    assert open_descriptors() - before == MAX_PENDING  # only the accepted ones are open
    box.close()
    assert open_descriptors() <= before


def test_the_sender_cannot_shrink_a_block_under_the_readers_mapping() -> None:
    from kernelvault.toolchain.sandboxed.bundles import _new_block

    block = _new_block("host", 4096, torch.device("cpu"))
    try:
        with pytest.raises(PermissionError):
            os.ftruncate(block.fd, 0)  # a shrink would make the reader's next access a SIGBUS
        assert block.size == mmap.PAGESIZE
    finally:
        block.close()


@pytest.mark.parametrize(
    "structure",
    [
        {"tensor": "t0", "stride": [1 << 30]},  # a gappy layout: the reader would allocate 4 GiB for 4 floats
        {"tensor": "t0", "stride": ["a"]},
        {"tensor": "t0", "stride": [1, 1]},
        {"tensor": ["t0"]},
        {"tuple": 3},
        {"dict": {"x": {"dtype": "no_such_dtype"}}},
        {"value": 1, "float": "nan", "extra": 2},
        {"value": 1, "float": "nan"},
        {"tensor": "t0", "grad": True, "extra": 2},
    ],
)
def test_a_forged_structure_is_a_one_line_refusal(structure: object) -> None:
    from kernelvault.toolchain.sandboxed.tensor_files import decode_value

    with pytest.raises(TensorFileError):
        decode_value(structure, {"t0": torch.zeros(4)}, torch.device("cpu"))


def test_outputs_travel_as_shared_memory_by_default_only_on_a_gpu_that_can_export_them(monkeypatch) -> None:  # noqa: ANN001
    """`VerifyConfig.shared_outputs` None (the default): the CPU keeps files (#24 item 1), a CUDA GPU shares its
    outputs when the driver exports device memory as a descriptor and falls back to files when it does not,
    ROCm keeps files; an explicit setting wins where the transport exists (CPU and CUDA)."""
    from kernelvault.toolchain.platforms import PlatformChoice
    from kernelvault.toolchain.sandboxed import device_share
    from kernelvault.toolchain.verify import Verifier, VerifyConfig

    def verifier(platform: str, shared: bool | None = None) -> Verifier:
        made = Verifier(VerifyConfig(platform="cpu", shared_outputs=shared))
        made.choice = PlatformChoice(
            platform, "test", "test device"
        )  # what detect_platform says on that machine
        return made

    assert verifier("cpu").shares_outputs() is False
    assert verifier("cpu", shared=True).shares_outputs() is True
    refusals: dict[int, str | None] = {0: None}
    monkeypatch.setattr(device_share, "exportable", lambda index: refusals[index])
    assert verifier("cuda").shares_outputs() is True
    assert verifier("cuda", shared=False).shares_outputs() is False
    refusals[0] = "DeviceShareError: cuMemCreate: CUDA_ERROR_NOT_SUPPORTED (801)"
    assert verifier("cuda").shares_outputs() is False
    assert verifier("rocm").shares_outputs() is False
    assert verifier("rocm", shared=True).shares_outputs() is False
