#!/usr/bin/env bash
# Everything that needs a GPU, in one call (the H200 lease is short and each start costs minutes):
#   the GPU-marked tests (the main job over the bundled examples, on the device), then the timing
#   benchmarks. Results (markdown tables, logs) go to $OUT, or to $KV_RESULTS_DIR, or /tmp/kv-results.
# Wheels that the device image lacks (datasets, dill, multiprocess) travel in .whl/ (docs/gpu.md).
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$KV_RESULTS_DIR/device.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$KV_RESULTS_DIR/device.txt"
# The timing harness's own references to the CUDA runtime (events, sleep, streams) must be PyTorch's: [] here.
python3 -c "from kernelvault.toolchain.sandboxed import timing; print('harness_replaced', timing.harness_replaced())" \
  | tee -a "$KV_RESULTS_DIR/device.txt"
status=0
# KV_GPU_TESTS narrows the tests (a path or node id), KV_GPU_TARGETS the example targets (triton,hip).
# KV_GPU_SUITES runs several test lists side by side on the same GPU instead ("a b; c; d": one pytest per
# ';'-separated list, each writing to its own suiteN/ folder; split on spaces: a -k expression takes none): the correctness suites assert verdicts, not
# timings, and a lease is short. Benchmarks never run beside them.
if [ -n "${KV_GPU_SUITES:-}" ]; then
  pids=() n=0
  IFS=';' read -ra suites <<< "$KV_GPU_SUITES"
  for suite in "${suites[@]}"; do
    n=$((n + 1)); dir="$KV_RESULTS_DIR/suite$n"; mkdir -p "$dir"
    (KV_RESULTS_DIR="$dir" python3 -m pytest -m gpu $suite -q -s -p no:cacheprovider > "$dir/gpu-tests.log" 2>&1;
     echo "suite$n ($suite): pytest exit $?" | tee -a "$dir/gpu-tests.log") &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  for dir in "$KV_RESULTS_DIR"/suite*; do tail -n 4 "$dir/gpu-tests.log"; done
  grep -q "pytest exit [^0]" "$KV_RESULTS_DIR"/suite*/gpu-tests.log && status=1
elif [ "${KV_SKIP_TESTS:-0}" != 1 ]; then
  python3 -m pytest -m gpu ${KV_GPU_TESTS:-tests/gpu} -q -s -p no:cacheprovider 2>&1 \
    | tee "$KV_RESULTS_DIR/gpu-tests.log" || status=1
