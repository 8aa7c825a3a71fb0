"""Training throughput: tokens per second and model FLOPs utilisation (MFU).

MFU = achieved model FLOPs per second / the device's peak, where the peak is the bf16 matrix-multiply
rate measured on this device (`measured_matmul_tflops`), not the datasheet's. Model FLOPs per token
follow the PaLM paper (appendix B): 2 FLOPs per weight for the forward pass, 2 more for the input
gradients, 2 more for the weight gradients, plus 12·layers·heads·head_dim·sequence for attention. What
this leaves out, on purpose: recomputation by gradient checkpointing (hardware FLOPs, not model FLOPs),
the LoRA adapters' own matmuls (under 1% at rank 64 on an 8B model), and the causal halving of
attention (counted whole, as PaLM does). Under LoRA the frozen weights get no gradient, so a token
costs 4 FLOPs per weight instead of 6. Packed sequences are counted at the full packed length.

Step time runs from `on_step_begin` to `on_step_end` (forward, backward and optimizer of one optimizer
step) after a device synchronisation, so evaluation, checkpointing and logging between steps are left
out. The first `warmup_steps` steps are discarded (allocator growth, kernel autotuning).
"""

from __future__ import annotations

import time
from typing import Any

import torch
from transformers import PretrainedConfig, TrainerCallback


def training_flops_per_token(config: PretrainedConfig, sequence_length: int, lora: bool) -> float:
    text = config.get_text_config()
    hidden, layers, vocab = text.hidden_size, text.num_hidden_layers, text.vocab_size
    heads, kv_heads = text.num_attention_heads, text.num_key_value_heads
    head_dim = getattr(text, "head_dim", None) or hidden // heads
    attention_weights = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim  # q, o; k, v
    mlp_weights = 3 * hidden * text.intermediate_size  # SwiGLU: gate, up, down
    matmul_weights = layers * (attention_weights + mlp_weights) + hidden * vocab  # lm_head; not the lookup
    per_weight = 4 if lora else 6
    return per_weight * matmul_weights + 12 * layers * heads * head_dim * sequence_length


def measured_matmul_tflops(device: torch.device, dtype: torch.dtype = torch.bfloat16, size: int = 8192,
                           repetitions: int = 50) -> float:  # fmt: skip
    """Dense matmul TFLOP/s on `device`: the ceiling MFU is measured against."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    for _ in range(5):
        a @ b
    _synchronize(device)
    started = time.perf_counter()
    for _ in range(repetitions):
        a @ b
    _synchronize(device)
    return 2 * size**3 * repetitions / (time.perf_counter() - started) / 1e12


def sequence_fill(dataset: Any, max_length: int) -> dict[str, float]:
    """How full the training sequences are: tokens per sequence of the (packed) training set, over max_length.

    Read from the dataset the trainer iterates, not inferred from steps: an epoch's last optimizer step
    can hold fewer sequences than `gradient_accumulation_steps` (7 packed sequences make steps of 4 and 3),
    so tokens per step over sequences per step would under-count.
    """
    import pyarrow.compute as pc

    if dataset is None or "input_ids" not in (dataset.column_names or []) or not len(dataset):
        return {}
    lengths = dataset.select_columns(["input_ids"]).with_format("arrow")[:]["input_ids"]
    tokens = pc.sum(pc.list_value_length(lengths)).as_py()
    per_sequence = tokens / len(dataset)
    return {"train_sequences": float(len(dataset)), "tokens_per_sequence": per_sequence,
            "sequence_fill": per_sequence / max_length}  # fmt: skip


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class ThroughputCallback(TrainerCallback):
    """Times optimizer steps and counts their tokens (Trainer's num_input_tokens_seen, all processes)."""

    def __init__(self, flops_per_token: float, peak_tflops: float | None, world_size: int = 1,
                 warmup_steps: int = 2) -> None:  # fmt: skip
        self.flops_per_token = flops_per_token
        self.peak_tflops = peak_tflops
        self.world_size = world_size
        self.warmup_steps = warmup_steps
        self.seconds = 0.0
        self.tokens = 0
        self.steps = 0
        self._begin: tuple[float, int] | None = None
        self._seen = 0  # steps observed in this process (a resumed run starts past global step 0)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        _synchronize(args.device)
        self._begin = (time.perf_counter(), state.num_input_tokens_seen)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        _synchronize(args.device)
        self._seen += 1
        if self._begin is None or self._seen <= self.warmup_steps:
            return
        started, tokens = self._begin
        self.seconds += time.perf_counter() - started
        self.tokens += state.num_input_tokens_seen - tokens
        self.steps += 1

    def metrics(self) -> dict[str, float]:
        if not self.steps or self.seconds <= 0:
            return {}
        tokens_per_second = self.tokens / self.seconds
        per_device = tokens_per_second / self.world_size
        result = {
            "throughput_steps": float(self.steps),
            "tokens_per_second": tokens_per_second,
            "tokens_per_second_per_device": per_device,
            "model_tflops_per_device": per_device * self.flops_per_token / 1e12,
        }
        if self.peak_tflops:
            result["peak_bf16_tflops"] = self.peak_tflops
            result["mfu"] = result["model_tflops_per_device"] / self.peak_tflops
        return result
