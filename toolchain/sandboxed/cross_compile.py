"""Worker logic: prove that the kernels a candidate launched compile for a real GPU target.

Runs in a jailed `cross_compile` worker (`kernelvault.toolchain.worker_lane`) started WITHOUT `TRITON_INTERPRET` (an
interpreted process cannot also compile). It imports the candidate under the same guards as the check
(no PyTorch compute, threads, processes or writes outside its folders at import; an `integrity_reject`
otherwise), looks each launched kernel up by
name, rebuilds the compile signature from the argument types and constexpr values recorded at launch
(`launches.jsonl`, written by `kernelvault.toolchain.triton_worker`), and calls `triton.compile` for the target
(default AMD CDNA3: `GPUTarget("hip", "gfx942", 64)`). No GPU is needed: the Triton wheel ships the
LLVM backends, LLD and ptxas. Its result is the worker's reply.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kernelvault.toolchain.function_tasks import device_redirect
from kernelvault.toolchain.sandboxed.requests import Compile
from kernelvault.toolchain.sandboxed.source_text import new_module, run_source
from kernelvault.toolchain.sandboxed.tensor_files import triton_scalar_dtype


def unwrap_jit(obj: Any) -> Any:
    """Autotuner and Heuristics wrap the JITFunction in `.fn`; peel them off."""
    from triton.runtime.jit import JITFunction

    seen = 0
    while not isinstance(obj, JITFunction) and hasattr(obj, "fn") and seen < 8:
        obj, seen = obj.fn, seen + 1
    return obj if isinstance(obj, JITFunction) else None


def _scalar_type(description: dict[str, Any]) -> str:
    kind = description["kind"]
    if kind == "tensor":
        return "*" + description["dtype"]
    if kind == "bool":
        return "i1"
    if kind == "int":
        value = description["value"]
        if -(2**31) <= value < 2**31:
            return "i32"
        return "i64" if -(2**63) <= value < 2**63 else "u64"
    if kind == "float":
        return "fp32"
    raise NotRebuildable(f"an argument of kind {kind!r} ({description.get('repr', '?')[:80]})")


class NotRebuildable(ValueError):
    """A recorded launch argument this stage cannot turn into a compile signature (a tuple, an object): the
    kernel is not compiled, and the stage says so. It never counts as compiled: an argument the compiler cannot
    type is also how host Python gets into an interpreted kernel (a method of an object passed as an argument)."""


def _constexpr_value(description: dict[str, Any]) -> Any:
    kind = description["kind"]
    if kind == "none":
        return None
    if kind == "tl_dtype":  # recorded by its name (`fp16`), which is not an attribute of tl (`float16` is)
        return triton_scalar_dtype(description["value"])
    if kind in ("int", "float", "bool", "str"):
        return description["value"]
    raise ValueError(f"cannot rebuild a constexpr from {description}")


def build_signature(
    kernel: Any, arguments: dict[str, dict[str, Any]]
) -> tuple[dict[str, str], dict[str, Any]]:
    """The (signature, constexprs) pair that `triton.compiler.ASTSource` takes, from recorded arguments."""
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    for param in kernel.params:
        if param.name in arguments:
            description = arguments[param.name]
        elif param.has_default:
            description = {"kind": "default"}
        else:
            raise ValueError(f"argument {param.name} was not passed")
        if param.is_constexpr or description["kind"] in ("none", "tl_dtype", "str", "default"):
            signature[param.name] = "constexpr"
            constexprs[param.name] = (
                param.default if description["kind"] == "default" else _constexpr_value(description)
            )
        else:
            signature[param.name] = _scalar_type(description)
    return signature, constexprs


class CrossCompileHost:
    """Answers `compile` requests (`kernelvault.toolchain.sandboxed.serve.serve`)."""

    def handle(self, request: Compile) -> dict[str, Any]:
        return compile_launches(request)


def compile_launches(job: Compile) -> dict[str, Any]:
    from triton.backends.compiler import GPUTarget

    target = GPUTarget(job.backend, job.arch, job.warp_size)
    name = job.module_name  # unique per job in a persistent worker
    module = new_module(Path(job.candidate_path), name)
    try:
        return _compile_module(job, module, target)
    finally:
        sys.modules.pop(name, None)


def _import_watched(job: Compile, module: Any) -> dict[str, Any] | None:
    """Run the candidate module under the guards; a failure reply, or None when it imported cleanly."""
    from kernelvault.toolchain.sandboxed.integrity import ProcessGuards, TorchComputeMonitor, Violations

    violations = Violations()
    guards = ProcessGuards(violations, [Path(job.candidate_path).parent, Path(os.environ.get("TMPDIR", "/tmp")),
                                        Path(os.environ.get("TRITON_CACHE_DIR", "/tmp"))])  # fmt: skip
    monitor = TorchComputeMonitor(violations, job.allowed_ops)
    guards.install()
    failure = None
    try:
        monitor.start("importing the candidate", construction=True)
        with monitor, device_redirect("cpu"), launches_skipped():
            run_source(module, Path(job.candidate_path))
    except BaseException as error:  # noqa: BLE001 - the candidate's failure, reported as such
        failure = f"candidate failed to import: {type(error).__name__}: {error}"[:2000]
    finally:
        monitor.stop()
        guards.uninstall()
    if violations.first:
        return {"ok": False, "kernels": [], "log": violations.first, "failure_kind": "integrity_reject",
                "failure_message": violations.first}  # fmt: skip
    if failure is not None:
        return {"ok": False, "kernels": [], "log": failure}
    return None


@contextlib.contextmanager
def launches_skipped() -> Iterator[None]:
    """Kernel launches at import (a model's "example usage" lines) do nothing here: this process has no
    driver to launch on, and the interpreted check already ran them and recorded what they launched, which
    is what gets compiled. Likewise `device='cuda'` at import means this machine's CPU (`device_redirect`)."""
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    saved = (JITFunction.run, Autotuner.run)
    JITFunction.run = Autotuner.run = lambda *args, **kwargs: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        JITFunction.run, Autotuner.run = saved  # type: ignore[method-assign]


def _compile_module(job: Compile, module: Any, target: Any) -> dict[str, Any]:
    import triton

    failed = _import_watched(job, module)
    if failed is not None:
        return failed

    launches = [json.loads(line) for line in Path(job.launches_path).read_text().splitlines() if line.strip()]
    kernels, failures = [], []
    compiled_keys: set[str] = set()
    for launch in launches:
        name = launch["kernel"]
        kernel = unwrap_jit(getattr(module, name, None))
        started = time.perf_counter()
        entry: dict[str, Any] = {"kernel": name, "ok": False, "seconds": 0.0, "log": ""}
        if kernel is None:
            entry["log"] = f"kernel {name} is not a module-level @triton.jit function"
        else:
            try:
                signature, constexprs = build_signature(kernel, launch["args"])
                options = {
                    key: value
                    for key, value in launch.get("options", {}).items()
                    if key in ("num_warps", "num_stages")
                }
                # Launches that differ only in runtime scalar values share one binary: compile it once.
                key = json.dumps([name, signature, constexprs, options], sort_keys=True, default=str)
                if key in compiled_keys:
                    continue
                compiled_keys.add(key)
                source = triton.compiler.ASTSource(fn=kernel, signature=signature, constexprs=constexprs)
                compiled = triton.compile(source, target=target, options=options)
                entry.update(
                    ok=True,
                    log=f"{len(compiled.asm.get('hsaco', compiled.asm.get('cubin', b'')))} bytes of code",
                )
            except NotRebuildable as error:  # what cannot be compiled was not compiled: no credit for it
                entry["log"] = f"not compiled: {error}"
            except Exception as error:  # noqa: BLE001 - compiler errors are the result we want
                entry["log"] = f"{type(error).__name__}: {error}"[-6000:]
        entry["seconds"] = time.perf_counter() - started
        kernels.append(entry)
        if not entry["ok"]:
            failures.append(f"{name}: {entry['log']}")
    return {"ok": not failures and bool(kernels), "kernels": kernels, "log": "\n".join(failures)}
