"""`kernelvault tasks functionalize`: a module task (`class Model`) rewritten in the function form.

Kernel-generation pipelines turn `nn.Module` references into functions whose parameters and buffers are
explicit inputs, so that a kernel is a function of tensors and nothing else. This does that for a task file:

- the reference part keeps the module's own code (renamed, so the file is read as a function task:
  `Model` → `ReferenceModule`, `get_inputs` → `_module_inputs`, `get_init_inputs` → `_module_init_inputs`,
  `KERNELVAULT` → `MODULE_TASK_EXTRAS`) and adds the entry, a function named like the task that takes the
  forward's inputs, then one tensor per parameter and buffer (`linear.weight` → `linear_weight`), then
  `init_inputs` (the module's constructor arguments). It runs the module's own forward with those tensors
  in place of its state (`torch.func.functional_call`), over a module built once per constructor arguments
  and device, so the reference computes exactly what the module does;
- the test part (after the separator, `kernelvault.toolchain.function_tasks`) is the seeded input builder: for
  each of the task's correctness cases it sets the case's sizes, builds the module under the verifier's
  seed, and calls the entry with the module's inputs and state. Those calls are the function task's cases.

Every conversion is verified before it is written: on every case, the entry called with a module's state
gives outputs equal to the module's own (bit for bit; the same ops run). What cannot be a pure function of
its inputs is refused with the reason: a forward that updates a parameter or buffer in place (BatchNorm in
training mode), one that changes the module's other state (a call counter it branches on), one whose two
runs differ, constructor arguments that are tensors, a forward taking `**kwargs`, tensors held as plain
attributes (neither parameters nor buffers: they would be state the entry is not given).

The references are the user's task suites, not generated code: they are run in this process, on the CPU.
"""

from __future__ import annotations

import inspect
import io
import keyword
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelvault.contracts import Task
from kernelvault.toolchain.function_tasks import clone_value, same_values
from kernelvault.toolchain.tasks import TaskFormatError, parse_task

# The module's names in the function form: a file with `Model`, `get_inputs` and `get_init_inputs` is a
# module task, and a function the test calls by name is an entry a candidate must define, so the builders
# are reached through the module's globals, never called by name from the test.
RENAMES = {
    "Model": "ReferenceModule",
    "get_inputs": "_module_inputs",
    "get_init_inputs": "_module_init_inputs",
    "KERNELVAULT": "MODULE_TASK_EXTRAS",
}
SEPARATOR = "#" * 100


class FunctionalizeError(ValueError):
    """Why a module task cannot be rewritten as a function (one line)."""


@dataclass(frozen=True)
class Conversion:
    """A module task in the function form: the file's text and what it was checked on."""

    task: str
    source: str
    entry: str
    inputs: tuple[str, ...]  # the entry's first arguments: forward's inputs
    state: tuple[str, ...]  # then one per parameter and buffer, named after them
    state_keys: tuple[str, ...]  # the parameters' and buffers' own names (`linear.weight`)
    init: tuple[Any, ...]  # the default of the last argument, `init_inputs`
    cases_checked: int
    case_inits: tuple[
        tuple[Any, ...], ...
    ] = ()  # the constructor's arguments of each case the file's test makes

    @property
    def arguments(self) -> tuple[str, ...]:
        return (*self.inputs, *self.state)


def rename_names(source: str, renames: dict[str, str]) -> str:
    """`source` with every name token in `renames` replaced (strings and comments untouched)."""
    lines = source.splitlines(keepends=True)
    tokens = [
        token for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.NAME and token.string in renames
    ]  # fmt: skip
    for token in reversed(tokens):  # from the end, so earlier positions stay valid
        row, column = token.start
        line = lines[row - 1]
        lines[row - 1] = line[:column] + renames[token.string] + line[token.end[1] :]
    return "".join(lines)


