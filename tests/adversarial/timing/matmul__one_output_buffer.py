# honest: keeps one output buffer per shape on the device and writes every product into it (no allocation per call), computing every call; the twin of integrity_reject__matmul__device_content_cache. Its calls share their output's memory, so it is timed one call per sample, where every call's output is checked.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_OUTPUTS: dict[tuple, torch.Tensor] = {}


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    offs_m = (pid // num_pid_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = (pid % num_pid_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        mask_k = (k + offs_k) < K
        a = tl.load(
            a_ptr + offs_m[:, None] * stride_am + (k + offs_k)[None, :] * stride_ak,
            mask=(offs_m[:, None] < M) & mask_k[None, :],
            other=0.0,
        )
        b = tl.load(
            b_ptr + (k + offs_k)[:, None] * stride_bk + offs_n[None, :] * stride_bn,
            mask=mask_k[:, None] & (offs_n[None, :] < N),
            other=0.0,
        )
        acc = tl.dot(a, b, acc, input_precision="ieee")
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = a.contiguous()
        b = b.contiguous()
        M, K = a.shape
        N = b.shape[1]
        key = (M, N, a.dtype, a.device)
        if key not in _OUTPUTS:
            _OUTPUTS[key] = torch.empty((M, N), device=a.device, dtype=a.dtype)
        c = _OUTPUTS[key]
        if M == 0 or N == 0:
            return c
        if K == 0:
            return c.zero_()
        block = (64, 64, 32) if a.is_cuda else (32, 32, 32)
        grid = (triton.cdiv(M, block[0]) * triton.cdiv(N, block[1]),)
        matmul_kernel[grid](
            a,
            b,
            c,
            M,
            N,
            K,
            a.stride(0),
            a.stride(1),
            b.stride(0),
            b.stride(1),
            BLOCK_M=block[0],
            BLOCK_N=block[1],
            BLOCK_K=block[2],
        )
        return c
