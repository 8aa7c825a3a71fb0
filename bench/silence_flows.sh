#!/bin/bash
# The README's flows, each measured by bench/silence.py: its total time and its longest stretch without output.
#   bench/silence_flows.sh RESULTS.jsonl SCRATCH_DIR       then: python bench/silence.py --table RESULTS.jsonl
# Runs from the repository root with .venv (make builds it); SCRATCH_DIR is emptied first. About 4 minutes on
# a 2-core CPU machine (the corpus's timeout example alone takes its 60 s).
set -u
RESULTS=$(realpath -m "$1")
SCRATCH=$(realpath -m "$2")
cd "$(dirname "$0")/.."
KV=.venv/bin/kernelvault
MEASURE=(.venv/bin/python bench/silence.py --quiet --json "$RESULTS")
FIXTURE=tests/fixtures/tritonbench
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH"
"${MEASURE[@]}" --label "corpus --target triton" -- $KV corpus --target triton --out "$SCRATCH/triton"
"${MEASURE[@]}" --label "verify" -- $KV verify --task tasks/softmax.py --candidate examples/triton/softmax.py --json
"${MEASURE[@]}" --label "eval --answers" -- $KV eval --suite $FIXTURE/data/TritonBench_T_v1 \
    --answers $FIXTURE/LLM_generated/Bench_T_general_purpose/output_fixture-model.jsonl --out "$SCRATCH/eval"
"${MEASURE[@]}" --label "rl tiny-model" -- $KV rl tiny-model --out "$SCRATCH/tiny-qwen3"
"${MEASURE[@]}" --label "rl (GRPO, tiny)" -- $KV rl --config rl/configs/tiny.yaml --model "$SCRATCH/tiny-qwen3" \
    --output-dir "$SCRATCH/rl-tiny"
"${MEASURE[@]}" --label "sft (tiny, with pass rate)" -- $KV sft --config sft/configs/tiny.yaml \
    --dataset "$SCRATCH/triton" --output-dir "$SCRATCH/sft-tiny"
"${MEASURE[@]}" --label "corpus --target qa" -- $KV corpus --target qa --out "$SCRATCH/qa"
