"""The bounds a received GPU block's views must keep (#24 item 1): checked before any memory is touched, so a
forged tensor descriptor is refused on any machine. The export and import themselves need a GPU
(bench/device_share_probe.py)."""

from __future__ import annotations

import pytest
import torch

from kernelvault.toolchain.sandboxed.device_share import DeviceShareError, SharedBlock, tensor_view

BLOCK = SharedBlock(pointer=1 << 40, size=2 << 20, fd=-1, device=torch.device("cuda", 0), _handle=0)


@pytest.mark.parametrize(
    ("offset", "dtype", "shape", "why"),
    [
        ((2 << 20) - 4, torch.float32, (2,), "ends past the block"),
        (0, torch.float32, ((2 << 20) // 4 + 1,), "larger than the block"),
        (-4, torch.float32, (1,), "starts before the block"),
        (2, torch.float32, (1,), "misaligned for its dtype"),
        (0, torch.float32, (-1, 4), "a negative dimension"),
        (0, torch.float32, (1 << 31, 1 << 31), "a huge shape whose byte count overflows nothing in Python"),
        (0.5, torch.float32, (1,), "a fractional offset"),
    ],
)
def test_a_view_outside_the_mapped_block_is_refused(offset: object, dtype: torch.dtype, shape: tuple[int, ...],
                                                    why: str) -> None:  # fmt: skip
    with pytest.raises(DeviceShareError):
        tensor_view(BLOCK, offset, dtype, shape)  # type: ignore[arg-type]
