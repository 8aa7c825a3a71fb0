"""TritonBench's own evaluator (`EVAL/eval_T`, `EVAL/eval_G`) over models' answers, one line per answer.

The side-by-side of issue #19 sets these verdicts beside KernelVault's on the same answers and device
(`bench/side_by_side.py` joins them). This runs TritonBench's code, imported from the checkout:

- `0_call_acc.py`: `get_corresponding_files` (an answer's task, found by its description), `clear_code`
  (its extraction of the answer's code), `get_test` (the test after the file's separator) and
  `run_script_on_gpu` (answer + separator + test written to one file and run; **call** = exit status 0).
- For TritonBench-G (`--suite G`), `eval_G/0_call_acc.py`: its answers are matched by their `label` in a
  task's gold `output` (`get_file_order`, over a whole answer file as TritonBench calls it; an answer file
  it cannot order as a whole falls back to the same rule per answer), its extraction is `process_code`
  (the code block reduced to imports and function definitions), and its tests keep `result_gold`.
- `1_exe_acc.py`'s criterion, **exe** = the run's stdout equals the gold file's stdout. TritonBench runs the
  gold file again for every answer; here it runs once per task (the same file, the same comparison).

Two deviations, both needed to run it unattended, both on every answer alike:
- TritonBench's `subprocess.run` has no time limit; here it gets `--timeout-s` (a run past it fails call).
- A postlude after the test saves `test_results` (seeded: `torch.manual_seed(0)` before the test runs, the
  same in the gold run) so that **results** (our addition, not TritonBench's) says whether the answer's
  test results equal the gold file's within `--atol`/`--rtol`. Most TritonBench-T tests print nothing, so
  exe alone cannot tell a wrong answer from a right one; results can. The prelude and postlude do not
  change an answer's exit status or stdout.

    python bench/tritonbench_eval.py --checkout TritonBench --answers TritonBench/LLM_generated/Bench_T_general_purpose \
        --out tb.jsonl [--procs 16] [--deadline-s 540]

`--cpu` runs the same files on a machine without a GPU (a preview, not the side-by-side the issue asks for):
a `sitecustomize` maps every `cuda` device a torch call names to the CPU (KernelVault's own CPU path does
the same, `kernelvault.toolchain.function_tasks.device_redirect`) and Triton runs under its interpreter.

Resumable: answers already in --out are skipped. Per line: file (answers file), line, model, task (the
task file TritonBench matched, or null with `error`), call, exe, results, seconds, stderr_tail.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

PRELUDE = "import torch as _kv_torch\n_kv_torch.manual_seed(0)\n"
POSTLUDE = """

import os as _kv_os
try:
    _kv_torch.save({results}, _kv_os.environ["KV_RESULTS_PATH"])
except Exception:
    pass
"""


@dataclass(frozen=True)
class Suite:
    """Where one TritonBench channel keeps its evaluator, tasks and statistics, and what its tests name."""

    evaluator: str  # EVAL/eval_X/0_call_acc.py
    folder: str  # data/TritonBench_X_v1
    statistics: str  # the JSON its evaluator reads
    results: str  # the variable the test's results end up in


SUITES = {
    "T": Suite(
        "EVAL/eval_T/0_call_acc.py", "data/TritonBench_T_v1", "data/TritonBench_T_v1.jsonl", "test_results"
    ),
    "G": Suite(
        "EVAL/eval_G/0_call_acc.py", "data/TritonBench_G_v1", "data/TritonBench_G_v1.json", "result_gold"
    ),
}
_module: ModuleType | None = None
_suite = SUITES["T"]


def _load_call_acc(checkout: Path, suite: Suite, timeout_s: float) -> ModuleType:
    """TritonBench's 0_call_acc.py with its paths (written for its authors' machine) pointed at the checkout,
    this interpreter, and a time limit on its runs."""
    source = (checkout / suite.evaluator).read_text()
    if sys.version_info < (3, 12):  # one of its print lines nests quotes in an f-string (Python 3.12 syntax)
        source = source.replace(
            'path.split("/")[-1].replace(".jsonl", "")', "path.split('/')[-1].replace('.jsonl', '')"
        )
    module = ModuleType("tb_call_acc")
    exec(compile(source, str(checkout / suite.evaluator), "exec"), module.__dict__)  # noqa: S102
    module.statis_path = str(checkout / suite.statistics)  # T's is a JSON list despite its .jsonl name
    module.py_folder = str(checkout / suite.folder)
    module.py_interpreter = sys.executable

    def run_with_limit(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(*args, timeout=timeout_s, **kwargs)  # noqa: PLW1510
        except subprocess.TimeoutExpired as error:
            return subprocess.CompletedProcess(error.cmd, 124, "", f"timed out after {timeout_s:.0f} s")

    module.subprocess = type("subprocess", (), {"run": staticmethod(run_with_limit)})
    return module


CPU_SHIM = """
import os
if os.environ.get("KV_TB_CPU") == "1":
    from kernelvault.toolchain.function_tasks import device_redirect
    device_redirect("cpu").__enter__()  # for the whole run: the test's device='cuda' lands on the CPU
