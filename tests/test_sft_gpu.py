"""Qwen3-8B's architecture with random weights and LoRA on one GPU: 20 steps at 4096 tokens, no OOM.

Marked `gpu` (run on the H200, never in CI). Nothing is downloaded: `random:qwen3-8b` builds the
Qwen3-8B shape (36 layers, hidden 4096, GQA 32/8, SwiGLU 12288, vocab 151 936) on the GPU in bf16, with a
BPE tokenizer trained on the spot; the data are every bundled Triton and HIP example written as correct
corpus rows. Each is about 2.2 k tokens (the tokenizer is trained on little text), so best-fit packing
would put one per 4096-token sequence: the run packs `wrapped` (samples concatenated and cut at 4096) so
the sequences are full, and checks it. Tokens per second and model FLOPs utilisation (against this
GPU's measured bf16 matmul rate, see `kernelvault.sft.throughput`) are printed and written to $KV_RESULTS_DIR/sft-qwen3-8b-lora.md for bench/results/.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("peft")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]

ROOT = Path(__file__).resolve().parents[1]


def test_qwen3_8b_lora_runs_20_steps_at_4096_tokens(tmp_path: Path) -> None:
    from corpus_rows import row_for

    from kernelvault.cli.sft import main
    from kernelvault.corpus.shards import ShardWriter

    # Every bundled correct kernel, Triton and HIP (24 samples; 10 tasks train, about 28 k tokens an epoch
    # with this tokenizer), so wrapped packing has enough text to fill its sequences.
    examples = [
        path for language in ("triton", "hip") for path in sorted((ROOT / "examples" / language).glob("*.py"))
    ]
    corpus = tmp_path / "corpus"
    with ShardWriter(corpus, "triton", "run1") as writer:
        writer.write_many([row_for(path.stem, path.read_text(), True, index, platform="cuda")
                           for index, path in enumerate(examples)])  # fmt: skip
    out = tmp_path / "sft"
    config = tmp_path / "qwen3-8b-lora-wrapped.yaml"  # the shipped config, every sequence filled to 4096
    config.write_text((ROOT / "sft" / "configs" / "qwen3-8b-lora.yaml").read_text()
                      + "\ntrainer:\n  packing_strategy: wrapped\n")  # fmt: skip
    torch.cuda.reset_peak_memory_stats()
    code = main([
        "--config", str(config), "--dataset", str(corpus),
        "--model", "random:qwen3-8b", "--max-length", "4096", "--max-steps", "20",
        "--gradient-accumulation-steps", "4", "--save-steps", "1000", "--eval-steps", "0", "--eval-task-fraction",
        "0.2", "--evaluate", "off", "--save-merged", "false", "--output-dir", str(out),
    ])  # fmt: skip
    assert code == 0
    metrics = json.loads((out / "sft_metrics.json").read_text())
    values = metrics["metrics"]
    assert metrics["global_step"] == 20 and values["tokens_per_second"] > 0 and 0 < values["mfu"] < 1
    # Measured on the packed training set: the last sequence of the set is partial, every other one full.
    per_sequence = values["tokens_per_sequence"]
    assert per_sequence >= 0.9 * 4096, f"sequences hold {per_sequence:.0f} tokens, not ~4096"
    peak_gib = torch.cuda.max_memory_allocated() / 2**30
    table = "\n".join([
        "| model | LoRA | seq | tokens per sequence | micro-batch × accum | steps | tokens/s | model TFLOP/s | bf16 peak (measured) | MFU | peak memory |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        f"| Qwen3-8B (random init) | r=64, all projections | 4096 | {per_sequence:.0f} | 1 × 4 | 20 | {values['tokens_per_second']:.0f} | "
        f"{values['model_tflops_per_device']:.1f} | {values['peak_bf16_tflops']:.0f} TFLOP/s | {values['mfu']:.1%} | "
        f"{peak_gib:.1f} GiB |",
    ])  # fmt: skip
    print(f"\n{torch.cuda.get_device_name()}\n{table}\ntrain loss {values['train_loss']:.3f}")
    if results := os.environ.get("KV_RESULTS_DIR"):
        Path(results, "sft-qwen3-8b-lora.md").write_text(f"# SFT throughput on {torch.cuda.get_device_name()}\n\n"
                                                         f"{table}\n")  # fmt: skip