def _namespace(source: str, overrides: dict[str, Any], name: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": f"kv_functionalize_{name}"}
    exec(compile(source, f"<{name}>", "exec"), namespace)  # noqa: S102 - the user's own task suite
    namespace.update(overrides)
    return namespace


def _argument_names(forward: Any, inputs: list[Any], state: list[str]) -> tuple[list[str], list[str]]:
    """Names for forward's inputs and for the module's state tensors, distinct and valid in Python."""
    parameters = list(inspect.signature(forward).parameters.values())
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        raise FunctionalizeError("forward takes **kwargs: its inputs have no fixed names")
    named = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters) or len(named) < len(inputs):
        named = named[: len(inputs)] + [f"input{index}" for index in range(len(named), len(inputs))]
    inputs_names = named[: len(inputs)]
    taken = set(inputs_names) | {"init_inputs"}
    state_names = []
    for name in state:
        candidate = re.sub(r"\W", "_", name)
        while candidate in taken or keyword.iskeyword(candidate) or not candidate.isidentifier():
            candidate = f"state_{candidate}"
        taken.add(candidate)
        state_names.append(candidate)
    return inputs_names, state_names


def _state(module: Any) -> list[tuple[str, Any]]:
    return list(module.named_parameters()) + list(module.named_buffers())


def _plain_state(module: Any) -> dict[str, str]:
    """Each submodule's attributes that are not tensors or modules, as text: what a forward may branch on."""
    import torch

    found = {}
    for prefix, submodule in module.named_modules():
        for key, value in vars(submodule).items():
            if key.startswith("_") or isinstance(value, (torch.Tensor, torch.nn.Module)):
                continue
            found[f"{prefix}.{key}" if prefix else key] = repr(value)
    return found


def _same(first: Any, second: Any) -> bool:
    """Equal tensors in the same places (`same_values`: bit for bit, NaN equal to NaN) and equal plain values."""
    import torch
    import torch.utils._pytree as pytree

    def plain(value: Any) -> list[Any]:
        return [
            leaf if not isinstance(leaf, torch.Tensor) else torch.Tensor for leaf in pytree.tree_leaves(value)
        ]

    return plain(first) == plain(second) and same_values(first, second)


def _module_case(source: str, name: str, overrides: dict[str, Any], seed: int) -> tuple[Any, list, list]:
    """The module built under `seed` with the case's sizes, its inputs, its constructor arguments."""
    import torch

    namespace = _namespace(source, overrides, name)
    for needed in ("Model", "get_inputs", "get_init_inputs"):
        if needed not in namespace:
            raise FunctionalizeError(f"not a module task: no {needed}")
    torch.random.manual_seed(seed)
    init = list(namespace["get_init_inputs"]())
    if any(isinstance(value, torch.Tensor) for value in init):
        raise FunctionalizeError("get_init_inputs returns tensors: the constructor's arguments are not sizes")
    module = namespace["Model"](*init)
    return module, list(namespace["get_inputs"]()), init