"""


def _use_cpu(scratch: Path) -> None:
    """Environment for --cpu, inherited by TritonBench's runs (it copies os.environ)."""
    shim = scratch / "cpu-shim"
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text(CPU_SHIM)
    root = Path(__file__).resolve().parents[1]
    os.environ["PYTHONPATH"] = os.pathsep.join([str(shim), str(root), os.environ.get("PYTHONPATH", "")])
    os.environ["KV_TB_CPU"] = "1"
    os.environ["TRITON_INTERPRET"] = "1"


def _init(checkout: str, suite: str, timeout_s: float) -> None:
    global _module, _suite
    _suite = SUITES[suite]
    _module = _load_call_acc(Path(checkout), _suite, timeout_s)


def _run(code: str, test: str, file_name: str, folder: str) -> dict[str, Any]:
    """One answer through TritonBench's run_script_on_gpu; its printed stdout/stderr parsed back."""
    assert _module is not None
    results_path = Path(folder) / (file_name + ".pt")
    os.environ["KV_RESULTS_PATH"] = str(results_path)
    printed = io.StringIO()
    started = time.monotonic()
    with contextlib.redirect_stdout(printed):
        success, _ = _module.run_script_on_gpu(
            code, PRELUDE + test + POSTLUDE.format(results=_suite.results), file_name, folder, 0
        )
    text = printed.getvalue()
    out_marker, err_marker = (
        f"=== Output for {file_name} on GPU 0 ===\n",
        f"=== Errors for {file_name} on GPU 0 ===\n",
    )
    stdout = text.split(out_marker, 1)[-1].split(err_marker, 1)[0]
    stderr = text.split(err_marker, 1)[-1]
    return {"call": bool(success), "stdout": stdout, "stderr_tail": stderr.strip()[-400:],
            "results_path": str(results_path) if results_path.exists() else None,
            "seconds": round(time.monotonic() - started, 2)}  # fmt: skip


def _gold(checkout: str, file_name: str, folder: str) -> dict[str, Any]:
    """The gold file run the same way (its reference code in the answer's place)."""
    source = (Path(checkout) / _suite.folder / file_name).read_text()
    assert _module is not None
    [test] = _module.get_test(_module.py_folder, [file_name])
    reference = source.split("#" * 146)[0]
    return _run(reference, test, file_name, folder)


def _g_files(module: ModuleType, items: list[dict[str, Any]]) -> dict[int, str | None]:
    """TritonBench-G's task file of each answer, by its label (`get_file_order`); per answer where the
    whole file cannot be ordered (its assertions expect exactly the 184 answers of a complete file)."""
    labels = [item.get("label", "") for item in items]
    try:
        return dict(enumerate(module.get_file_order(labels)))
    except Exception:  # noqa: BLE001 - the same rule, one answer at a time
        data = json.loads(Path(module.statis_path).read_text(encoding="utf-8"))
        found: dict[int, str | None] = {}
        for index, label in enumerate(labels):
            label = label.replace("<|im_end|>", "").replace("<|EOT|>", "")
            found[index] = next((entry["file"] for entry in data if label and label in entry["output"]), None)
        return found


