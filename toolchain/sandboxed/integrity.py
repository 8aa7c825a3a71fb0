"""Integrity checks that run inside the candidate's worker: did it do the work, and did it do it fairly?

Every public kernel harness has been gamed. The checks here catch the known tricks while the candidate is
imported, built and run, and each yields an `integrity_reject` with a sub-reason (the first word of the
failure message):

- `torch_compute`: PyTorch ops other than glue (allocation, views, copies, fills; while building
  ModelNew, also the random fills of parameter initialisation), seen by a TorchDispatchMode, during the
  candidate's import, its construction and every forward, Triton's interpreted launches included.
- `monkey_patch`: a function of torch, torch.cuda, time, triton, the dispatch-mode machinery or of the
  harness itself was replaced: compared by the identity of the original objects, never by their
  `__module__` strings (which a replacement can set to anything).
- `threads`, `subprocess`: the candidate started a thread or a process.
- `raw_memory`: the candidate read or wrote memory by address through `ctypes` (`string_at`, `memmove`, ...).
- `filesystem_write`: the candidate opened a file for writing outside its folders.
- `host_data`: `Tensor.tolist`/`numpy`/`__array__`/`apply_`/`map_`/`map2_` called while candidate code ran
  (`TensorValueMethods`: they hand values to Python with no aten op the monitor could see). Printing a tensor
  shows no values in that process (`TensorPrinting`), so it is not one.
- `side_stream`: a kernel was launched on a stream other than the default one (GPU).
(Checked by the worker itself: `no_kernel_launched`, `modified_inputs`, `output_aliases_input`,
`tensor_subclass`; by the parent: `nondeterministic`, `cached_results`; statically: `fallback`, and every
rule of `kernelvault.toolchain.static_wall`.)

These are tripwires, not walls: they live in the candidate's process, and code that reaches below Python
(or past the static wall) can switch them off. What makes that pointless is elsewhere: the candidate's
process holds no expected output, no seed and no judge (`kernelvault.toolchain.judge` decides in the parent), the jail
(`kernelvault.toolchain.jail`) bounds what its process can reach, and the static wall refuses the machinery these
checks would otherwise have to catch (`gc`, frames, `ctypes`, `torch._C`, threads, raw file calls).
"""

from __future__ import annotations

import builtins
import contextlib
import io
import os
import subprocess
import sys
import sysconfig
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy
import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from kernelvault.toolchain.sandboxed.kernel_globals import defined_by
from kernelvault.toolchain.wall_policy import CONVERSION_METHODS

# aten ops a kernel's host code may use: allocation, views, layout copies, fills and metadata. Not
# `_local_scalar_dense` (`.item()`, `float(x)`) in general: reading a tensor's values into Python is how host
# code computes. Reading a 0-d *argument* is glue (`eps.item()`, `start.item()`: real answers pass such an
# argument to a kernel as a scalar; `TorchComputeMonitor.scalar_arguments`); a value of any other tensor is
# not; and a 0-d argument is read-only (an op that writes it, or a read after a kernel wrote it, is compute: the
# argument would be a scratch register between host code and PyTorch). Ops whose every tensor input the
# candidate's host code built from Python values in the same phase (`torch.prod(torch.tensor(shape))`: size
# arithmetic) are glue too: no input's data reaches them, within one budget per phase (`HOST_VALUES_MAX` values in
# all, made and derived); an output made that way is PyTorch's work, never the candidate's.
GLUE_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "new_zeros",
    "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "fill_", "zero_", "scalar_tensor", "arange",
    "view", "_unsafe_view", "reshape", "as_strided", "alias", "detach", "expand", "permute", "transpose", "t",
    "squeeze", "unsqueeze", "slice", "select", "narrow", "split", "split_with_sizes", "unbind", "flatten",
    "unflatten", "view_as", "expand_as", "contiguous", "clone", "copy_", "_to_copy", "to", "lift_fresh",
    "lift_fresh_copy", "is_same_size", "sym_size", "sym_stride", "sym_numel",
    "sym_storage_offset", "set_", "resize_", "record_stream", "_has_compatible_shallow_copy_type", "dim", "size",
    "stride", "storage_offset", "is_contiguous", "numel",
    "promote_types", "result_type", "can_cast",  # dtype arithmetic (seen in real answers: no tensor data)
    "view_as_real", "view_as_complex",  # views of a complex tensor's storage
    # an identity made from a shape, like `ones` (a kernel's starting permutation or Q, in real answers). Like
    # every constant factory here, it would be PyTorch doing the work of a task whose whole result is that
    # constant (TritonBench-T's `ones_like`): such a task needs its result written by a kernel to mean anything.
    "eye",
})  # fmt: skip
# Ops that make a tensor from Python values alone (`torch.tensor(list)`, `torch.arange(n)`): a host-made
# tensor, whose data no input reached. Only a few values count, per phase in all (a shape's sizes, a few
# constants): more values made from Python carry data that came from somewhere (`torch.tensor(x.tolist())`).
HOST_VALUES_MAX = 8
# The ops that turn a Python sequence into a tensor (`torch.tensor(list)`, `torch.as_tensor`, `torch.Tensor(list)`):
# each value is one host code supplied, so past the budget they are results worked out on the host (a fill,
# `zeros` or `arange`, supplies one value however large it is, and stays glue).
SEQUENCE_OPS = frozenset({"lift_fresh", "lift_fresh_copy"})
HOST_VALUE_OPS = frozenset({"lift_fresh", "lift_fresh_copy", "scalar_tensor", "arange", "full", "zeros", "ones",
                            "empty", "linspace", "logspace", "eye", "tensor"})  # fmt: skip
