"""The model and tokenizer to fine-tune: a pretrained checkpoint, or a Qwen3 built from scratch.

`model` in the configuration is either a path or Hub id that transformers loads (`Qwen/Qwen3-8B`, a
checkpoint folder), or `random:NAME` for a Qwen3 of one of the shapes below with random weights. Nothing
is downloaded for a random model: its tokenizer is a byte-level BPE trained on the spot on the training
texts (or the tokenizer named by `tokenizer`), with Qwen3's special tokens and Qwen3's stock chat
template, so the rest of the pipeline cannot tell it from a real Qwen3 checkpoint.

Shapes: `tiny` (0.2 M parameters with a 1k vocabulary, for tests and CPU smoke runs), `small` (25.6 M
with a 4k vocabulary, trainable from scratch on a CPU in under half an hour) and `qwen3-8b` (the Qwen3-8B architecture: 36 layers, hidden 4096,
GQA 32/8 heads of 128, SwiGLU 12288, vocab 151 936; 8.2 B parameters), which measures memory and
throughput on a GPU without downloading 16 GB of weights.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    Qwen3Config,
    Qwen3ForCausalLM,
)

RANDOM_PREFIX = "random:"
# Qwen3's control tokens. <think> and </think> are ordinary added tokens (kept when decoding with
# skip_special_tokens), the others are special, as in the released tokenizer.
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
THINK_TOKENS = ["<think>", "</think>"]

ARCHITECTURES: dict[str, dict[str, Any]] = {
    "tiny": dict(hidden_size=64, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16, max_position_embeddings=16384, tie_word_embeddings=True),
    "small": dict(hidden_size=512, intermediate_size=1536, num_hidden_layers=8, num_attention_heads=8,
                  num_key_value_heads=2, head_dim=64, max_position_embeddings=16384, tie_word_embeddings=True),
    "qwen3-8b": dict(hidden_size=4096, intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, tie_word_embeddings=False,
                     vocab_size=151936),
}  # fmt: skip

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "auto": "auto"}


def is_random(model: str) -> bool:
    return model.startswith(RANDOM_PREFIX)


def architecture(model: str) -> dict[str, Any]:
    name = model.removeprefix(RANDOM_PREFIX)
    if name not in ARCHITECTURES:
        raise ValueError(f"unknown random architecture {name!r}; known: {', '.join(ARCHITECTURES)}")
    return ARCHITECTURES[name]


def train_tokenizer(
    texts: Iterable[str], vocab_size: int, chat_template: str | None = None
) -> PreTrainedTokenizerBase:
    """A byte-level BPE tokenizer trained on `texts`, with Qwen3's control tokens and chat template (Qwen3's
    stock one as TRL ships it, unless `chat_template` is given: where TRL is not installed)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte encodes: no unknown tokens
    )  # fmt: skip
    backend.train_from_iterator(texts, trainer)
    backend.add_tokens([AddedToken(token, special=False, normalized=False) for token in THINK_TOKENS])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    if chat_template is None:
        from trl.chat_template_utils import qwen3_chat_template

        chat_template = qwen3_chat_template  # the stock one, as a downloaded Qwen3 would carry
    tokenizer.chat_template = chat_template
    return tokenizer


def random_model(model: str, tokenizer: PreTrainedTokenizerBase, dtype: str, seed: int) -> PreTrainedModel:
    """A Qwen3 with random weights; the vocabulary covers the tokenizer (Qwen3-8B's is larger still).

    A single process with a GPU builds it on the GPU in `dtype` (an 8B model in float32 on the CPU would
    take 33 GB and minutes); a distributed run builds it on the CPU in every process, from the same seed.
    """
    shape = dict(architecture(model))
    shape["vocab_size"] = max(shape.get("vocab_size", 0), len(tokenizer))
    config = Qwen3Config(
        **shape, rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0}, rms_norm_eps=1e-6,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"), eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    torch.manual_seed(seed)
    device = "cuda" if torch.cuda.is_available() and world_size() == 1 else "cpu"
    torch_dtype = torch.float32 if dtype == "auto" else DTYPES[dtype]
    with torch.device(device):
        return Qwen3ForCausalLM._from_config(config, dtype=torch_dtype)


def load_tokenizer(path: str) -> PreTrainedTokenizerBase:
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_pretrained(path: str, dtype: str, attn_implementation: str | None) -> PreTrainedModel:
    """A causal LM from a folder or the Hub; a LoRA adapter folder loads with its base model."""
    kwargs: dict[str, Any] = {"dtype": DTYPES[dtype]}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    if (Path(path) / "adapter_config.json").is_file():
        from peft import AutoPeftModelForCausalLM

        return AutoPeftModelForCausalLM.from_pretrained(path, **kwargs)
    return AutoModelForCausalLM.from_pretrained(path, **kwargs)


def parameter_count(model: torch.nn.Module, trainable_only: bool = False) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))