fi
# KV_BENCH picks benchmarks: timing (Triton timing fidelity), hip_build (native vs load_inline build time),
# throughput (fresh process vs persistent workers), busy (device busy fraction, simulated endpoint),
# scaling (persistent workers on GPU 0, then on GPUs 0 and 1: the nvidia-h200-x2 machine), ray_scaling
# (the same through the Ray executor: one verification actor, then two, on a local Ray instance).
# The throughput benches verify KV_BENCH_LIMIT candidates of the mixed set (evenly spaced over it, so
# honest, broken, hostile, Triton and HIP all stay in), each within 30 s; KV_BENCH_MODES: throughput's
# modes; KV_BENCH_EXTRA: more throughput arguments (e.g. --chunk 1/3 --save \$OUT/chunk1.json).
SET="--platform cuda --set mixed --limit ${KV_BENCH_LIMIT:-60} --timeout-s 30"
for bench in ${KV_BENCH:-timing hip_build}; do
  case "$bench" in
    throughput) python3 bench/verify_throughput.py $SET --compile-workers 8 --modes "${KV_BENCH_MODES:-fresh,persistent}" ${KV_BENCH_EXTRA:-} 2>&1 \
                  | tee "$KV_RESULTS_DIR/verify_throughput.md" || status=1 ;;
    scaling) python3 bench/verify_throughput.py $SET --compile-workers 8 \
               --modes persistent@0,persistent@0+1 2>&1 | tee "$KV_RESULTS_DIR/gpu_scaling.md" || status=1 ;;
    ray_scaling) python3 bench/verify_throughput.py $SET --compile-workers 8 \
                   --modes ray@0,ray@0+1 2>&1 | tee "$KV_RESULTS_DIR/ray_scaling.md" || status=1 ;;
    busy) python3 bench/gpu_busy.py --platform cuda --samples "${KV_BUSY_SAMPLES:-8}" --latency-median-s 20 --concurrency 64 2>&1 \
            | tee "$KV_RESULTS_DIR/gpu_busy.md" || status=1 ;;
    # The timed calls against the watched call's own kernels (own_work): every honest example's ratio, the profile's cost.
    own_work) python3 bench/own_work.py 2>&1 | tee "$KV_RESULTS_DIR/own_work.md" || status=1 ;;
    timing) python3 bench/timing_fidelity.py 2>&1 | tee "$KV_RESULTS_DIR/timing_fidelity.log" || status=1 ;;
    # Every bundled performance case, side by side in one run: the timing protocols (rotating fixed inputs against
    # fresh inputs with every output checksummed: speedups within 2%, spreads within 3%), or with
    # KV_SPREAD_COMPARE=calls one call per sample against the chosen calls per sample (issue #24 item 3).
    small_spread) python3 bench/small_case_spread.py --compare "${KV_SPREAD_COMPARE:-protocols}" ${KV_SPREAD_ARGS:-} 2>&1 \
                    | tee "$KV_RESULTS_DIR/small_case_spread.log" || status=1 ;;
    # Issue #24 item 1: can the parent map a jailed worker's device memory (an exported file descriptor)?
    device_share) python3 bench/device_share_probe.py 2>&1 | tee "$KV_RESULTS_DIR/device_share_probe.log" || status=1 ;;
    # The device record's launch link inside the jail against a plain process (the same program, three ways;
    # KV_PROBE_ARGS=--guarded: only the jailed run with the worker's guards installed).
    record_jail) python3 bench/device_record_jail_probe.py ${KV_PROBE_ARGS:-} 2>&1 | tee "$KV_RESULTS_DIR/device_record_jail.md" || status=1 ;;
    probe) python3 bench/device_probe.py 2>&1 | tee "$KV_RESULTS_DIR/device_probe.md" || status=1 ;;
    # This tree against another version of it (KV_OLD_TREE, e.g. a git worktree carried with the call), on the
    # same candidate list, one after the other in this call: persistent lanes, KV_BENCH_EXTRA as above.
    old_new) for tree in "${KV_OLD_TREE:?}" .; do
               (cd "$tree" && PYTHONPATH="$PWD${PYTHONPATH:+:${PYTHONPATH#*:}}" python3 bench/verify_throughput.py \
                  --platform cuda --timeout-s 30 --compile-workers 8 --modes persistent \
                  $([ "$tree" = . ] && echo "--candidates ${KV_CANDIDATES:?}" || echo "--set mixed --limit ${KV_BENCH_LIMIT:-60}") \
                  ${KV_BENCH_EXTRA:-} --save "$KV_RESULTS_DIR/old_new-$(basename "$(realpath "$tree")").json") 2>&1 \
                 | tee -a "$KV_RESULTS_DIR/old_new.md" || status=1
             done ;;
    # Issue #19's side-by-side on TritonBench-T or -G (KV_TB_SUITE=T|G; KV_TRITONBENCH: a checkout, or the parts of one, carried;
    # KV_ANSWERS: its answers folder or one file). Both resume from what KV_SIDE_DIR holds (carried from the
    # last call), so a chunk that stops at its deadline is continued by the next call.
    tritonbench_eval) python3 bench/tritonbench_eval.py --checkout "${KV_TRITONBENCH:?}" --answers "${KV_ANSWERS:?}" \
                        --suite "${KV_TB_SUITE:-T}" --out "${KV_SIDE_DIR:?}/tritonbench-${KV_TB_SUITE:-T}.jsonl" --procs "${KV_TB_PROCS:-16}" \
                        --deadline-s "${KV_TB_DEADLINE_S:-480}" 2>&1 | tee "$KV_RESULTS_DIR/tritonbench_eval.log" || status=1 ;;
    # --stop-after: at KV_KV_SECONDS it takes no new answers and writes those in flight (nothing is verified
    # twice across chunks); the timeout is only the backstop for a drain that hangs.
    tritonbench_kv) timeout -s INT -k 30 "$(( ${KV_KV_SECONDS:-480} + 90 ))" python3 -c "from kernelvault.cli import main; main()" \
                      corpus --stop-after "${KV_KV_SECONDS:-480}" \
                      --tasks "${KV_TRITONBENCH:?}/data/TritonBench_${KV_TB_SUITE:-T}_v1" --answers "${KV_ANSWERS:?}" \
                      --out "${KV_SIDE_DIR:?}/kernelvault-${KV_TB_SUITE:-T}" --platform cuda --devices 0 --no-progress \
                      --lanes-per-gpu "${KV_LANES:-4}" --compile-workers "${KV_COMPILE_WORKERS:-8}" 2>&1 \
                      | grep -v '^retry on resume' | tail -n 40 | tee "$KV_RESULTS_DIR/tritonbench_kv.log"
                    echo "corpus exit ${PIPESTATUS[0]}" ;;  # (the task-level refusals are in the ledger; the summary is kept)
    # Issue #20's reward path: the reward service on a lane pool against a fresh process per request, one run
    # (KV_REWARD_MODES: e.g. fresh,pool,pool:4 for 4 lanes on the GPU).
    reward_path) python3 bench/reward_path.py --platform cuda --repeats "${KV_REPEATS:-4}" --in-flight 4 \
                   --modes "${KV_REWARD_MODES:-fresh,pool}" 2>&1 \
                   | tee "$KV_RESULTS_DIR/reward_path.md" || status=1 ;;
    # Issue #22: every optimisation baseline against the bundled optimised example, timed on one lane (>= 1.5x);
    # KV_BASELINE_TASKS / KV_BASELINE_TARGETS narrow it (e.g. one re-timed baseline).
    optimisation_baselines) python3 bench/optimisation_baselines.py --platform cuda --lanes "${KV_LANES:-1}" \
                              --tasks "${KV_BASELINE_TASKS:-}" --targets "${KV_BASELINE_TARGETS:-triton,hip}" 2>&1 \
                              | tee "$KV_RESULTS_DIR/optimisation_baselines.md" || status=1 ;;
    # `kernelvault tasks check` on the device over KV_CHECK_PATH (e.g. a ROCmBench folder: its gold kernels on CUDA).
    tasks_check) python3 -m kernelvault.cli tasks check "${KV_CHECK_PATH:?}" --workers "${KV_CHECK_WORKERS:-4}" 2>&1 | tee "$KV_RESULTS_DIR/tasks_check.log" || status=1 ;;
    # Issue #23: the bundled QA programs that use only the HIP runtime, run through the HIP-to-CUDA header.
    qa_run) python3 bench/qa_run_gpu.py 2>&1 | tee "$KV_RESULTS_DIR/qa_run.md" || status=1 ;;
    hip_build) python3 bench/hip_build_time.py --out "$KV_RESULTS_DIR/hip_build_time.md" 2>&1 \
                 | tee "$KV_RESULTS_DIR/hip_build_time.log" || status=1 ;;
  esac
done
# The device tool returns at most 8 files: KV_PACK_RESULTS=1 leaves one archive of everything instead.
if [ "${KV_PACK_RESULTS:-0}" = 1 ]; then
  tar czf /tmp/kv-results.tar.gz -C "$KV_RESULTS_DIR" . && rm -rf "${KV_RESULTS_DIR:?}"/* \
    && mv /tmp/kv-results.tar.gz "$KV_RESULTS_DIR/results.tar.gz"
fi
exit $status