# What building a module may do beyond glue: the random fills that parameter initialisation uses.
INIT_OPS = frozenset({
    "uniform_", "normal_", "bernoulli_", "random_", "exponential_", "geometric_", "log_normal_", "cauchy_",
    "rand", "randn", "randint", "randperm", "normal", "uniform", "bernoulli", "rand_like", "randn_like",
})  # fmt: skip


class Violations:
    """The integrity violations seen so far, first one first."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def add(self, sub_reason: str, detail: str) -> None:
        entry = f"{sub_reason}: {detail}"
        if entry not in self.found:
            self.found.append(entry)

    @property
    def first(self) -> str | None:
        return self.found[0] if self.found else None


# The profiler's range markers, which dispatch as aten ops: the harness opens one around each launch it issues on a
# GPU (`kv::launch`, how the device record knows the candidate's kernels). Passed through inside a launch only: the
# candidate cannot reach `torch.profiler` (the static wall), and outside a launch they are nobody's glue.
RECORD_FUNCTION_OPS = frozenset(
    {"_record_function_enter", "_record_function_enter_new", "_record_function_exit"}
)


class TorchComputeMonitor(TorchDispatchMode):
    """Records aten ops outside the allowance while candidate code runs (`start` ... `stop`)."""

    SNAPSHOT_MUTABLE = (
        "active",
        "what",
        "construction",
        "scalar_arguments",
        "scalar_values",
        "constants",
        "host_values_left",
        "in_launch",
    )  # change while it works

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # False: PyTorch would wrap `__torch_dispatch__` in `torch._disable_dynamo`, whose first call imports
        # torch._dynamo (over a second of every candidate worker's start) and replaces torch.manual_seed, which
        # the patch snapshot would then name. Nothing under this monitor is compiled: the wall refuses torch.compile.
        return False

    def __init__(self, violations: Violations, allowed: Iterable[str] = ()) -> None:
        super().__init__()
        self.violations = violations
        self.allowed = GLUE_OPS | frozenset(allowed)
        self.active = False
        self.what = ""  # the phase, for the message: "forward", "building ModelNew", ...
        self.construction = False
        self.scalar_arguments: set[int] = set()  # data pointers of the phase's 0-d tensor arguments
        self.scalar_values: dict[int, torch.Tensor] = {}  # their values when the phase began, by data pointer
        self.constants: dict[int, weakref.ref[torch.Tensor]] = {}  # host-made tensors of this phase, by id
        self.host_values_left = HOST_VALUES_MAX  # the phase's budget of host-made values, all ops together
        self.in_launch = 0  # inside a kernel launch (`launching`)

    def start(self, what: str, construction: bool = False, scalar_arguments: Iterable[Any] = ()) -> None:
        """`scalar_arguments`: the phase's 0-d tensor arguments, whose values host code may read (never write)."""
        self.what, self.construction, self.active = what, construction, True
        scalars = [tensor for tensor in scalar_arguments if tensor.dim() == 0]
        self.scalar_arguments = {tensor.data_ptr() for tensor in scalars}
        self.scalar_values = {tensor.data_ptr(): tensor.detach().clone() for tensor in scalars}
        self.constants = {}
        self.host_values_left = HOST_VALUES_MAX

    def stop(self) -> None:
        self.active = False
        self.constants = {}
        self.scalar_values = {}

    def check_output(self, output: Any) -> None:
        """An output no kernel wrote that host-made values alone produced: PyTorch computed it from Python values
        (a result worked out on the host from what host code read, then made a tensor)."""
        for leaf in pytree.tree_leaves(output):
            if isinstance(leaf, torch.Tensor) and self._host_made(leaf):
                self.violations.add("torch_compute", f"an output made by PyTorch from Python values while {self.what} "
                                    "(no kernel wrote it)")  # fmt: skip

    @contextlib.contextmanager
    def launching(self) -> Iterator[None]:
        """Around a kernel launch: Triton's CPU interpreter copies every tensor argument back after the kernel
        (a 0-d one too, with the value the kernel left), which is the launcher's work, not host code's. A kernel
        that changes a 0-d argument is caught where the value is read (`_scalar_unchanged`)."""
        self.in_launch += 1
        try:
            yield
        finally:
            self.in_launch -= 1

    def _scalar_argument_written(self, func: Any, args: Any, kwargs: dict[str, Any]) -> bool:
        """The op writes into a 0-d argument (`copy_`, `fill_`, `out=`): a scratch register for host compute."""
        return any(leaf.data_ptr() in self.scalar_arguments for leaf in self._written(func, args, kwargs))

    def _scalar_unchanged(self, read: torch.Tensor) -> bool:
        """The 0-d argument still holds the value it came with (a kernel it was passed to may have written it)."""
        before = self.scalar_values.get(read.data_ptr())
        if before is None:
            return False
        if torch.equal(read, before):
            return True
        return bool(read.is_floating_point() and torch.isnan(read).item() and torch.isnan(before).item())

    def forget_written(self, launched_with: Iterable[Any] | None) -> None:
        """A kernel was launched with these arguments (None: arguments unseen, a native launch). A host-made
        tensor a kernel may have written holds the kernel's results, not Python values: `torch.zeros(1)` filled
        by a reduction kernel and then divided by n on the host is PyTorch finishing the work (the device record
        says the same on a GPU). Views share the storage, so storages are compared, not tensor objects."""
        if not self.constants:
            return
        if launched_with is None:
            self.constants = {}
            return
        written = {_storage_pointer(leaf) for leaf in launched_with if isinstance(leaf, torch.Tensor)}
        self.constants = {
            key: ref for key, ref in self.constants.items()
            if (tensor := ref()) is not None and _storage_pointer(tensor) not in written
        }  # fmt: skip

    def _host_made(self, tensor: torch.Tensor) -> bool:
        ref = self.constants.get(id(tensor))
        return ref is not None and ref() is tensor

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if not self.active:
            return func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func)
        foreign = next((kind for kind in types if not _torch_tensor_type(kind)), None)
        if foreign is not None:
            # its own __torch_dispatch__ runs after this mode has stepped aside for the op: what it computes
            # there is out of the monitor's sight, whatever the op was (a glue `clone`)
            self.violations.add("tensor_subclass", f"aten.{name} on a {foreign.__name__}, a tensor subclass that is "
                                f"not PyTorch's own, while {self.what}")  # fmt: skip
        if self.in_launch and name in RECORD_FUNCTION_OPS:
            return func(*args, **(kwargs or {}))  # the harness's own `kv::launch` range (`DeviceRecord`)
        host_made = False
        if self.constants:  # only then can an op's inputs all be host-made: no flattening on the common path
            tensors = [
                leaf for leaf in pytree.tree_leaves((args, kwargs or {})) if isinstance(leaf, torch.Tensor)
            ]
            host_made = bool(tensors) and all(self._host_made(tensor) for tensor in tensors)
        allowed = self.allowed | INIT_OPS if self.construction else self.allowed
        if (
            self.scalar_arguments
            and not self.in_launch
            and self._scalar_argument_written(func, args, kwargs or {})
        ):
            self.violations.add("torch_compute", f"aten.{name} wrote into a 0-d argument while {self.what}: an "
                                "argument's value may be read, never written")  # fmt: skip
        if name == "_local_scalar_dense":
            read = args[0] if args and isinstance(args[0], torch.Tensor) else None
            argument = read is not None and read.dim() == 0 and read.data_ptr() in self.scalar_arguments
            if argument and not self._scalar_unchanged(read):  # type: ignore[arg-type]
                self.violations.add("torch_compute", f"a 0-d argument's value read after it was written while "
                                    f"{self.what}: only the value it came with may be read")  # fmt: skip
            elif not (host_made or argument):
                self.violations.add("torch_compute", f"a tensor's value read into Python (.item()) while "
                                    f"{self.what}: only a 0-d argument's value may be")  # fmt: skip
        elif name.rstrip("_") not in allowed and name not in allowed and not host_made:
            kind = "glue and parameter initialisation are" if self.construction else "glue is"
            self.violations.add(
                "torch_compute", f"aten.{name} called while {self.what} (only {kind} allowed)"
            )
        output = func(*args, **(kwargs or {}))
        if name in SEQUENCE_OPS and not self.construction and not self.in_launch:
            made = sum(leaf.numel() for leaf in pytree.tree_leaves(output) if isinstance(leaf, torch.Tensor))
            if made > self.host_values_left:  # values host code worked out, past the phase's budget
                self.violations.add("torch_compute", f"a tensor made from {made} Python values while {self.what} "
                                    f"(host code may supply at most {HOST_VALUES_MAX} in all)")  # fmt: skip
        if not (self.constants or host_made or name in HOST_VALUE_OPS):
            return output  # the common path: nothing host-made to follow
        results = [leaf for leaf in pytree.tree_leaves(output) if isinstance(leaf, torch.Tensor)]
        results += self._written(func, args, kwargs or {})
        if (
            self.constants
        ):  # what an op wrote or returned is judged again: `copy_` of a kernel's results into a
            for leaf in results:  # host-made tensor, or `resize_` of one to a larger size, ends its mark
                self.constants.pop(id(leaf), None)
        if host_made or name in HOST_VALUE_OPS:  # what host-made values alone produce is host-made too
            for leaf in results:
                # One budget for the phase, made and derived values together: chunks of 8 values each, or a
                # chain of ops on them, add up to what host code may compute, not to 8 values per op.
                if leaf.numel() <= self.host_values_left:
                    self.host_values_left -= leaf.numel()
                    self.constants[id(leaf)] = weakref.ref(leaf)
        return output

    @staticmethod
    def _written(func: Any, args: Any, kwargs: dict[str, Any]) -> list[torch.Tensor]:
        """The tensors an op writes in place (its schema's mutable arguments: `copy_`'s self, `out=`)."""
        schema = getattr(func, "_schema", None)
        written: list[torch.Tensor] = []
        for position, argument in enumerate(getattr(schema, "arguments", ())):
            alias = argument.alias_info
            if alias is not None and alias.is_write:
                value = args[position] if position < len(args) else kwargs.get(argument.name)
                written += [leaf for leaf in pytree.tree_leaves(value) if isinstance(leaf, torch.Tensor)]
        return written


