"""A tiny Qwen3 policy built on the spot: random weights, a BPE tokenizer trained here, a Qwen chat template.

Nothing can be downloaded in CI or on the GPU lease, so smoke runs of the RL stage (`kernelvault rl tiny-model`,
the CPU tests, the H200 step-time run) train a model made here. It speaks the same chat format as Qwen3
(`<|im_start|>role\\n…<|im_end|>\\n`, `<|im_end|>` ends a turn) so every token-level path (chat template,
feedback masking, EOS handling) is exercised exactly as with the real model. Its answers are noise: they
fail to parse, which is what the tests expect. The tokenizer is byte-level, so any text round-trips.
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass
from pathlib import Path

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# Qwen's format without the tool and thinking branches: enough for the agents' system/user/assistant turns.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


@dataclass(frozen=True)
class TinyShape:
    hidden_size: int = 64
    intermediate_size: int = 128
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 16
    vocab_size: int = 4096


SHAPES = {
    "tiny": TinyShape(),  # ~0.3 M parameters: CPU tests
    "small": TinyShape(
        hidden_size=512, intermediate_size=1536, layers=8, heads=8, kv_heads=4, head_dim=64, vocab_size=8192
    ),  # ~30 M parameters: GPU step-time runs  # fmt: skip
}


def _training_text() -> list[str]:
    """The project's own prompts, tasks and kernels: the text the policy will read and write."""
    folders = [Path(str(importlib.resources.files("kernelvault.agents"))) / "prompt_files",
               Path(str(importlib.resources.files("kernelvault.tasks"))),
               Path(str(importlib.resources.files("kernelvault.examples")))]  # fmt: skip
    texts = [path.read_text(encoding="utf-8") for folder in folders for path in sorted(folder.rglob("*"))
             if path.is_file() and path.suffix in (".py", ".md") and not path.name.startswith("_")]  # fmt: skip
    return texts or ["import torch\nimport triton\n"]


def build_tiny_policy(out_dir: Path, shape: str = "tiny", seed: int = 0) -> Path:
    """Write a randomly initialised Qwen3 and its tokenizer to `out_dir`; load both with from_pretrained."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    dims = SHAPES[shape]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=dims.vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)  # fmt: skip
    bpe.train_from_iterator(_training_text(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=CHAT_TEMPLATE
    )
    tokenizer.padding_side = "left"  # GRPOTrainer generates from left-padded prompts
    tokenizer.save_pretrained(out_dir)

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=dims.hidden_size, intermediate_size=dims.intermediate_size,
        num_hidden_layers=dims.layers, num_attention_heads=dims.heads, num_key_value_heads=dims.kv_heads,
        head_dim=dims.head_dim, max_position_embeddings=32768, tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None,
    )  # fmt: skip
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out_dir)
    return out_dir