def _checked_module(task: Task, overrides: dict[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """Refuse what cannot be a pure function (on the case `overrides` sets); the names the entry takes for
    forward's inputs and for the module's state, and the state's own names."""
    import torch

    with torch.no_grad():
        module, inputs, _ = _module_case(task.source, task.name, overrides, seed=0)
        loose = [
            f"{prefix}.{key}" if prefix else key
            for prefix, submodule in module.named_modules()
            for key, value in vars(submodule).items()
            if isinstance(value, torch.Tensor) and not key.startswith("_")
        ]  # fmt: skip
        if loose:  # `.to(device)` leaves them behind, and they would be state the entry is not given
            raise FunctionalizeError(
                f"the module holds tensors that are neither parameters nor buffers ({', '.join(loose[:3])}): "
                "register them as buffers to make them inputs"
            )
        state = {key: value.detach().clone() for key, value in _state(module)}
        plain = _plain_state(module)
        first = module(*clone_value(inputs))
        for key, value in _state(module):
            if not torch.equal(value.detach().nan_to_num(), state[key].nan_to_num()):
                raise FunctionalizeError(
                    f"forward updates {key} in place: a function of its inputs cannot (in-place state update)"
                )
        changed = sorted(key for key, text in _plain_state(module).items() if plain.get(key) != text)
        if changed:
            raise FunctionalizeError(
                f"forward changes the module's state ({', '.join(changed)}): control flow on module state"
            )
        if not _same(first, module(*clone_value(inputs))):
            raise FunctionalizeError("the module is not deterministic: two runs on the same inputs differ")
    state_keys = [key for key, _ in _state(module)]
    inputs_names, state_names = _argument_names(module.forward, inputs, state_keys)
    return inputs_names, state_names, state_keys


def _render(task: Task, entry: str, inputs_names: list[str], state_names: list[str], state_keys: list[str],
            init: list[Any]) -> str:  # fmt: skip
    renamed = rename_names(task.source, RENAMES).rstrip() + "\n"
    arguments = ", ".join([*inputs_names, *state_names, f"init_inputs={tuple(init)!r}"])
    state_tuple = "(" + "".join(f"{name}, " for name in state_names) + ")"
    forward_args = "(" + "".join(f"{name}, " for name in inputs_names) + ")"
    cases = [dict(case.overrides) for case in task.correctness_cases] or [{}]
    device_of = inputs_names[0] if inputs_names else (state_names[0] if state_names else None)
    device = f"getattr({device_of}, 'device', 'cpu')" if device_of else "'cpu'"
    return f'''# Function form of the module task `{task.name}`, written by `kernelvault tasks functionalize`.
# The module's parameters and buffers are explicit inputs of `{entry}`; its initialisation is the seeded
# input builder of the test below. The module's own code follows, renamed so this file is a function task.
{renamed}

_STATE_NAMES = {tuple(state_keys)!r}
_STRUCTURES: dict = {{}}


def {entry}({arguments}):
    """`ReferenceModule.forward` with the module's parameters and buffers given as arguments."""
    import torch

    key = (repr(init_inputs), str({device}))
    module = _STRUCTURES.get(key)
    if module is None:  # built once per constructor arguments and device; its own state is never used
        with torch.random.fork_rng(devices=[]):
            module = ReferenceModule(*init_inputs).to({device})
        _STRUCTURES[key] = module
    state = dict(zip(_STATE_NAMES, {state_tuple}, strict=True))
    return torch.func.functional_call(module, state, {forward_args})


{SEPARATOR}

_CASES = {cases!r}


def test_{entry}():
    import torch

    # The module's globals (its sizes and builders): each case's sizes are set there, then put back.
    module_globals = ReferenceModule.forward.__globals__
    defaults = {{name: module_globals[name] for sizes in _CASES for name in sizes if name in module_globals}}
    results = {{}}
    try:
        for index, sizes in enumerate(_CASES):
            module_globals.update(defaults)
            module_globals.update(sizes)
            init = module_globals["_module_init_inputs"]()
            module = ReferenceModule(*init)  # under the verifier's seed
            inputs = [value.cuda() if isinstance(value, torch.Tensor) else value
                      for value in module_globals["_module_inputs"]()]
            state = [value.detach().clone().cuda() for _, value in
                     list(module.named_parameters()) + list(module.named_buffers())]
            results[f"case_{{index}}"] = {entry}(*inputs, *state, init_inputs=tuple(init))
    finally:
        module_globals.update(defaults)
    return results
'''


def functionalize(task: Task, case_tasks: Task | None = None) -> Conversion:
    """`task` in the function form, checked against the module on every case of `case_tasks` (default: the
    task's own; `--case-scale` passes a scaled copy so a GPU-sized suite checks on a CPU)."""
    import torch

    if task.entry is not None:
        raise FunctionalizeError(f"already a {task.form} task")
    entry = re.sub(r"\W", "_", task.name)
    if not entry.isidentifier() or keyword.iskeyword(entry) or entry[0].isdigit():
        entry = f"task_{entry}"
    cases = (case_tasks or task).correctness_cases or ()
    try:
        inputs_names, state_names, state_keys = _checked_module(task, cases[0].overrides if cases else {})
        # the entry's default constructor arguments: the task's own first case, not a scaled one
        own_cases = [case.overrides for case in task.correctness_cases] or [{}]
        case_inits = tuple(
            tuple(_namespace(task.source, overrides, task.name)["get_init_inputs"]())
            for overrides in own_cases
        )
        init = list(case_inits[0])
    except FunctionalizeError:
        raise
    except Exception as error:  # noqa: BLE001 - the reference's own failure is the reason
        raise FunctionalizeError(f"the module does not run: {type(error).__name__}: {error}"[:300]) from None
    source = _render(task, entry, inputs_names, state_names, state_keys, init)
    try:
        converted = parse_task(source, entry, task.origin)
    except TaskFormatError as error:
        raise FunctionalizeError(f"the rewritten file is not a function task: {error}") from None
    # One namespace of the reference part for every case, its sizes set per case as the test sets them.
    function_globals = _namespace(source.split(SEPARATOR, 1)[0], {}, f"{task.name}_function")
    names = {name for case in cases for name in case.overrides}
    defaults = {name: function_globals[name] for name in names if name in function_globals}
    checked = 0
    for index, case in enumerate(cases or [None]):
        overrides = case.overrides if case is not None else {}
        function_globals.update(defaults)
        function_globals.update(overrides)
        with torch.no_grad():
            try:
                module, inputs, case_init = _module_case(task.source, task.name, overrides, seed=index)
                expected = module(*clone_value(inputs))
                state = [value.detach().clone() for _, value in _state(module)]
                got = function_globals[entry](*clone_value(inputs), *state, init_inputs=tuple(case_init))
            except Exception as error:  # noqa: BLE001 - named in the refusal
                raise FunctionalizeError(
                    f"case {index}: the function form raised {type(error).__name__}: {error}"[:300]
                ) from None
        if not _same(expected, got):
            raise FunctionalizeError(f"case {index}: the function form's outputs differ from the module's")
        checked += 1
    assert converted.entry == entry
    return Conversion(task.name, source, entry, tuple(inputs_names), tuple(state_names), tuple(state_keys),
                      tuple(init), checked, tuple({repr(one): one for one in case_inits}.values()))  # fmt: skip


def wrap_module_candidate(candidate_source: str, conversion: Conversion) -> str:
    """A module-form candidate (`class ModelNew`) as a candidate of the rewritten task: an entry of the same
    signature runs a `ModelNew` (built at import per constructor arguments; its own state never used) with the
    state it is given (`torch.func.functional_call`, by the reference's parameter names). What the candidate's kernels
    compute is unchanged, so it gets the verdict it gets on the module form."""
    inputs = "(" + "".join(f"{name}, " for name in conversion.inputs) + ")"
    state = "(" + "".join(f"{name}, " for name in conversion.state) + ")"
    signature = ", ".join([*conversion.arguments, f"init_inputs={conversion.init!r}"])
    return (
        candidate_source.rstrip()
        + f"""


# The rewritten task's entry over this ModelNew. Its structure is built here, at import, for each case's
# constructor arguments: building it inside the call would run its initialisation (torch work) there.
_KV_STATE_NAMES = {conversion.state_keys!r}
_KV_MODELS = {{repr(init): ModelNew(*init) for init in {conversion.case_inits!r}}}


def {conversion.entry}({signature}):
    import torch

    model = _KV_MODELS.get(repr(init_inputs))
    if model is None:
        model = _KV_MODELS[repr(init_inputs)] = ModelNew(*init_inputs)
    return torch.func.functional_call(model, dict(zip(_KV_STATE_NAMES, {state}, strict=True)), {inputs})
"""
    )


def write_conversion(conversion: Conversion, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{conversion.entry}.py"
    path.write_text(conversion.source, encoding="utf-8")
    return path