class TensorPrinting:
    """PyTorch's tensor printer, closed: `str`, `repr`, `format`, f-strings and `print` of a tensor show its shape
    and dtype, never its values, in the candidate's process.

    The printer runs with every dispatch mode disabled, so the monitor never sees it read a tensor's data: a
    tensor printed to a string and parsed back would carry its values into Python, like `.tolist()`. Printing is
    not itself a violation: real answers print their example's result at import (TritonBench's "# Example usage"),
    and with the values withheld nothing of them reaches Python.
    """

    def __init__(self) -> None:
        self._original: Any = None

    def install(self) -> None:
        import torch._tensor_str as printer

        self._original = printer._str

        def withheld(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> str:
            shape = "x".join(str(size) for size in tensor.shape) or "scalar"
            return (
                f"tensor(<values withheld>, shape={shape}, dtype={tensor.dtype}, device={tensor.device.type})"
            )

        printer._str = withheld

    def uninstall(self) -> None:
        if self._original is not None:
            import torch._tensor_str as printer

            printer._str = self._original
            self._original = None


def _torch_tensor_type(kind: Any) -> bool:
    """`torch.Tensor` itself, or a subclass PyTorch defines (`nn.Parameter`, a functional or fake tensor)."""
    return kind is torch.Tensor or defined_by(kind, "torch")


class CandidateClasses:
    """Every class the candidate's module defines while it is watched (at import, in `forward`: a `class`
    statement runs `builtins.__build_class__`): one that defines a conversion method PyTorch calls out of the
    monitor's sight (`CONVERSION_METHODS`) is `host_data`, and a subclass of `torch.Tensor` is `tensor_subclass`.
    The static wall refuses the same definitions; this is the tripwire behind it. Classes of other modules
    (PyTorch's own, imported lazily during a job) are not looked at."""

    def __init__(self, violations: Violations, module_name: str) -> None:
        self.violations = violations
        self.module_name = module_name
        self._original: Any = None

    def install(self) -> None:
        original = self._original = builtins.__build_class__
        guard = self

        def build_class(func: Any, name: str, *bases: Any, **keywords: Any) -> Any:
            made = original(func, name, *bases, **keywords)
            if getattr(func, "__globals__", {}).get("__name__") == guard.module_name:
                guard.check(made)
            return made

        builtins.__build_class__ = build_class

    def check(self, made: Any) -> None:
        if not isinstance(made, type):
            return
        if issubclass(made, torch.Tensor):  # (PyTorch gives such a class a `__torch_function__` of its own)
            self.violations.add("tensor_subclass", f"class {made.__name__} subclasses torch.Tensor: its own "
                                "dispatch runs beside the monitor's")  # fmt: skip
            return
        # Inherited ones too (a `collections.UserList` subclass's `__getitem__` reads what the class gives it),
        # except PyTorch's and the builtins' own.
        defined = sorted({name for kind in made.__mro__ if not _trusted_class(kind)
                          for name in CONVERSION_METHODS & set(vars(kind))})  # fmt: skip
        if defined:
            self.violations.add("host_data", f"class {made.__name__} defines {', '.join(defined)}: PyTorch calls "
                                "these while it turns Python objects into tensors, out of the monitor's sight")  # fmt: skip

    def uninstall(self) -> None:
        if self._original is not None:
            builtins.__build_class__ = self._original
            self._original = None


def _trusted_class(kind: type) -> bool:
    return kind.__module__ == "builtins" or defined_by(kind, "torch")


# Data PyTorch may turn into a tensor while candidate code runs: exact types only, so that no method of the
# candidate's (however its class was made: a `class` statement, `type(...)`, a metaclass, an inherited method)
# runs inside the conversion, where the Python dispatch key is excluded and the monitor sees nothing.
_PLAIN_SCALARS = (int, float, bool, complex, type(None), range, torch.SymInt, torch.SymFloat, torch.SymBool)


def plain_data_problem(value: Any, depth: int = 0) -> str | None:
    """None for a tensor, a number, a (nested) list or tuple of them, or a NumPy array or scalar; else what it is."""
    kind = type(value)
    if kind in _PLAIN_SCALARS or isinstance(value, torch.Tensor):  # (a tensor subclass's ops: the monitor's)
        return None
    if kind in (list, tuple, torch.Size):
        if depth > 64:
            return "data nested more than 64 deep"
        return next((problem for item in value if (problem := plain_data_problem(item, depth + 1))), None)
    if kind is numpy.ndarray:
        return None if value.dtype != object else "a NumPy array of Python objects"
    if issubclass(kind, numpy.generic) and kind.__module__ == "numpy":  # NumPy's own scalar types
        return None
    return f"a {kind.__qualname__} object"


class TensorFromData:
    """The ways a Python object becomes a tensor's data (`torch.tensor`, `as_tensor`, `asarray`, `Tensor.new_tensor`,
    `Tensor.new`, `torch.Tensor(...)`): while candidate code runs, only plain data may go in (`plain_data_problem`);
    anything else is `host_data`, refused before PyTorch calls its methods. The static wall refuses the classes it
    can read (`conversion`); this is the closed list behind it."""

    FUNCTIONS = ("tensor", "as_tensor", "asarray", "sparse_coo_tensor", "sparse_csr_tensor", "sparse_csc_tensor",
                 "sparse_bsr_tensor", "sparse_bsc_tensor", "sparse_compressed_tensor")  # fmt: skip
    METHODS = ("new_tensor", "new")

    def __init__(self, violations: Violations, monitor: TorchComputeMonitor) -> None:
        self.violations = violations
        self.monitor = monitor
        self._saved: list[tuple[Any, str, Any, bool]] = []  # (owner, name, original, owned before)

    def _checked(self, label: str, original: Any, skip_self: bool) -> Any:
        guard = self

        def checked(*args: Any, **kwargs: Any) -> Any:
            if guard.monitor.active:
                data = [*args[1 if skip_self else 0 :], kwargs.get("data"), kwargs.get("obj")]
                problem = next((p for value in data if (p := plain_data_problem(value))), None)
                if problem is not None:
                    guard.violations.add("host_data", f"{label} of {problem} while {guard.monitor.what}: only "
                                         "numbers, lists and tuples of them, tensors and NumPy arrays")  # fmt: skip
                    raise TypeError(f"KernelVault: {label} of {problem} is not allowed")
            return original(*args, **kwargs)

        return checked

    def _replace(self, owner: Any, name: str, replacement: Any) -> None:
        self._saved.append((owner, name, getattr(owner, name), name in vars(owner)))
        setattr(owner, name, replacement)

    def install(self) -> None:
        for name in self.FUNCTIONS:
            self._replace(torch, name, self._checked(f"torch.{name}", getattr(torch, name), skip_self=False))
        for name in self.METHODS:
            self._replace(
                torch.Tensor, name, self._checked(f"Tensor.{name}", getattr(torch.Tensor, name), True)
            )
        base_new = torch._C.TensorBase.__new__
        legacy = self._checked("torch.Tensor(...)", base_new, skip_self=True)
        self._replace(torch.Tensor, "__new__", staticmethod(legacy))

    def uninstall(self) -> None:
        for owner, name, original, owned in reversed(self._saved):
            if owned:
                setattr(owner, name, original)
            else:  # inherited (`torch.Tensor.__new__` is TensorBase's): put back as it was
                delattr(owner, name)
        self._saved = []


class TensorValueMethods:
    """The methods of `torch.Tensor` that hand a tensor's values to Python without an aten op the monitor could see:
    `.tolist()`, `.numpy()`, `__array__`, and `apply_`/`map_`/`map2_` (a Python function called on every element,
    in C++). Called while candidate code runs (a launch included: a grid callable is the candidate's code, and
    Triton's interpreter calls none of them), each records a `host_data` violation, then does what it does. The static wall refuses these names;
    this is the tripwire behind it."""

    METHODS = ("tolist", "numpy", "__array__", "apply_", "map_", "map2_")

    def __init__(self, violations: Violations, monitor: TorchComputeMonitor) -> None:
        self.violations = violations
        self.monitor = monitor
        self._original: dict[str, Any] = {}
        self._inherited: set[str] = set()  # defined by `torch._C.TensorBase`, not by `torch.Tensor` itself

    def install(self) -> None:
        guard = self
        for name in self.METHODS:
            original = getattr(torch.Tensor, name, None)
            if original is None:
                continue
            self._original[name] = original
            if name not in vars(torch.Tensor):
                self._inherited.add(name)

            def watched(tensor: torch.Tensor, *args: Any, _name: str = name, _original: Any = original,
                        **kwargs: Any) -> Any:  # fmt: skip
                if guard.monitor.active:
                    guard.violations.add("host_data", f"Tensor.{_name} handed a tensor's values to Python while "
                                         f"{guard.monitor.what}")  # fmt: skip
                return _original(tensor, *args, **kwargs)

            setattr(torch.Tensor, name, watched)

    def uninstall(self) -> None:
        for name, original in self._original.items():
            if name in self._inherited:  # put back as it was: inherited, nothing of Tensor's own
                delattr(torch.Tensor, name)
            else:
                setattr(torch.Tensor, name, original)
        self._original, self._inherited = {}, set()


def _storage_pointer(tensor: torch.Tensor) -> int:
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # a tensor without storage (meta, some subclasses)
        return id(tensor)


def _members(namespace: Any, everything: bool) -> dict[str, Any]:
    try:
        items = vars(namespace).items()
    except TypeError:
        return {}
    return {name: value for name, value in list(items)
            if (everything or callable(value)) and not (name.startswith("__") and name.endswith("__") and not callable(value))}  # fmt: skip


class PatchSnapshot:
    """The objects themselves (not their names or ids) in every namespace a cheater would patch, compared
    after the candidate ran: a replacement is a different object, whatever its `__module__` says.

    Modules and classes: every callable member. Instances (the harness's own watchers): every attribute but
    those their class lists in `SNAPSHOT_MUTABLE`. A member added to a class or an instance shadows
    what it inherits, so it counts too.
    """

    def __init__(self, namespaces: dict[str, Any]) -> None:
        self.namespaces = namespaces
        self.before = {label: self._members(space) for label, space in namespaces.items()}

    @staticmethod
    def _members(space: Any) -> dict[str, Any]:
        instance = not isinstance(space, (type, ModuleType))
        members = _members(space, everything=instance)
        for name in getattr(type(space), "SNAPSHOT_MUTABLE", ()) if instance else ():
            members.pop(name, None)
        return members

    def changed(self) -> list[str]:
        changes = []
        for label, space in self.namespaces.items():
            after = self._members(space)
            before = self.before[label]
            if not isinstance(space, ModuleType):
                changes += [f"{label}.{name} (added)" for name in after if name not in before]
            for name, original in before.items():
                if name not in after:
                    changes.append(f"{label}.{name} (deleted)")
                elif after[name] is not original:
                    changes.append(f"{label}.{name}")
        return changes


def patch_targets(extra_modules: Iterable[ModuleType] = ()) -> dict[str, Any]:
    import torch.utils._python_dispatch as python_dispatch
    import triton

    targets: dict[str, Any] = {
        "torch": torch, "torch.Tensor": torch.Tensor, "torch.nn.functional": torch.nn.functional,
        "torch.cuda": torch.cuda, "torch.testing": torch.testing, "time": time, "triton": triton,
        "torch.nn.Module": torch.nn.Module, "builtins": builtins,
        "torch.utils._python_dispatch": python_dispatch, "TorchDispatchMode": TorchDispatchMode,
        "torch._tensor_str": sys.modules["torch._tensor_str"], "TensorPrinting": TensorPrinting,
        "Violations": Violations, "TorchComputeMonitor": TorchComputeMonitor, "ProcessGuards": ProcessGuards,
        "PatchSnapshot": PatchSnapshot, "threading": threading, "os": os, "io": io, "subprocess": subprocess,
    }  # fmt: skip
    for name in ("triton.testing", "triton.runtime.jit", "triton.runtime.interpreter", "_thread", "posix"):
        module = __import__("sys").modules.get(name)
        if module is not None:
            targets[name] = module
    for module in extra_modules:
        targets[module.__name__] = module
    return targets


# Frames of these modules are plumbing between a caller and the guarded call: look past them. tempfile
# and pathlib too: Triton's NVIDIA backend writes the .ptx it hands to ptxas through
# tempfile.NamedTemporaryFile, and the write must be judged by who asked for it (Triton), not by tempfile.
_PLUMBING = (
    "subprocess", "os", "threading", "_thread", "concurrent.futures", __name__, "shutil",
    "multiprocessing", "importlib", "functools", "contextlib", "ctypes", "sysconfig", "platform", "uuid",
    "distutils", "setuptools", "tempfile", "pathlib",
)  # fmt: skip


def _nearest_caller() -> tuple[str, str, int] | None:
    """(module, file, line) of the nearest frame that is not plumbing between a caller and the guarded call."""
    frame = sys._getframe(2)  # past this function and `ProcessGuards._refuse`: the guard (plumbing) on
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not (module in _PLUMBING or module.startswith(tuple(p + "." for p in _PLUMBING))):
            return str(module), frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None


def _called_by_the_toolchain(caller: tuple[str, str, int] | None) -> bool:
    """True when the nearest real caller is Triton or torch (the GPU JIT runs the C compiler and ptxas).

    A candidate that calls Triton's internal build helpers with its own arguments gets through; the
    guards are a tripwire for the usual tricks, not a jail (see the module docstring).
    """
    # Judge by where the code lives, not by the module's name, which a candidate can set itself.
    return caller is not None and caller[1].startswith(_LIBRARY_DIRS)


def _library_dirs() -> tuple[str, ...]:
    import triton

    folders = {str(folder) + os.sep for module in (torch, triton)
               for folder in (Path(module.__file__).parent, Path(module.__file__).resolve().parent)}  # fmt: skip
    return tuple(sorted(folders))


_LIBRARY_DIRS = _library_dirs()
# Code that may touch raw memory: the installed libraries, the standard library and the harness beside this module
# (its tensor files); never a candidate's module, which is a file in its job's folder.
_TRUSTED_CODE = tuple(sorted({str(Path(folder).resolve()) + os.sep for folder in (
    sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], sysconfig.get_paths()["stdlib"],
    Path(__file__).resolve().parent)}))  # fmt: skip


