"""Expected outputs live in the parent, not in the candidate's process: the parent judges every comparison.

A candidate runs in the same process as the harness that checks it. Whatever that process holds, a
candidate can find with plain Python: `gc.get_objects()` or `gc.get_referrers(x)` from its own input
tensors leads to the harness's records of (inputs, expected output), and returning a copy of the
expected output passes any comparison made there (tests/adversarial/hostile/mismatch__relu__gc_expected_outputs.py
did, before this module). So the worker computes the reference outputs before any candidate code
exists, ships them to the parent (`ParentChannel.seal`) and overwrites its own copies in place (kept
allocated, so freed memory cannot hand them back either). Each comparison is a round trip: the worker
sends the candidate's output and a label, the parent compares it with the expected output it holds
(`Judge.judge`, the one `compare_outputs`) and answers.

What the candidate could still do, and why it gains nothing:
- ask the parent itself (the channel is in its process): each label is judged once per job, the first
  answer is final, so a probe spends the real check; the parent's answer reaches the worker after the
  candidate's forward has returned.
- forge the parent's answer (write into its own stdin): the worker's view is advisory; the parent keeps
  its own record of every judgement and overrides the worker's final result with it (`Judge.overrule`).
- seal expected outputs of its own (the channel signs whatever it sends): a scope is sealed once, by
  the harness before the candidate exists (or, for timing inputs, before the candidate's timed calls);
  a scope the parent already holds, or one sealed twice in a job, makes the job an `integrity_reject`
  (`forged_seal`) and the first seal stands.
- forge the worker's final result through the channel: the parent accepts a success only with every
  check it holds expected outputs for judged and passed. (A correct candidate that walks the frames to
  the channel and reports timings of its own before the harness has timed it is refused too: a timed
  job's success also needs every performance case's timed calls sealed and spot-checked, and its
  timings are the ones the harness reported to the parent per case, first report standing, after that
  case's spot checks: a result sent later by code the candidate left behind, such as a finalizer, cannot
  bring timings of its own, and a timing sent ahead of the harness's makes the harness's a second one.)

Worker to parent, on the reply pipe: a JSON header line {"id", "body", "blobs", "mac"} where body is a
JSON object with "type": "seal" | "judge" | "timed" | "result", followed by the binary parts that "blobs" sizes
(tensors, `pack`ed; `device_worker.encode_message`). Parent to worker, on stdin: JSON lines {"answer": ...}.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import torch

from kernelvault.contracts import CaseTiming
from toolchain.compare import Comparison, compare_outputs


def reference_key(job: dict[str, Any], task_source: str) -> str:
    """The scope of a task's expected outputs: same source, cases, seeds and timing, same outputs."""
    identity = [job["correctness_cases"], job["performance_cases"], job.get("trials"), job["timed"],
                job["platform"], task_source]  # fmt: skip
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()


def pack(value: Any) -> bytes:
    """Tensors (and nests of them) as bytes for a message's binary part: CPU copies, `torch.save`."""
    buffer = io.BytesIO()
    torch.save(_to_cpu(value), buffer)
    return buffer.getvalue()


def unpack(data: bytes) -> Any:
    if not isinstance(data, bytes):
        raise TypeError(f"expected the bytes of a packed output, got {type(data).__name__}")
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


def _to_cpu(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True).contiguous()
    if isinstance(value, (list, tuple)):
        return [_to_cpu(item) for item in value]
    return value


def scrub(value: Any) -> None:
    """Overwrite tensors in place (NaN, or the dtype's maximum): the allocation stays, the values go."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() or value.is_complex():
            value.fill_(float("nan"))
        elif value.dtype == torch.bool:
            value.fill_(True)
        else:
            value.fill_(torch.iinfo(value.dtype).max)
    elif isinstance(value, (list, tuple)):
        for item in value:
            scrub(item)


# ----------------------------------------------------------------------------------------------------
# Worker side.


class ParentChannel:
    """The worker's end: seal expected outputs, ask for judgements. One per worker process."""

    def __init__(self, send: Callable[[dict[str, Any]], None], answers: IO[str]) -> None:
        self._send = send  # writes one authenticated message for the current job
        self._answers = answers

    def _ask(self, body: dict[str, Any]) -> Any:
        self._send(body)
        line = self._answers.readline()
        if not line:
            raise RuntimeError("the parent closed the channel")
        return json.loads(line)["answer"]

    def seal(self, scope: str, outputs: dict[str, Any]) -> None:
        """Ship expected outputs under `scope` (a reference key, or the job's own), then scrub ours."""
        self._ask(
            {"type": "seal", "scope": scope, "outputs": {label: pack(v) for label, v in outputs.items()}}
        )
        for value in outputs.values():
            scrub(value)

    def judge(
        self, scope: str, label: str, output: Any, atol: float | None, rtol: float | None
    ) -> Comparison:
        answer = self._ask({"type": "judge", "scope": scope, "label": label, "output": pack(output),
                            "atol": atol, "rtol": rtol})  # fmt: skip
        return Comparison(answer["failure_kind"], answer["message"], answer["max_abs_error"],
                          answer["max_rel_error"])  # fmt: skip

    def report_timing(self, timing: dict[str, Any]) -> None:
        """One performance case's timing, sent as soon as it is measured and its timed calls are checked."""
        self._ask({"type": "timed", "timing": timing})


