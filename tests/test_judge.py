"""The parent's judge (toolchain.judge): expected outputs held outside the candidate's process, each check
judged once, and a worker's claim of success held against the parent's own record."""

from __future__ import annotations

import torch

from toolchain.judge import Judge, pack, scrub, unpack

SCOPE = "task-key"


def _sealed_judge() -> Judge:
    judge = Judge()
    judge.start_job()
    expected = {"check0": torch.tensor([1.0, 2.0]), "check1": torch.tensor([3.0])}
    assert judge.answer(
        {"type": "seal", "scope": SCOPE, "outputs": {k: pack(v) for k, v in expected.items()}}
    )
    return judge


def _ask(judge: Judge, label: str, output: torch.Tensor, scope: str = SCOPE) -> dict:
    body = {
        "type": "judge",
        "scope": scope,
        "label": label,
        "output": pack(output),
        "atol": 1e-4,
        "rtol": 1e-4,
    }
    return judge.answer(body)["answer"]


def test_pack_round_trips_nested_outputs_and_scrub_keeps_the_allocation() -> None:
    value = (torch.arange(4, dtype=torch.float32), torch.tensor([7], dtype=torch.int32))
    restored = unpack(pack(value))
    assert torch.equal(restored[0], value[0]) and torch.equal(restored[1], value[1])
    pointer = value[0].data_ptr()
    scrub(value)
    assert value[0].data_ptr() == pointer and bool(torch.isnan(value[0]).all())
    assert int(value[1]) == torch.iinfo(torch.int32).max


def test_the_parent_compares_and_answers_with_the_error() -> None:
    judge = _sealed_judge()
    assert _ask(judge, "check0", torch.tensor([1.0, 2.0]))["failure_kind"] is None
    wrong = _ask(judge, "check1", torch.tensor([3.5]))
    assert wrong["failure_kind"] == "mismatch" and wrong["max_abs_error"] == 0.5


def test_a_second_submission_of_a_check_is_a_probe() -> None:
    judge = _sealed_judge()
    _ask(judge, "check1", torch.tensor([0.0]))  # a probe from inside the candidate's forward
    answer = _ask(judge, "check1", torch.tensor([3.0]))  # the harness's real check: too late
    assert answer["failure_kind"] == "integrity_reject"
    verdict = judge.overrule({"failure_kind": None}, SCOPE)
    assert verdict["failure_message"] == "judge_probe: check1 was submitted for judgement twice"


def test_a_claimed_success_needs_every_check_judged_and_passed() -> None:
    judge = _sealed_judge()
    _ask(judge, "check0", torch.tensor([1.0, 2.0]))
    missing = judge.overrule({"failure_kind": None}, SCOPE)  # check1 never reached the parent
    assert missing["failure_kind"] == "integrity_reject"
    assert missing["failure_message"].startswith("forged_result:") and "check1" in missing["failure_message"]

    judge.start_job()
    _ask(judge, "check0", torch.tensor([1.0, 2.0]))
    _ask(judge, "check1", torch.tensor([9.0]))  # failed, but the worker (told otherwise) claims success
    forged = judge.overrule({"failure_kind": None}, SCOPE)
    assert forged["failure_kind"] == "integrity_reject" and "check1" in forged["failure_message"]

    judge.start_job()
    _ask(judge, "check0", torch.tensor([1.0, 2.0]))
    _ask(judge, "check1", torch.tensor([3.0]))
    assert judge.overrule({"failure_kind": None}, SCOPE) == {"failure_kind": None}
    # A failure the worker reports stands as it is: it cannot help the candidate.
    crash = {"failure_kind": "runtime_error", "failure_message": "forward raised"}
    assert judge.overrule(crash, SCOPE) == crash


def test_job_scopes_are_forgotten_and_reference_scopes_are_bounded() -> None:
    judge = Judge(max_scopes=2)
    judge.start_job()
    for scope in ("a", "b", "job:timed/c0", "c"):
        judge.answer({"type": "seal", "scope": scope, "outputs": {"check0": pack(torch.zeros(1))}})
    assert judge.scopes() == ["b", "c"]  # the oldest reference scope went; the job scope is not counted
    judge.start_job()
    assert "job:timed/c0" not in judge.expected
    unknown = _ask(judge, "check0", torch.zeros(1), scope="a")  # the worker must seal it again
    assert unknown["failure_kind"] == "infrastructure_error"


def test_expected_outputs_are_sealed_once_and_the_first_seal_stands() -> None:
    judge = _sealed_judge()  # the harness sealed SCOPE during this job
    forged = {"type": "seal", "scope": SCOPE, "outputs": {"check1": pack(torch.tensor([9.0]))}}
    judge.answer(forged)  # the candidate, through the same channel, with its own answer
    assert (
        _ask(judge, "check1", torch.tensor([9.0]))["failure_kind"] == "mismatch"
    )  # judged against the first
    assert judge.overrule({"failure_kind": None}, SCOPE)["failure_message"].startswith("forged_seal:")

    judge.start_job()  # a later job: the parent holds SCOPE already, so no seal of it is the harness's
    judge.answer(forged)
    assert judge.overrule({"failure_kind": None}, SCOPE)["failure_message"].startswith("forged_seal:")


