"""A worker's side of the channel: `python -m kernelvault.toolchain.sandboxed.serve KIND`, inside its jail.

Started by `kernelvault.toolchain.worker.PersistentWorker`. Reads the parent's key before any candidate
code exists, then answers one request at a time (`kernelvault.toolchain.sandboxed.requests`) with the host of
its kind: the candidate's (`candidate`), the reference's (`reference`) or the cross-compiler's
(`cross_compile`). Each reply is authenticated (`kernelvault.toolchain.sandboxed.channel`); after a job ends it
says whether this process may serve another one (the restart rules of `kernelvault.toolchain.worker_lane`).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

from kernelvault.toolchain.sandboxed.channel import mac
from kernelvault.toolchain.sandboxed.interpreter import drop_unasserted_overflow_checks, interpreter_options
from kernelvault.toolchain.sandboxed.requests import Compile, End, from_wire

STICKY_DEVICE_ERRORS = (
    "illegal memory access", "device-side assert", "unspecified launch failure", "misaligned address",
    "an illegal instruction", "cuda error: launch failure", "hiperror", "hip error", "memory access fault",
)  # fmt: skip


def read_key() -> str:
    """The parent's request-signing key, from an inherited pipe: read before any candidate code exists in this process."""
    fd = os.environ.pop("KV_KEY_FD", None)
    if fd is None:
        return ""
    try:
        return os.read(int(fd), 256).decode()
    finally:
        os.close(int(fd))