# ----------------------------------------------------------------------------------------------------
# Parent side.


@dataclass
class ProtocolCosts:
    """What the judge protocol cost one job, measured by the parent (never taken from the worker's word).

    `transfer_seconds`: reading the messages' binary parts off the pipe once their header had arrived (the
    worker's `pack` before it is not seen here); `answer_seconds`: unpacking and comparing them;
    `timed_seconds`: from the first seal of a performance case's timed calls to the last timing report,
    the time stage as the parent saw it (0 for an untimed job, or one that failed before timing);
    `gate_seconds`: what the lane waited at its device's gate (`toolchain.device_gate`) for other lanes'
    timings, or for the device alone: the lane's wait, not the candidate's work.
    """

    messages: int = 0
    megabytes: float = 0.0
    transfer_seconds: float = 0.0
    answer_seconds: float = 0.0
    timed_seconds: float = 0.0
    gate_seconds: float = 0.0
    first_timed_at: float | None = None  # monotonic clock of the first timed-call seal

    def summary(self) -> str:
        waited = f"; waited {self.gate_seconds:.2f} s at the device's gate" if self.gate_seconds else ""
        return (f"judge protocol: {self.messages} message(s), {self.megabytes:.1f} MB, "
                f"transfer {self.transfer_seconds:.2f} s, unpack and compare {self.answer_seconds:.2f} s{waited}")  # fmt: skip


@dataclass
class JobRecord:
    """What the parent judged during one job: the authority over the worker's final result."""

    held: set[str] = field(default_factory=set)  # scopes the parent held when the job began
    sealed: set[str] = field(default_factory=set)  # scopes sealed during the job
    judged: dict[tuple[str, str], Comparison] = field(default_factory=dict)
    timed: dict[str, dict[str, Any]] = field(default_factory=dict)  # case -> its timing, as first reported
    problem: str | None = None  # a protocol breach seen during the job (e.g. a label judged twice)
    costs: ProtocolCosts = field(default_factory=ProtocolCosts)


TIMING_FIELDS = frozenset(entry.name for entry in dataclasses.fields(CaseTiming))  # what a row's timing holds