class ProcessGuards:
    """Refuse (and record) threads, processes and writes outside the working directory.

    SNAPSHOT_MUTABLE: `enabled` is the harness's switch (`PatchSnapshot`).

    Installed before the candidate is imported. The harness keeps its own references to the originals
    (`original_open`) for its final writes.
    """

    def __init__(self, violations: Violations, writable: Iterable[Path]) -> None:
        self.violations = violations
        self.writable = [Path(p).resolve() for p in writable]
        self.original_open = builtins.open
        self._saved: list[tuple[Any, str, Any]] = []
        self.enabled = True

    SNAPSHOT_MUTABLE = ("enabled",)

    def _replace(self, owner: Any, name: str, replacement: Any) -> None:
        self._saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, replacement)

    def _refuse(self, sub_reason: str, detail: str, trusted: tuple[str, ...] = ()) -> None:
        caller = _nearest_caller()
        trusted_caller = bool(trusted) and caller is not None and caller[1].startswith(trusted)
        if _called_by_the_toolchain(caller) or trusted_caller:
            return
        # Who asked: a refusal a user cannot trace to a line of code (theirs, or a library's) is no help.
        where = (
            f" (called from {Path(caller[1]).name}:{caller[2]}{', ' + caller[0] if caller[0] else ''})"
            if caller
            else ""
        )
        self.violations.add(sub_reason, detail + where)
        raise PermissionError(f"KernelVault sandbox: {detail} is not allowed")

    def _is_writable(self, path: Any) -> bool:
        try:
            resolved = Path(os.fspath(path)).resolve()
        except (TypeError, ValueError):
            return True  # a file descriptor number: not a path we can judge
        return str(resolved) == os.devnull or any(resolved.is_relative_to(root) for root in self.writable)

    def install(self) -> None:
        guards = self
        original_open, original_os_open = builtins.open, os.open
        write_flags = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC

        def guarded_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            if guards.enabled and any(c in mode for c in "wax+") and not guards._is_writable(file):
                guards._refuse("filesystem_write", f"opening {file!s} for writing")
            return original_open(file, mode, *args, **kwargs)

        def guarded_os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> Any:
            if guards.enabled and flags & write_flags and not guards._is_writable(path):
                guards._refuse("filesystem_write", f"opening {path!s} for writing")
            return original_os_open(path, flags, *args, **kwargs)

        def guarded(original: Any, sub_reason: str, label: str) -> Any:
            def guard(*args: Any, **kwargs: Any) -> Any:
                guards._refuse(sub_reason, label)  # returns only when Triton or torch itself is the caller
                return original(*args, **kwargs)

            return guard

        def raw_memory(original: Any, label: str) -> Any:
            def guard(*args: Any, **kwargs: Any) -> Any:
                # the harness's own tensor files (safetensors) and the installed libraries pass; the candidate's
                # file, wherever it calls from, does not
                guards._refuse("raw_memory", label, trusted=_TRUSTED_CODE)
                return original(*args, **kwargs)

            return guard

        self._replace(builtins, "open", guarded_open)
        self._replace(io, "open", guarded_open)
        self._replace(os, "open", guarded_os_open)
        import _thread

        self._replace(
            threading.Thread, "start", guarded(threading.Thread.start, "threads", "starting a thread")
        )
        for name in ("start_new_thread", "start_joinable_thread"):
            if hasattr(_thread, name):
                self._replace(_thread, name, guarded(getattr(_thread, name), "threads", "starting a thread"))
        for name in ("_start_new_thread", "_start_joinable_thread"):  # threading's own references to them
            if hasattr(threading, name):
                self._replace(
                    threading, name, guarded(getattr(threading, name), "threads", "starting a thread")
                )
        for name in ("fork", "forkpty", "system", "posix_spawn", "posix_spawnp", "execv", "execve", "execvp", "spawnv",
                     "spawnve", "popen"):  # fmt: skip
            if hasattr(os, name):
                self._replace(os, name, guarded(getattr(os, name), "subprocess", f"os.{name}"))
        self._replace(
            subprocess.Popen, "__init__", guarded(subprocess.Popen.__init__, "subprocess", "subprocess.Popen")
        )
        # Raw memory through ctypes (the static wall refuses `import ctypes`; the harness's own modules have it
        # loaded): reading and writing a tensor's bytes by address is compute no monitor sees.
        ctypes = sys.modules.get("ctypes")
        if ctypes is not None:
            for name in ("memmove", "memset", "string_at", "wstring_at", "cast"):
                self._replace(ctypes, name, raw_memory(getattr(ctypes, name), f"ctypes.{name}"))

    def uninstall(self) -> None:
        for owner, name, value in reversed(self._saved):
            setattr(owner, name, value)
        self._saved.clear()