def same_results(first: Any, second: Any, atol: float, rtol: float) -> bool:
    import torch

    if isinstance(first, torch.Tensor) or isinstance(second, torch.Tensor):
        if not (isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor)):
            return False
        if first.shape != second.shape:
            return False
        if first.is_complex() != second.is_complex():
            return False
        if first.is_complex():
            first, second = (
                torch.view_as_real(first.resolve_conj()),
                torch.view_as_real(second.resolve_conj()),
            )
        return bool(
            torch.allclose(first.double().cpu(), second.double().cpu(), atol=atol, rtol=rtol, equal_nan=True)
        )
    if isinstance(first, dict) and isinstance(second, dict):
        return first.keys() == second.keys() and all(
            same_results(first[k], second[k], atol, rtol) for k in first
        )
    if isinstance(first, (list, tuple)) and isinstance(second, (list, tuple)):
        return len(first) == len(second) and all(
            same_results(a, b, atol, rtol) for a, b in zip(first, second, strict=True)
        )
    if isinstance(first, float) and isinstance(second, float):
        return abs(first - second) <= atol + rtol * abs(second) or (first != first and second != second)
    return bool(first == second)


def _compares_equal(first: Any, second: Any, atol: float, rtol: float) -> bool:
    """same_results, where results that cannot be compared (a dtype or type torch refuses) are not equal."""
    try:
        return same_results(first, second, atol, rtol)
    except Exception:  # noqa: BLE001 - one answer's odd results never stop the run
        return False


def _load(path: str | None) -> Any:
    import torch

    if path is None:
        return None
    try:
        return torch.load(path, weights_only=False, map_location="cpu")
    except Exception:  # noqa: BLE001 - an unreadable save is no result
        return None