class Judge:
    """Holds expected outputs per scope (reference keys: a bounded LRU, like the worker's cache)."""

    def __init__(self, max_scopes: int = 16) -> None:
        # scope -> label -> expected output, unpacked once when sealed (every later job of the task reuses
        # it); "job:" scopes (timing inputs) are forgotten when the job ends
        self.expected: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.max_scopes = max_scopes
        self.job = JobRecord()

    def scopes(self) -> list[str]:
        """The reference scopes held: a worker whose cache has another must rebuild (and seal) it."""
        return [scope for scope in self.expected if not scope.startswith("job:")]

    def start_job(self) -> None:
        for scope in [scope for scope in self.expected if scope.startswith("job:")]:
            del self.expected[scope]
        self.job = JobRecord(held=set(self.scopes()))

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """One worker message (seal or judge) to the answer sent back on its stdin."""
        if body.get("type") == "seal":
            scope = str(body["scope"])
            if scope in self.job.held or scope in self.job.sealed:  # the first seal stands: see the docstring
                self.job.problem = (
                    self.job.problem or "forged_seal: expected outputs were sealed a second time"
                )
                return {"answer": True}
            try:
                outputs = {str(label): unpack(packed) for label, packed in body["outputs"].items()}
            except Exception as error:  # noqa: BLE001 - the harness seals what it packed itself
                self.job.problem = self.job.problem or f"forged_seal: a seal that is not outputs ({error})"
                return {"answer": True}
            self.expected[scope] = outputs
            self.expected.move_to_end(scope)
            self.job.sealed.add(scope)
            while len(self.scopes()) > self.max_scopes:
                del self.expected[self.scopes()[0]]
            return {"answer": True}
        if body.get("type") == "timed":
            self._record_timing(body.get("timing"))
            return {"answer": True}
        comparison = self._judge(str(body["scope"]), str(body["label"]), body)
        return {"answer": {"failure_kind": comparison.failure_kind, "message": comparison.message,
                           "max_abs_error": comparison.max_abs_error,
                           "max_rel_error": comparison.max_rel_error}}  # fmt: skip

    def _judge(self, scope: str, label: str, body: dict[str, Any]) -> Comparison:
        record = self.job
        if (scope, label) in record.judged:  # a second ask is a probe: the first answer stands
            record.problem = record.problem or f"judge_probe: {label} was submitted for judgement twice"
            return Comparison("integrity_reject", record.problem)
        held = self.expected.get(scope, {})
        if label not in held:
            comparison = Comparison("infrastructure_error", f"no expected output for check {label}")
        else:
            try:
                output = unpack(body["output"])
            except Exception as error:  # noqa: BLE001 - whatever the worker sent, it is not an output
                comparison = Comparison("interface_error", f"the output could not be read: {error}")
            else:
                comparison = compare_outputs(held[label], output, body.get("atol"), body.get("rtol"))
        record.judged[(scope, label)] = comparison
        return comparison

    def _record_timing(self, timing: Any) -> None:
        """The first report of a case stands, and only once its timed calls were sealed and all judged: a
        report that comes earlier, or a second one, was not the harness's (see the module docstring)."""
        record = self.job
        case = timing.get("case") if isinstance(timing, dict) else None
        scope = f"job:timed/{case}"
        well_formed = (
            isinstance(timing, dict) and set(timing) == TIMING_FIELDS and isinstance(case, str)
            and all(isinstance(timing[key], (int, float)) for key in TIMING_FIELDS - {"case"})
        )  # fmt: skip
        if not well_formed:
            record.problem = record.problem or "forged_result: a timing report that is not the harness's"
            return
        if case in record.timed:
            record.problem = record.problem or f"forged_result: the timing of {case!r} was reported twice"
            return
        labels = set(self.expected.get(scope, {}))
        if (
            scope not in record.sealed
            or not labels
            or any((scope, label) not in record.judged for label in labels)
        ):
            record.problem = record.problem or (
                f"forged_result: the timing of {case} came before its timed calls were spot-checked"
            )
            return
        record.timed[case] = dict(timing)

    def overrule(
        self, result: dict[str, Any], check_scope: str, timed_cases: Sequence[str] = ()
    ) -> dict[str, Any]:
        """The worker's final result, held against what the parent judged itself.

        A failure the worker reports stands (it cannot help the candidate). A success must rest on a passed
        judgement of every check the parent holds expected outputs for: the task's (`check_scope`, which
        the parent computes from the job, not from the worker's word) and those sealed during this job;
        and, for a timed job, on the spot checks of every performance case (`timed_cases`, from the job):
        timings reported before the harness timed and checked them are not the harness's. The timings
        of a timed success are the parent's record (`report_timing`, first report per case), never the
        result's own: a result sent by code the candidate left behind (a finalizer firing after the last
        spot check) cannot bring timings of its own.
        """
        record = self.job
        if record.problem:
            return {**result, "failure_kind": "integrity_reject", "failure_message": record.problem}
        if result.get("failure_kind") is not None:
            return result
        for (_, label), comparison in record.judged.items():
            if comparison.failure_kind is not None:
                return {**result, "failure_kind": "integrity_reject", "failure_message":
                        f"forged_result: the worker reported success; the parent judged {label}: {comparison.message}"}  # fmt: skip
        wanted = {(check_scope, label) for label in self.expected.get(check_scope, {})}
        wanted |= {(scope, label) for scope in record.sealed for label in self.expected.get(scope, {})}
        missing = sorted(label for _, label in wanted - set(record.judged))
        missing += [
            f"the timed calls of {name}" for name in timed_cases if f"job:timed/{name}" not in record.sealed
        ]
        missing += [f"the timing of {name}" for name in timed_cases if name not in record.timed]
        if missing or not wanted:
            return {**result, "failure_kind": "integrity_reject", "failure_message":
                    f"forged_result: the worker reported success without the parent judging {missing[:3] or 'any check'}"}  # fmt: skip
        if timed_cases:
            return {**result, "timings": [record.timed[name] for name in timed_cases]}
        return result
