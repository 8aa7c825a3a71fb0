"""The module a function or kernel task's calls run through, in both workers (`function_module`).

A function task's case is a list of recorded calls (`kernelvault.toolchain.function_tasks`), a kernel task's a
list of recorded launches (`kernelvault.toolchain.kernel_tasks`); `FunctionCall.forward` makes each of them in
order, differentiates the calls the test differentiated, and returns what the judge compares. It sits above
both task formats, which know nothing of it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from kernelvault.toolchain.function_tasks import (
    device_redirect,
    judged_result,
    tensor_leaves,
    upstream_gradient,
)
from kernelvault.toolchain.kernel_tasks import replay_grid


def function_module(functions: dict[str, Callable[..., Any]], device: Any) -> Any:
    """The task's functions as a module whose forward makes every call of a case, each `[name, args,
    kwargs]` (see the module docstring); on the CPU, under `device_redirect`."""
    import torch

    on_cpu = getattr(device, "type", device) == "cpu"

    class FunctionCall(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.functions = dict(functions)
            self.upstream_gradients: dict[tuple[Any, ...], Any] = {}

        def forward(self, *calls: Any) -> tuple[Any, ...]:
            results = []
            with device_redirect(device) if on_cpu else contextlib.nullcontext():
                for name, args, kwargs, *launch in calls:
                    # a kernel launch is `[name, args, kwargs, grid]` (`kernelvault.toolchain.kernel_tasks`)
                    if launch:
                        self.functions[name][replay_grid(launch[0])](*args, **kwargs)
                        returned = None  # a launch's handle is no result: its outputs are its arguments
                        results.append(judged_result(returned, args, kwargs))
                        continue
                    differentiated = [leaf for leaf in tensor_leaves([args, kwargs]) if leaf.requires_grad]
                    if not differentiated:
                        results.append(judged_result(self.functions[name](*args, **kwargs), args, kwargs))
                        continue
                    with torch.enable_grad():
                        returned = self.functions[name](*args, **kwargs)
                        gradients = self.gradients(name, len(results), returned, differentiated)
                    results.append((*judged_result(returned, args, kwargs), gradients))
            return tuple(results)

        def gradients(self, name: str, index: int, returned: Any, leaves: list[Any]) -> list[Any]:
            """The gradients of a call's arguments that require one (see the module docstring)."""
            outputs = [leaf for leaf in tensor_leaves(returned) if leaf.requires_grad]
            if not outputs:
                raise RuntimeError(f"the test differentiates call {index} of {name}, and none of its outputs "
                                   "carries a gradient (no backward)")  # fmt: skip
            upstream = [self.upstream(index, number, output) for number, output in enumerate(outputs)]
            found = torch.autograd.grad(outputs, leaves, upstream, allow_unused=True)
            # an argument the outputs do not depend on has a zero gradient (None from autograd)
            return [
                torch.zeros_like(leaf) if grad is None else grad
                for grad, leaf in zip(found, leaves, strict=True)
            ]

        def upstream(self, index: int, number: int, output: Any) -> Any:
            key = (index, number, tuple(output.shape), output.dtype, output.device)
            if key not in self.upstream_gradients:  # drawn once: a timed call reuses it
                self.upstream_gradients[key] = upstream_gradient(index, number, output)
            # a copy per call: a backward may write into its incoming gradient (TritonBench-G's fast_layernorm
            # computes dX in place in dY), and the next call must start from the same values
            return self.upstream_gradients[key].clone()

    return FunctionCall()