def in_task_order(work: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answers grouped by task (those TritonBench cannot place first), each group in file order: a task's gold
    file then runs once for every model's answer to it in this run, instead of once per answer file when the
    files go one after another (a call that reaches 91 answers of one model runs 91 golds; on G a gold run costs
    as much as an answer's)."""
    return sorted(work, key=lambda item: item["row"]["task"] or "")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--checkout", type=Path, required=True)
    parser.add_argument("--answers", type=Path, required=True, help="a JSONL file or a folder of them")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--procs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout-s", type=float, default=180.0)
    parser.add_argument("--deadline-s", type=float, default=0, help="submit nothing new after this (0: none)")
    parser.add_argument("--atol", type=float, default=1e-2)
    parser.add_argument("--rtol", type=float, default=1e-2)
    parser.add_argument(
        "--cpu", action="store_true", help="run on the CPU (device mapped, Triton interpreted)"
    )
    parser.add_argument("--suite", choices=sorted(SUITES), default="T", help="TritonBench-T (default) or -G")
    parser.add_argument("--limit", type=int, default=0, help="at most this many answers per file (0: all)")
    args = parser.parse_args()
    started = time.monotonic()
    suite = SUITES[args.suite]
    # A checkout missing a part of the suite is a set-up error, not a verdict on each answer: checked before
    # anything is written, or every answer becomes a 'cannot match' row that a resume then counts as done
    # (a carried checkout without data/TritonBench_T_v1.jsonl wrote 901 such rows on the H200, 2026-12-03).
    missing = [
        part
        for part in (suite.evaluator, suite.folder, suite.statistics)
        if not (args.checkout / part).exists()
    ]
    if missing:
        print(f"error: {args.checkout} is not a TritonBench-{args.suite} checkout: missing {', '.join(missing)}",
              file=sys.stderr)  # fmt: skip
        return 2
    module = _load_call_acc(args.checkout, suite, args.timeout_s)
    files = sorted(args.answers.glob("*.jsonl")) if args.answers.is_dir() else [args.answers]
    done = set()
    if args.out.exists():
        done = {(row["file"], row["line"]) for row in map(json.loads, args.out.read_text().splitlines())}
    work: list[dict[str, Any]] = []
    for path in files:
        model = path.stem.removeprefix("output_")
        lines = path.read_text(encoding="utf-8").splitlines()
        items = [json.loads(line) for line in lines if line.strip()]
        files_by_label = _g_files(module, items) if args.suite == "G" else {}
        for number, item in enumerate(items[: args.limit or None]):
            if (path.name, number) in done:
                continue
            row: dict[str, Any] = {"file": path.name, "line": number, "model": model, "task": None}
            try:
                if args.suite == "G":
                    row["task"] = files_by_label[number]
                else:
                    instruction = item[next(iter(item))]  # TritonBench reads the first key's value
                    [row["task"]] = module.get_corresponding_files([instruction])
                [test] = module.get_test(module.py_folder, [row["task"]])
            except Exception as error:  # noqa: BLE001 - TritonBench cannot place this answer
                row["error"] = f"TritonBench cannot match it: {type(error).__name__}: {error}"[:300]
                work.append({"row": row})
                continue
            extract = module.process_code if args.suite == "G" else module.clear_code
            work.append({"row": row, "code": extract(item["predict"]), "test": test})
    print(f"{len(work)} answers to run ({len(done)} already in {args.out})", flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="tb-eval-"))
    if args.cpu:
        _use_cpu(scratch)
    gold: dict[str, Future[dict[str, Any]]] = {}
    with ProcessPoolExecutor(args.procs, initializer=_init, initargs=(str(args.checkout), args.suite, args.timeout_s)) as pool, \
            args.out.open("a") as out:  # fmt: skip
        pending: dict[Future[dict[str, Any]], dict[str, Any]] = {}
        queue = in_task_order(work)
        written = 0

        def finish(future: Future[dict[str, Any]], item: dict[str, Any]) -> None:
            nonlocal written
            row, result = item["row"], future.result()
            expected = gold[row["task"]].result()
            row.update(call=result["call"], seconds=result["seconds"], stderr_tail=result["stderr_tail"])
            # whether the gold file itself ran in this harness: a task KernelVault refuses because its gold
            # operator faults is a disagreement only where TritonBench's run of the same gold succeeds
            row["gold_call"] = bool(expected["call"])
            row["exe"] = result["call"] and result["stdout"] == expected["stdout"]
            answer, reference = _load(result["results_path"]), _load(expected["results_path"])
            row["results"] = bool(
                result["call"] and answer is not None and reference is not None
                and _compares_equal(answer, reference, args.atol, args.rtol)
            )  # fmt: skip
            out.write(json.dumps(row) + "\n")
            out.flush()
            written += 1

        while queue or pending:
            while queue and len(pending) < args.procs * 2:
                if args.deadline_s and time.monotonic() - started > args.deadline_s:
                    print(f"deadline: {len(queue)} answers left for the next run", flush=True)
                    queue.clear()
                    break
                item = queue.pop(0)
                row = item["row"]
                if row["task"] is None:
                    row.update(call=False, exe=False, results=False)
                    out.write(json.dumps(row) + "\n")
                    continue
                if row["task"] not in gold:
                    folder = scratch / "gold"
                    folder.mkdir(exist_ok=True)
                    gold[row["task"]] = pool.submit(_gold, str(args.checkout), row["task"], str(folder))
                folder = scratch / f"{row['model']}-{row['line']}"
                folder.mkdir(exist_ok=True)
                pending[pool.submit(_run, item["code"], item["test"], row["task"], str(folder))] = item
            if not pending:
                break
            finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for future in finished:
                finish(future, pending.pop(future))
        print(f"{written} answers written to {args.out} in {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
