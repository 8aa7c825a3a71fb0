"""Where a check worker draws a task's inputs: on the device where the task allows it, else on the host.

On a GPU the host draw was the slow part of a check (one worker thread, 0.3-0.6 s per 32 M floats, four
input sets per performance case). The device here is PyTorch's `meta` device, which runs the same
factory-function dispatch as a GPU without one: a tensor made under `torch.device("meta")` comes out on
it, and a task that needs host values (a NumPy round trip) fails there as it would need the host on a GPU.
"""

from __future__ import annotations

import types

import torch

from kernelvault.toolchain.sandboxed.reference import TaskHarness


def _task(get_inputs) -> types.ModuleType:  # noqa: ANN001
    module = types.ModuleType("kv_task_under_test")
    module.get_inputs = get_inputs
    module.get_init_inputs = list
    return module


def test_inputs_are_drawn_on_the_device_itself() -> None:
    drawn_on: list[torch.device] = []

    def get_inputs() -> list[torch.Tensor]:
        x = torch.randn(4, 8)
        drawn_on.append(x.device)
        return [x, 3]

    inputs = TaskHarness(_task(get_inputs), torch.device("meta")).inputs(seed=17)
    assert drawn_on == [torch.device("meta")]  # no host tensor was made and copied over
    assert inputs[0].device.type == "meta" and inputs[0].shape == (4, 8) and inputs[1] == 3


def test_a_task_that_needs_host_tensors_is_drawn_on_the_host_and_moved() -> None:
    drawn_on: list[torch.device] = []

    def get_inputs() -> list[torch.Tensor]:
        x = torch.randn(4, 8)
        drawn_on.append(x.device)
        return [torch.from_numpy(x.numpy() * 2)]  # .numpy() of a device tensor raises

    inputs = TaskHarness(_task(get_inputs), torch.device("meta")).inputs(seed=17)
    assert drawn_on == [torch.device("meta"), torch.device("cpu")]
    assert inputs[0].device.type == "meta" and inputs[0].shape == (4, 8)


def test_a_seed_gives_the_same_inputs_every_time_on_the_host() -> None:
    harness = TaskHarness(_task(lambda: [torch.randn(16)]), torch.device("cpu"))
    assert torch.equal(harness.inputs(5)[0], harness.inputs(5)[0])
    assert not torch.equal(harness.inputs(5)[0], harness.inputs(6)[0])
