#!/usr/bin/env bash
# One device call of issue #19's side-by-side (TritonBench's own evaluator and KernelVault on the same answers),
# resumable across calls and sessions: both tools resume from .side, and the call leaves .side packed in
# $OUT/side.tgz. A machine given back keeps nothing, and a new session's checkout has no .side either (the
# first chunks' rows were lost that way): commit the archive as bench/results/side/side-T.tgz (or -G) after
# each call. A call without .side starts from that committed archive, so carrying .side is optional. TritonBench's runs go first, then KernelVault's corpus job alone on the
# GPU, so that its timings are not shared with another process. Carry: .whl .ext .side
#   KV_TB_SUITE=T|G  KV_TB_SECONDS (TritonBench's share, default 170)  KV_KV_SECONDS (KernelVault's, default 300)
# A call of 600 s fits: the wheels (20 s), TritonBench (its share, then the answers in flight finish: up to a
# minute), KernelVault (start-up, its share of taking answers, then the drain of those in flight), the packing.
# The first call of a new side-by-side passes KV_SIDE_FRESH=1; later ones resume (the script refuses to start over).
# .ext/TritonBench: the parts of a checkout (thunlp/TritonBench) that both tools read, e.g.
#   git -C CHECKOUT archive HEAD data/TritonBench_T_v1 data/TritonBench_T_v1.jsonl data/TritonBench_G_v1 \
#     data/TritonBench_G_v1.json performance_metrics/perf_T EVAL/eval_T EVAL/eval_G LLM_generated/Bench_T_general_purpose \
#     LLM_generated/Bench_G_general_purpose \
#     | tar x -C .ext/TritonBench        (about 17 MB; bench/tritonbench_eval.py refuses a checkout missing a part)
#   KV_CHECK_PATH: also `tasks check` this folder on the device (e.g. .ext/ROCm_v1), beside TritonBench's runs
set -uo pipefail
cd "$(dirname "$0")/.."
suite="${KV_TB_SUITE:-T}"
out="${OUT:-/tmp/kv-results}"
if [ ! -d .side ] && [ -f "bench/results/side/side-$suite.tgz" ]; then tar xzf "bench/results/side/side-$suite.tgz"; fi
# Nothing to resume from is a mistake more often than a plan (2026-12-03: a chunk whose predecessor's side.tgz had
# not been unpacked or committed started both tools over, 516 s of device time): a new side-by-side says so.
if [ ! -d .side ] && [ "${KV_SIDE_FRESH:-0}" != 1 ]; then
  echo "no .side and no bench/results/side/side-$suite.tgz to resume from: unpack the last call's side.tgz here," \
       "or pass KV_SIDE_FRESH=1 to start a new side-by-side" >&2
  exit 2
fi
mkdir -p .side "$out"
# The call's own wall (KV_CALL_SECONDS, default 540, under the device's 600 s): every phase is cut to what is left,
# and .side is packed after each phase and on any exit. 2026-12-04: a call whose TritonBench drain (32 answers in
# flight, up to 180 s each) and KernelVault share overran 600 s was killed before its packing: 600 s of device
# time, nothing returned.
call_seconds="${KV_CALL_SECONDS:-540}"
started=$SECONDS
left() { echo $(( call_seconds - (SECONDS - started) )); }
pack() { tar czf "$out/side.tgz" .side; }
trap pack EXIT
# KV_TRITONBENCH / KV_ANSWERS: another carried checkout, or a subset of its answer files (a folder or one file)
checkout="${KV_TRITONBENCH:-.ext/TritonBench}"
common=(KV_SKIP_TESTS=1 KV_TB_SUITE="$suite" KV_TRITONBENCH="$checkout" KV_SIDE_DIR=.side
        KV_ANSWERS="${KV_ANSWERS:-$checkout/LLM_generated/Bench_${suite}_general_purpose}")
env "${common[@]}" KV_BENCH=none OUT=/tmp/kv-setup bash bench/gpu_session.sh >/dev/null 2>&1  # installs the wheels once
if [ -n "${KV_CHECK_PATH:-}" ]; then
  (env KV_SKIP_TESTS=1 KV_BENCH=tasks_check KV_CHECK_PATH="$KV_CHECK_PATH" OUT=/tmp/kv-check \
     timeout "${KV_TB_SECONDS:-170}" bash bench/gpu_session.sh >/dev/null 2>&1; cp /tmp/kv-check/tasks_check.log "$out/") &
fi
# A share of 0 skips that tool in this call.
if [ "${KV_TB_SECONDS:-170}" != 0 ]; then
  # Its answers in flight at the deadline may take minutes to drain: the phase is cut at its share + 60 s (the
  # lines written so far are kept, each is flushed) and its processes and their tests are killed before
  # KernelVault times anything.
  tb_wall=$(( ${KV_TB_SECONDS:-170} + 60 )); [ "$tb_wall" -gt "$(left)" ] && tb_wall=$(( $(left) - 30 ))
  env "${common[@]}" KV_BENCH=tritonbench_eval KV_TB_DEADLINE_S="${KV_TB_SECONDS:-170}" OUT=/tmp/kv-tb \
    timeout -s INT -k 10 "$tb_wall" bash bench/gpu_session.sh >/dev/null 2>&1
  pkill -KILL -f 'tritonbench_eval.py|tb-eval-' 2>/dev/null
  tail -n 3 /tmp/kv-tb/tritonbench_eval.log
  pack
fi
wait
# KernelVault's share: at most what is left less its start-up and drain (gpu_session's backstop is share + 90 s).
kv_seconds="${KV_KV_SECONDS:-300}"
[ "$kv_seconds" -gt $(( $(left) - 120 )) ] && kv_seconds=$(( $(left) - 120 ))
if [ "$kv_seconds" -ge 30 ]; then
  env "${common[@]}" KV_BENCH=tritonbench_kv KV_KV_SECONDS="$kv_seconds" KV_LANES="${KV_LANES:-6}" OUT=/tmp/kv-kv \
    timeout -s INT -k 10 "$(( $(left) - 10 ))" bash bench/gpu_session.sh >/dev/null 2>&1
  grep -v '^ ' /tmp/kv-kv/tritonbench_kv.log | tail -n 24
else
  echo "KernelVault skipped: ${kv_seconds} s left of its share in this call"
fi
cp /tmp/kv-tb/tritonbench_eval.log /tmp/kv-kv/tritonbench_kv.log /tmp/kv-kv/device.txt "$out/" 2>/dev/null
wc -l ".side/tritonbench-$suite.jsonl"