def test_a_timed_success_needs_every_performance_case_timed_and_spot_checked() -> None:
    judge = _sealed_judge()
    _ask(judge, "check0", torch.tensor([1.0, 2.0]))
    _ask(judge, "check1", torch.tensor([3.0]))
    early = judge.overrule({"failure_kind": None, "timings": [{"candidate_ms": 0.001}]}, SCOPE, ["p0"])
    assert early["failure_kind"] == "integrity_reject" and "the timed calls of p0" in early["failure_message"]

    timed = "job:timed/p0"  # what time_cases seals before the candidate's timed calls, and checks after
    judge.answer({"type": "seal", "scope": timed, "outputs": {"timed3": pack(torch.tensor([5.0]))}})
    _ask(judge, "timed3", torch.tensor([5.0]), scope=timed)
    unreported = judge.overrule({"failure_kind": None}, SCOPE, ["p0"])
    assert (
        unreported["failure_kind"] == "integrity_reject"
        and "the timing of p0" in unreported["failure_message"]
    )
    judge.answer({"type": "timed", "timing": _timing("p0", 0.05)})
    assert judge.overrule({"failure_kind": None}, SCOPE, ["p0"]) == {"failure_kind": None,
                                                                      "timings": [_timing("p0", 0.05)]}  # fmt: skip


def _timing(case: str, candidate_ms: float) -> dict:
    return {"case": case, "candidate_ms": candidate_ms, "reference_ms": 0.1, "candidate_spread": 0.01,
            "reference_spread": 0.01, "repetitions": 100}  # fmt: skip


def _timed_and_checked(case: str = "p0") -> Judge:
    judge = _sealed_judge()
    _ask(judge, "check0", torch.tensor([1.0, 2.0]))
    _ask(judge, "check1", torch.tensor([3.0]))
    timed = f"job:timed/{case}"
    judge.answer({"type": "seal", "scope": timed, "outputs": {"timed3": pack(torch.tensor([5.0]))}})
    _ask(judge, "timed3", torch.tensor([5.0]), scope=timed)
    return judge


def test_a_timed_success_carries_the_timings_the_harness_reported_not_its_own() -> None:
    # A result sent by code the candidate left behind (a finalizer after the last spot check) brings its
    # own timings: the parent keeps the ones reported per case as they were measured.
    judge = _timed_and_checked()
    judge.answer({"type": "timed", "timing": _timing("p0", 0.05)})
    forged = {"failure_kind": None, "timings": [_timing("p0", 0.00001)]}
    assert judge.overrule(forged, SCOPE, ["p0"])["timings"] == [_timing("p0", 0.05)]


def test_a_timing_sent_ahead_of_the_harness_or_twice_or_malformed_is_forged() -> None:
    early = _sealed_judge()  # before the case's timed calls were sealed and spot-checked
    early.answer({"type": "timed", "timing": _timing("p0", 0.00001)})
    assert early.overrule({"failure_kind": None}, SCOPE, ["p0"])["failure_message"].startswith(
        "forged_result: the timing of p0 came before"
    )
    twice = _timed_and_checked()
    twice.answer({"type": "timed", "timing": _timing("p0", 0.00001)})  # the candidate's, first
    twice.answer({"type": "timed", "timing": _timing("p0", 0.05)})  # the harness's comes second
    assert twice.overrule({"failure_kind": None}, SCOPE, ["p0"])["failure_message"] == (
        "forged_result: the timing of 'p0' was reported twice"
    )
    odd = _timed_and_checked()
    odd.answer({"type": "timed", "timing": {**_timing("p0", 0.05), "speedup": 99.0}})
    assert "not the harness's" in odd.overrule({"failure_kind": None}, SCOPE, ["p0"])["failure_message"]


def _reader_of(parts: list[bytes]) -> PersistentWorker:  # noqa: F821 - imported in the tests below
    """A parent-side reader on a real pipe that a thread fills with `parts` in 64 KiB writes."""
    import os
    import sys
    import threading

    from toolchain.device_worker import PersistentWorker
    from toolchain.sandbox import SandboxLimits

    read_end, write_end = os.pipe()

    def write() -> None:
        for part in parts:
            view = memoryview(part)
            while view:
                view = view[os.write(write_end, view[: 1 << 16]) :]
        os.close(write_end)

    threading.Thread(target=write, daemon=True).start()
    worker = PersistentWorker("check", sys.executable, {}, SandboxLimits(30.0, None))
    worker._replies, worker._key = read_end, b"key"
    return worker


def test_a_message_with_an_output_larger_than_the_pipe_arrives_whole_and_authenticated() -> None:
    import time

    from toolchain.device_worker import encode_message

    output = torch.arange(3 << 20, dtype=torch.float32)  # 12 MB: about 200 pipe-sized reads
    judged = {"type": "judge", "scope": SCOPE, "label": "timed3", "output": pack(output), "atol": None}
    worker = _reader_of([*encode_message(b"key", 4, judged), *encode_message(b"key", 4, {"type": "result"})])
    body = worker._read_message(4, time.monotonic() + 30)
    assert (
        isinstance(body, dict) and body["label"] == "timed3" and torch.equal(unpack(body["output"]), output)
    )
    assert worker._read_message(4, time.monotonic() + 30) == {"type": "result"}  # the next message, intact
    assert worker._read_message(4, time.monotonic() + 30) is None and worker._closed  # end of the pipe


def test_a_changed_output_byte_or_a_malformed_header_is_not_a_message_of_the_harness() -> None:
    import time

    from toolchain.device_worker import _FORGED, encode_message

    header, blob = encode_message(b"key", 1, {"type": "judge", "output": pack(torch.ones(1000))})
    tampered = bytearray(blob)
    tampered[-1] ^= 1
    assert _reader_of([header, bytes(tampered)])._read_message(1, time.monotonic() + 30) is _FORGED
    assert _reader_of([header, blob])._read_message(2, time.monotonic() + 30) is _FORGED  # another job's
    for bad in (
        b'{"id": 1, "body": "{}", "blobs": [-5], "mac": ""}\n',
        b'{"id": 1, "body": "{}"}\n',
        b"not json\n",
    ):
        assert _reader_of([bad])._read_message(1, time.monotonic() + 30) is _FORGED
