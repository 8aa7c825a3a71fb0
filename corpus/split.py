"""The held-out tasks of a release: one rule for the `sft` test split, the `rl`/`rl_verl` validation split and
`kernelvault sft`'s evaluation.

A task is held out when a hash of its id falls below `fraction`: a property of the task alone, not of the other
tasks or of the order of the rows, so two builds of the same corpus hold out the same tasks, and adding tasks
to a later release never moves a task across (a model trained on one version has not seen another version's
held-out tasks). Whole tasks are held out, never single rows: attempts at one task share the reference program,
so splitting by row would leak the evaluation tasks into training.

The one exception is a release too small for the fraction: where the rule holds out none of two or more tasks,
the task with the lowest hash is held out, and where it holds out all of them, the highest goes back to
training, so each side has a task. Such a release's split can change when tasks are added.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

HELD_OUT_FRACTION = 0.1  # the share of tasks a release holds out by default


def task_point(task_id: str) -> float:
    """Where a task falls in [0, 1): the first 64 bits of the SHA-256 of its id."""
    return int(hashlib.sha256(task_id.encode()).hexdigest()[:16], 16) / 2**64


def held_out_tasks(task_ids: Iterable[str], fraction: float = HELD_OUT_FRACTION) -> set[str]:
    """The task ids held out of training (see the module docstring); none where `fraction` is 0 or there is only
    one task."""
    ids = sorted(set(task_ids))
    if fraction <= 0 or len(ids) < 2:
        return set()
    held = {task_id for task_id in ids if task_point(task_id) < fraction}
    if not held:
        held = {min(ids, key=task_point)}
    elif len(held) == len(ids):
        held.remove(max(ids, key=task_point))
    return held
