"""The chat template the trainer renders samples with, and a view of which tokens carry loss.

Qwen3's stock template has no `{% generation %}` markers, so `return_assistant_tokens_mask` (what TRL's
assistant_only_loss reads) finds no assistant tokens, and it renders reasoning only for the turns after
the last user message, so a multi-turn trajectory's earlier reasoning would vanish. `kernelvault_qwen3.jinja`
fixes both and leaves the few-shot turns of the agents' prompt out of the loss (see its header).

`chat_template: model` (the default) keeps the tokenizer's own template; when it lacks the markers, TRL's
SFTTrainer swaps in its training variant for known families (Qwen3 included), which marks every assistant
turn and renders each one's `reasoning_content`. The release's `sft` rows carry the reasoning there.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from transformers import PreTrainedTokenizerBase

KERNELVAULT_TEMPLATE = Path(__file__).resolve().with_name("kernelvault_qwen3.jinja")


def training_template(choice: str) -> str | None:
    """The template text for a `chat_template` setting; None keeps the tokenizer's own."""
    if choice == "model":
        return None
    path = KERNELVAULT_TEMPLATE if choice == "kernelvault" else Path(choice)
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise ValueError(f"cannot read the chat template {path}: {error}") from None


def apply_training_template(tokenizer: PreTrainedTokenizerBase, choice: str) -> None:
    """Install the training template on the tokenizer; it is saved with checkpoints and the final model.

    With `model` the tokenizer's own stays, and is checked now: assistant-only loss needs generation
    markers, which TRL adds only to the templates it knows (ValueError, one line, otherwise)."""
    template = training_template(choice)
    if template is not None:
        tokenizer.chat_template = template
        return
    if not tokenizer.chat_template:
        raise ValueError(
            "the tokenizer has no chat template: set chat_template to kernelvault or a .jinja file"
        )
    from trl.chat_template_utils import get_training_chat_template

    try:
        get_training_chat_template(tokenizer)
    except ValueError:
        raise ValueError(
            "the tokenizer's chat template has no {% generation %} markers and TRL has no training variant of "
            "it: set chat_template to kernelvault (Qwen3's format) or a .jinja file with the markers"
        ) from None


def loss_spans(
    tokenizer: PreTrainedTokenizerBase, input_ids: list[int], labels: list[int]
) -> list[tuple[str, bool]]:
    """The decoded sample as (text, carries loss) stretches, in order."""
    return [
        (tokenizer.decode([token for token, _ in group]), trained)
        for trained, group in itertools.groupby(
            zip(input_ids, labels, strict=True), key=lambda pair: pair[1] != -100
        )
    ]


def loss_view(tokenizer: PreTrainedTokenizerBase, input_ids: list[int], labels: list[int]) -> str:
    """The decoded sample with every stretch of loss-carrying tokens between ⟦ and ⟧."""
    return "".join(
        f"⟦{text}⟧" if trained else text for text, trained in loss_spans(tokenizer, input_ids, labels)
    )
