"""Whether a candidate's output is plain data: tensors (or parameters) in tuples and lists, by exact type.

A subclass runs the candidate's code whenever the harness reads the output: a `list` subclass's `__iter__`
computes the result after the monitor stopped watching (or after the timed call's end event), a tensor subclass's
`__torch_function__` does the same on every read, and an object whose `__class__` says `Tensor` passes
`isinstance`. So the real type (`type(value)`) is judged, before anything else reads the output.
"""

from __future__ import annotations

from typing import Any

import torch

PLAIN_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)
PLAIN_NESTS = (tuple, list)


def plain_leaves(value: Any) -> list[Any]:
    """The leaves of an output nest, opening exact tuples and lists only (each leaf to be judged)."""
    if type(value) in PLAIN_NESTS:
        return [leaf for item in value for leaf in plain_leaves(item)]
    return [value]


def output_type_problem(output: Any) -> tuple[str, str] | None:
    """(failure kind, message) for the first leaf that is not a plain tensor; None when all are."""
    for index, leaf in enumerate(plain_leaves(output)):
        kind = type(leaf)
        where = f"output {index}"
        if kind in PLAIN_TENSOR_TYPES:
            continue
        if issubclass(kind, torch.Tensor):
            return "integrity_reject", f"tensor_subclass: {where} is a {kind.__name__}, not a plain tensor"
        if issubclass(kind, PLAIN_NESTS):
            return (
                "interface_error",
                f"{where} is of type {kind.__name__}, expected a plain tuple or list of tensors",
            )
        return "interface_error", f"{where} is {kind.__name__}, expected a torch.Tensor"
    return None
