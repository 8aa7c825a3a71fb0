"""Inputs and outputs between processes as files: safetensors, plus the shape of the value around them.

The reference worker writes a case's inputs and expected outputs; the parent hands the inputs to the
candidate's worker (a hard link into a folder that worker sees read-only) and judges the candidate's output
file against the expected one. Nothing is pickled: safetensors reads untrusted files safely, and the value's
structure (a tuple of tensors and scalars, say) travels as JSON in the file's metadata.

A tensor keeps its dtype, shape and strides where its layout is dense (a transposed input stays
transposed); overlapping or gappy layouts arrive contiguous. Besides tensors: numbers, strings, None,
dtypes, Triton's scalar dtypes (`tl.float8e5`, an argument of conversion kernels' entries), devices (an
accelerator arrives as the reader's device), and lists, tuples and string-keyed dicts of
them (a function task's keyword arguments); anything else is refused with a one-line error
(`TensorFileError`).

Where writer and reader both ask (`arguments`: the input file of a function task's calls, `function_tasks`),
two more things travel. A leaf tensor that requires grad arrives as one (the test differentiates through it).
An `nn.Module` passed as an argument (`fast_layernorm(layernorm, X)`) arrives as a `ModuleArgument`: a plain
module holding the same tensors, plain attributes and child modules under the same names, none of the
original's code (its class is not sent, only its name for messages; calling it raises). Elsewhere neither is
written nor read.
"""

from __future__ import annotations

import json
import math
import resource
import sys
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file

_STRUCTURE = "kv_structure"
_COMPLEX = "kv_complex"  # the names of tensors stored as view_as_real pairs


class TensorFileError(ValueError):
    """A value that cannot travel as a tensor file, or a file that is not one of ours."""


def _dense_strides(tensor: torch.Tensor) -> bool:
    """True when the tensor's elements fill exactly numel() slots of its storage (a permutation of dims)."""
    return tensor.numel() > 0 and _dense_layout(tuple(tensor.shape), tuple(tensor.stride()))