def process_state() -> dict[str, Any]:
    """What a candidate could leave changed for the next one, beyond the patch snapshot."""
    import torch

    return {
        "cwd": os.getcwd(), "env": dict(os.environ), "path": list(sys.path),
        "meta_path": [repr(finder) for finder in sys.meta_path], "path_hooks": [repr(hook) for hook in sys.path_hooks],
        "trace": repr(sys.gettrace()) + repr(sys.getprofile()), "threads": threading.active_count(),
        "dtype": str(torch.get_default_dtype()), "grad": torch.is_grad_enabled(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "candidates": sorted(name for name in sys.modules if name.startswith("kv_candidate")),
        "interpreter": interpreter_options(),
    }  # fmt: skip


def names_a_sticky_device_error(reply: dict[str, Any]) -> bool:
    message = str(reply.get("failure_message") or "").lower()
    return any(marker in message for marker in STICKY_DEVICE_ERRORS)


def device_still_answers() -> bool:
    """Whether this process's GPU context still works. After a sticky error (an illegal address, a device-side
    assert) every later call in the process fails with it, whoever makes the call: a reference worker that
    kept serving would refuse every later task with the first one's error (TritonBench-G on the H200: one
    gold kernel's illegal access refused 100 other tasks). Asked after a failed request only."""
    import torch

    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return True
    try:
        torch.cuda.synchronize()
        return bool(torch.ones(1, device="cuda").add_(1).item() == 2)
    except Exception:  # noqa: BLE001 - any error here means the context is gone
        return False


def _restart_reason(reply: dict[str, Any], snapshot: Any, baseline: dict[str, Any]) -> str | None:
    if reply.get("failure_kind") == "integrity_reject" or reply.get("late_violation"):
        return "integrity_reject"
    if names_a_sticky_device_error(reply):
        return "device_error"
    changed = snapshot.changed()
    if changed:
        return f"patched: {', '.join(changed[:3])}"
    now = process_state()
    different = [name for name in baseline if now[name] != baseline[name]]
    if "env" in different:
        keys = set(now["env"]) | set(baseline["env"])
        different.append(str(sorted(k for k in keys if now["env"].get(k) != baseline["env"].get(k))[:3]))
    return f"state_changed: {', '.join(different)}" if different else None


def settle_dynamos_patch() -> None:
    """Apply, before the patch snapshot, the one change that importing torch._dynamo makes to what it watches.

    A worker does not import torch._dynamo (over a second of its start), but a job may: a few PyTorch functions
    import it on their first call. The import wraps torch.manual_seed in `torch._disable_dynamo`, only while it is
    still `torch.random.manual_seed`, and the snapshot would name that as a patch (the candidate's, mid-job). The
    same lazy wrapper set here (it imports nothing until called) leaves the import nothing to change."""
    import torch

    if torch.manual_seed is torch.random.manual_seed:
        torch.manual_seed = torch._disable_dynamo(torch.manual_seed)


def serve(kind: str) -> int:
    key = read_key().encode()  # before anything else: no candidate code exists yet
    replies = os.fdopen(int(os.environ.pop("KV_RESULT_FD")), "wb")
    bundle_fd = os.environ.pop("KV_BUNDLE_FD", None)  # outputs as shared memory (`bundles`), when asked
    import torch

    from kernelvault.toolchain.sandboxed.bundles import BundleSender

    bundles = BundleSender(int(bundle_fd)) if bundle_fd is not None else None

    from kernelvault.toolchain.sandboxed.integrity import PatchSnapshot, patch_targets

    torch.set_grad_enabled(False)
    settle_dynamos_patch()
    if kind == "candidate":
        from kernelvault.toolchain.sandboxed.candidate import CandidateHost

        host: Any = CandidateHost(bundles)
    elif kind == "reference":
        from kernelvault.toolchain.sandboxed.reference import ReferenceHost

        host = ReferenceHost(bundles=bundles)
    else:
        from kernelvault.toolchain.sandboxed.cross_compile import CrossCompileHost

        host = CrossCompileHost()
    os.environ["TMPDIR"] = os.environ.get("TMPDIR", "/tmp")
    if kind != "cross_compile":
        # The CPU path's `torch.cuda.device(x.device.index)` around a launch selects nothing; installed before
        # the snapshot, so that it is the worker's own state and not a candidate's patch.
        from kernelvault.toolchain.function_tasks import cpu_device_selection

        cpu_device_selection()
        drop_unasserted_overflow_checks()  # the CPU path's candidates and gold kernels
    snapshot = PatchSnapshot(patch_targets())
    baseline = process_state()
    replies.write(json.dumps({"ready": True}).encode() + b"\n")
    replies.flush()
    sticky: str | None = None  # a sticky device error earlier in the job in hand
    while line := sys.stdin.readline():
        message = json.loads(line)
        request: Any = None
        try:
            request = from_wire(kind, message["body"])
            reply = host.handle(request)
        except BaseException as error:  # noqa: BLE001 - a harness bug must still leave a reply
            reply = {"failure_kind": "infrastructure_error", "failure_message": f"worker error: {error!r}"[:2000],
                     "harness_error": True}  # fmt: skip
        ended = isinstance(request, (End, Compile))
        retire = reply.pop("retire", None)  # the host says this process can no longer be trusted (its timing)
        if ended:  # a job ended: may this process serve the next one?
            reply["restart"] = sticky or _restart_reason(reply, snapshot, baseline)
            sticky = None
        elif retire:
            sticky = reply["restart"] = str(retire)
        elif reply.get("failure_kind") is not None and (
            names_a_sticky_device_error(reply) or (kind == "reference" and not device_still_answers())
        ):
            # A failed request that left the device unusable: the parent retires this process when the job
            # in hand ends (`PersistentWorker.retire`), so no later job inherits the error. The process stays
            # until then: a candidate's job still has its End to answer. The reference's worker is the one
            # probed: it has no End, and its failures are a task's, so a probe there costs nothing per candidate.
            sticky = reply["restart"] = "device_error"
        body = json.dumps(reply, default=str)
        replies.write(
            json.dumps({"id": message["id"], "body": body, "mac": mac(key, message["id"], body)}).encode()
            + b"\n"
        )
        replies.flush()
        if ended and reply.get("restart"):
            return 0  # the parent replaces us; exiting now frees the device sooner
    return 0


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1]))
