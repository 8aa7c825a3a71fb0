"""What the judge protocol costs per output: a worker ships one output to its parent, which judges it.

    python bench/judge_transfer.py                    # 4, 16, 64, 128, 256 MB float32 outputs
    python bench/judge_transfer.py --sizes-mb 4,16 --before-up-to-mb 16

The worker side (a child process, as the sandboxed worker is one) encodes one `judge` message; the
parent side reads it off the pipe, authenticates it, unpacks the output and runs `compare_outputs`
against the expected tensor. Three wire formats, side by side in one run:
- `before`: what the protocol was before this bench (the output base64 in a JSON body, that body a
  JSON string in a JSON line; the parent's reader did `bytes += chunk` and searched the whole buffer
  for a newline per 64 KiB pipe read: quadratic, 350 MB did not arrive in 300 s). Only sizes up to
  `--before-up-to-mb`.
- `base64 line`: the same line format with the linear reader.
- `raw, 64 KiB pipe`: `device_worker.encode_message` (a JSON header, then the output's bytes raw) read
  back as it was until 2026-12-01: through the default 64 KiB pipe, appending every read to the reader's
  buffer and slicing each part out of it (two more copies of the output).
- `now`: the same message read back by `PersistentWorker._read_message`, the code the pipeline runs: a
  1 MiB pipe (`widen_pipe`) and each part read straight into its own memory.

Why it matters: a performance case's output is large (softmax 1024×32000 float32 is 131 MB) and each
timed spot check ships one, inside the worker's per-job time limit.
"""

from __future__ import annotations

import argparse
import base64
import hmac
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolchain.compare import compare_outputs  # noqa: E402
from toolchain.device_worker import PersistentWorker, _mac, encode_message, widen_pipe  # noqa: E402
from toolchain.judge import pack, unpack  # noqa: E402
from toolchain.sandbox import SandboxLimits  # noqa: E402

KEY = b"bench-key"
RAW_WIRES = ("raw, 64 KiB pipe", "now")  # encode_message's format: a JSON header, then the raw bytes


def worker_side(write_end: int, megabytes: int, wire: str) -> None:
    """In the child: encode one judge message; the encode time on stdout, the message on `write_end`."""
    output = torch.arange(megabytes * (1 << 20) // 4, dtype=torch.float32)
    started = time.perf_counter()
    if wire in RAW_WIRES:
        body = {"type": "judge", "scope": "bench", "label": "check0", "output": pack(output), "atol": 1e-5,
                "rtol": 1e-4}  # fmt: skip
        parts = encode_message(KEY, 1, body)
    else:
        text = json.dumps({"type": "judge", "scope": "bench", "label": "check0", "atol": 1e-5, "rtol": 1e-4,
                           "output": base64.b64encode(pack(output)).decode()})  # fmt: skip
        parts = [(json.dumps({"id": 1, "body": text, "mac": _mac(KEY, 1, text)}) + "\n").encode()]
    print(time.perf_counter() - started, flush=True)
    for part in parts:
        view = memoryview(part)
        while view:
            view = view[os.write(write_end, view) :]
    os.close(write_end)


def read_line_before_fix(read_end: int) -> bytes:
    buffer = b""
    while b"\n" not in buffer:
        select.select([read_end], [], [])
        buffer += os.read(read_end, 1 << 20)
    return buffer.partition(b"\n")[0]


class AppendingReader(PersistentWorker):
    """The parent's reader before 2026-12-01: every read appended to the buffer, each part sliced out."""

    def _read_exact(self, size: int, deadline: float) -> bytes | None:
        while len(self._buffer) < size:
            if not self._read_more(deadline):
                return None
        blob = bytes(self._buffer[:size])
        del self._buffer[:size]
        self._scanned = 0
        return blob


def parent_worker(read_end: int, wire: str) -> PersistentWorker:
    kind = AppendingReader if wire == "raw, 64 KiB pipe" else PersistentWorker
    worker = kind("check", sys.executable, {}, SandboxLimits(60.0, None))
    worker._replies, worker._key = read_end, KEY  # the parent's own reader, on our pipe
    return worker


def one_transfer(megabytes: int, wire: str) -> dict[str, float]:
    expected = torch.arange(megabytes * (1 << 20) // 4, dtype=torch.float32)
    read_end, write_end = os.pipe()
    if wire == "now":
        widen_pipe(read_end)  # as PersistentWorker._start does
    child = subprocess.Popen([sys.executable, __file__, "--worker", str(write_end), str(megabytes), wire],
                             pass_fds=(write_end,), stdout=subprocess.PIPE, text=True)  # fmt: skip
    os.close(write_end)
    assert child.stdout is not None
    encode = float(child.stdout.readline())  # the child has encoded; its writes start now
    started = time.perf_counter()
    worker = parent_worker(read_end, wire)
    if wire in RAW_WIRES:
        body = worker._read_message(1, time.monotonic() + 3600)
        read_done = time.perf_counter()
        assert isinstance(body, dict), "the message did not authenticate"
        output = unpack(body["output"])
    else:
        line = (
            read_line_before_fix(read_end) if wire == "before" else worker._read_line(time.monotonic() + 3600)
        )
        assert line is not None
        read_done = time.perf_counter()
        reply = json.loads(line)
        assert hmac.compare_digest(reply["mac"], _mac(KEY, reply["id"], reply["body"]))
        body = json.loads(reply["body"])
        output = unpack(base64.b64decode(body["output"]))
    comparison = compare_outputs(expected, output, body["atol"], body["rtol"])
    assert comparison.failure_kind is None, comparison.message
    finished = time.perf_counter()
    child.wait()
    os.close(read_end)
    return {"encode": encode, "read": read_done - started, "decode_judge": finished - read_done,
            "total": encode + finished - started}  # fmt: skip


def main() -> int:
    if sys.argv[1:2] == ["--worker"]:
        worker_side(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes-mb", default="4,16,64,128,256")
    parser.add_argument("--before-up-to-mb", type=int, default=16)
    args = parser.parse_args()
    print(f"judge round trip of one float32 output, {os.cpu_count()} CPUs, torch {torch.__version__}\n")
    print(
        "| output MB | wire format | worker encode s | transfer + read s | parent decode + judge s | total s |"
    )
    print("|---|---|---|---|---|---|")
    for megabytes in (int(size) for size in args.sizes_mb.split(",")):
        for wire in ("before", "base64 line", "raw, 64 KiB pipe", "now"):
            if wire == "before" and megabytes > args.before_up_to_mb:
                continue
            t = one_transfer(megabytes, wire)
            print(f"| {megabytes} | {wire} | {t['encode']:.2f} | {t['read']:.2f} | {t['decode_judge']:.2f} | "
                  f"{t['total']:.2f} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