def _dense_layout(shape: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    """True when `stride` lays `shape` out densely: a permutation of its dims, no gaps, no overlaps."""
    dims = sorted((step, size) for size, step in zip(shape, stride, strict=True) if size != 1)
    expected = 1
    for step, size in dims:
        if step != expected:
            return False
        expected *= size
    return True


class ModuleArgument(torch.nn.Module):
    """An `nn.Module` argument as it arrives in a worker (see the module docstring): data only."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.original_name = name

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"a {self.original_name} passed as an argument arrives as its data: it cannot be called"
        )

    def extra_repr(self) -> str:
        return self.original_name


def _set_member(module: ModuleArgument, key: Any, value: Any) -> None:
    # a plain identifier that is not a member of nn.Module itself (`forward`, `to`, `_parameters`, `__class__`)
    if (
        not isinstance(key, str)
        or not key.isidentifier()
        or key.startswith("_")
        or hasattr(torch.nn.Module, key)
    ):
        raise TensorFileError(f"a module argument's member {str(key)[:40]!r} is not a plain name")
    if isinstance(value, torch.nn.Module):
        setattr(module, key, value)  # a child, registered as nn.Module registers children
    else:  # tensors and settings as plain attributes, already on the device
        object.__setattr__(module, key, value)


def encode_value(value: Any, arguments: bool = False) -> tuple[Any, dict[str, torch.Tensor]]:
    """A tensor, or a nest of tensors and plain scalars, as (its structure as JSON-able data, its tensors by
    name): each tensor detached and contiguous, on its own device; `decode_value` is the inverse. Raises
    TensorFileError for a value that cannot travel."""
    tensors: dict[str, torch.Tensor] = {}

    def encode(item: Any) -> Any:
        if isinstance(item, torch.Tensor):
            name = f"t{len(tensors)}"
            detached = item.detach()
            tensors[name] = detached.contiguous()
            entry: dict[str, Any] = {"tensor": name}
            if not detached.is_contiguous() and _dense_strides(detached):
                entry["stride"] = list(detached.stride())
            if arguments and item.requires_grad and item.is_leaf:
                entry["grad"] = True
            return entry
        if isinstance(item, (list, tuple)):
            return {"tuple" if isinstance(item, tuple) else "list": [encode(inner) for inner in item]}
        if isinstance(item, dict):  # keyword arguments of a function task's call
            if not all(isinstance(key, str) for key in item):
                raise TensorFileError("cannot pass a dict with keys other than strings between processes")
            return {"dict": {key: encode(inner) for key, inner in item.items()}}
        if isinstance(item, torch.dtype):
            return {"dtype": str(item).removeprefix("torch.")}
        if isinstance(item, torch.device):  # the receiving worker's own device stands for an accelerator
            return {"device": item.type}
        if _is_triton_scalar_dtype(item):
            return {"triton_dtype": item.name}
        if item is None or isinstance(item, (bool, int, str)):
            return {"value": item}
        if isinstance(item, float):
            return {"value": item} if math.isfinite(item) else {"float": repr(item)}
        if arguments and isinstance(item, torch.nn.Module):
            return {"module": encode_module(item)}
        raise TensorFileError(f"cannot pass a {type(item).__name__} between processes")

    def encode_module(module: torch.nn.Module) -> dict[str, Any]:
        # what a function reads from a module argument: its tensors, its plain settings (eps, shapes, flags)
        # and its children; attributes that cannot travel (functions, other objects) are left out
        attributes = {}
        for key, value in vars(module).items():
            if key.startswith("_") or key == "training":
                continue
            try:
                attributes[key] = encode(value)
            except TensorFileError:
                continue
        return {
            "name": type(module).__name__,
            "tensors": {key: encode(tensor) for key, tensor in [
                *module.named_parameters(recurse=False), *module.named_buffers(recurse=False)
            ] if tensor is not None},
            "attributes": attributes,
            "children": {key: encode_module(child) for key, child in module.named_children()},
        }  # fmt: skip

    return encode(value), tensors


def _is_triton_scalar_dtype(item: Any) -> bool:
    # looked up, not imported: a value holding a Triton dtype was made by a process that imported Triton.
    # Scalar types only (exactly `tl.dtype`): a pointer or block type names memory, which does not travel.
    language = sys.modules.get("triton.language")
    return language is not None and type(item) is getattr(language, "dtype", None)


def triton_scalar_dtype(name: Any) -> Any:
    """Triton's scalar dtype of this name (`fp8e5`, `bf16`), or TensorFileError (a ValueError): names from
    another process are not trusted to be attributes of `triton.language`."""
    import triton.language as language  # only a file that names a Triton dtype needs Triton

    known = [*language.dtype.SINT_TYPES, *language.dtype.UINT_TYPES, *language.dtype.FP_TYPES]
    if name not in known:
        raise TensorFileError(f"unknown Triton dtype {str(name)[:40]!r} in a tensor file")
    return language.dtype(name)


def _size(count: int) -> str:
    return f"{count / 2**30:.1f} GiB" if count >= 2**30 else f"{count / 2**20:.0f} MiB"


def write_tensors(path: Path, value: Any, arguments: bool = False) -> None:
    """Write a tensor, or a nest of tensors and plain scalars, to `path` (CPU copies); `arguments`: mark the
    leaves that require grad (inputs)."""
    structure, tensors = encode_value(value, arguments)
    stored: set[int] = set()  # storages already in the file: safetensors refuses to write one twice
    on_host: dict[str, torch.Tensor] = {}
    complex_names: list[str] = []
    for name, tensor in tensors.items():
        copy = tensor.to("cpu")
        if copy.numel() and copy.untyped_storage().data_ptr() in stored:
            copy = copy.clone()  # one tensor twice in a value (a call returning its `out`)
        stored.add(copy.untyped_storage().data_ptr())
        if copy.is_complex():  # safetensors has no complex128: stored as (real, imaginary) pairs
            copy = torch.view_as_real(copy.resolve_conj())
            complex_names.append(name)
        on_host[name] = copy
    try:
        save_file(
            on_host,
            str(path),
            metadata={_STRUCTURE: json.dumps(structure), _COMPLEX: json.dumps(complex_names)},
        )
    except Exception as error:  # noqa: BLE001 - safetensors says only "I/O error"; say what is too big
        size = sum(tensor.numel() * tensor.element_size() for tensor in on_host.values())
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        over = f", over this worker's limit of {_size(limit)} per file" if 0 <= limit < size else ""
        raise TensorFileError(
            f"could not write {path.name} ({_size(size)} of tensors{over}): {error}"
        ) from None


def read_tensors(path: Path, device: torch.device | str = "cpu", arguments: bool = False) -> Any:
    """The value `write_tensors` wrote, its tensors on `device`; `arguments`: marked leaves require grad.
    Raises TensorFileError for anything else."""
    try:
        with safe_open(str(path), framework="pt", device="cpu") as handle:
            metadata = handle.metadata() or {}
            names = set(handle.keys())
            structure = json.loads(metadata[_STRUCTURE])
            tensors = {name: handle.get_tensor(name) for name in names}
            for name in json.loads(metadata.get(_COMPLEX, "[]")):
                # a forged name or a tensor that is not (…, 2) pairs of floats raises: refused below
                tensors[name] = torch.view_as_complex(tensors[name])
    except TensorFileError:
        raise
    except Exception as error:  # noqa: BLE001 - a missing, torn or foreign file: say which
        raise TensorFileError(f"not a readable tensor file ({type(error).__name__}: {error})") from None
    return decode_value(structure, tensors, torch.device(device), arguments)


def decode_value(
    structure: Any, tensors: dict[str, torch.Tensor], target: torch.device, arguments: bool = False
) -> Any:
    """The value `encode_value` encoded, its tensors on `target` (moved only where they are elsewhere). Raises
    TensorFileError for a structure that is not one of ours. `arguments`: the leaves marked as requiring grad
    do (a reader that does not ask, such as the parent's judge, gets plain tensors whatever a file says)."""

    def decode_tensor(entry: dict[str, Any]) -> torch.Tensor:
        tensor = tensors.get(entry["tensor"]) if isinstance(entry["tensor"], str) else None
        if tensor is None:
            raise TensorFileError(f"tensor {entry['tensor']!r} is missing from the file")
        if "stride" in entry:
            stride = [int(step) for step in entry["stride"]]
            # dense only: a sender's stride must not make the reader allocate more than the tensor holds
            if len(stride) != tensor.dim() or not _dense_layout(tuple(tensor.shape), tuple(stride)):
                raise TensorFileError("a stride that does not fit its tensor")
            laid_out = torch.empty_strided(tuple(tensor.shape), stride, dtype=tensor.dtype, device=target)
            return laid_out.copy_(tensor)
        return tensor.to(target)

    def decode_module(entry: Any) -> ModuleArgument:
        members = ("tensors", "attributes", "children")
        if not (isinstance(entry, dict) and set(entry) == {"name", *members}
                and all(isinstance(entry[part], dict) for part in members)):  # fmt: skip
            raise TensorFileError("malformed module argument in a tensor file")
        module = ModuleArgument(str(entry["name"]))
        for key, value in [*entry["tensors"].items(), *entry["attributes"].items()]:
            _set_member(module, key, decode(value))
        for key, child in entry["children"].items():
            _set_member(module, key, decode_module(child))
        return module

    def decode(entry: Any) -> Any:
        if not isinstance(entry, dict) or not entry:
            raise TensorFileError("malformed structure in a tensor file")
        if "tensor" in entry:
            if not set(entry) <= {"tensor", "stride", "grad"}:
                raise TensorFileError("malformed structure in a tensor file")
            tensor = decode_tensor(entry)
            # a leaf of its own (`to` or `copy_` may have returned the file's tensor); a forged flag on an
            # integer tensor raises RuntimeError, a malformed structure below
            return tensor.detach().requires_grad_(True) if arguments and entry.get("grad") is True else tensor
        if len(entry) != 1:  # everything but a tensor is one key
            raise TensorFileError("malformed structure in a tensor file")
        if "module" in entry and arguments:
            return decode_module(entry["module"])
        if "tuple" in entry:
            return tuple(decode(item) for item in entry["tuple"])
        if "list" in entry:
            return [decode(item) for item in entry["list"]]
        if "dict" in entry and isinstance(entry["dict"], dict):
            return {str(key): decode(item) for key, item in entry["dict"].items()}
        if "dtype" in entry:
            dtype = getattr(torch, str(entry["dtype"]), None)
            if not isinstance(dtype, torch.dtype):
                raise TensorFileError(f"unknown dtype {entry['dtype']!r} in a tensor file")
            return dtype
        if "triton_dtype" in entry:
            return triton_scalar_dtype(entry["triton_dtype"])
        if "device" in entry:
            return torch.device("cpu") if entry["device"] == "cpu" else target
        if "float" in entry:
            return float(entry["float"])
        if "value" in entry:
            return entry["value"]
        raise TensorFileError("malformed structure in a tensor file")

    try:
        return decode(structure)
    except TensorFileError:
        raise
    except (
        ValueError,
        TypeError,
        KeyError,
        RuntimeError,
        RecursionError,
    ) as error:  # a structure forged to break us
        raise TensorFileError(f"malformed structure in a tensor file ({type(error).__name__})") from None
