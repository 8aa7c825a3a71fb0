"""Where verification runs: the platform, the device, the compile target and the toolchain versions.

`cpu` means no GPU: Triton kernels run under the interpreter for correctness and are cross-compiled
for an AMD CDNA target to prove they compile; nothing is timed. `cuda` and `rocm` mean a PyTorch
build for that GPU stack with a visible device: kernels are JIT-compiled, checked and timed there.
"""

from __future__ import annotations

import importlib.metadata
import platform as python_platform
from dataclasses import dataclass

from kernelvault.contracts import PLATFORMS, RunEnvironment

# The default CPU cross-compile target: MI300X (CDNA3). Override with --arch (gfx90a, gfx950, ...).
DEFAULT_CPU_ARCH = "gfx942"
AMD_WAVEFRONT = 64


@dataclass(frozen=True)
class PlatformChoice:
    platform: str
    arch: str
    device: str


def package_versions(*names: str) -> dict[str, str]:
    versions = {"python": python_platform.python_version()}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def detect_platform(forced_platform: str | None = None, forced_arch: str | None = None) -> PlatformChoice:
    """Detect (or honour a forced) platform. Raises ValueError for a platform this machine cannot serve."""
    if forced_platform is not None and forced_platform not in PLATFORMS:
        raise ValueError(f"unknown platform {forced_platform!r}; choose one of {', '.join(PLATFORMS)}")
    if forced_platform == "cpu":
        return PlatformChoice("cpu", forced_arch or DEFAULT_CPU_ARCH, "cpu (Triton interpreter)")

    import torch

    gpu_stack = "rocm" if getattr(torch.version, "hip", None) else ("cuda" if torch.version.cuda else None)
    has_gpu = gpu_stack is not None and torch.cuda.is_available()
    if forced_platform is not None and (not has_gpu or forced_platform != gpu_stack):
        found = (
            f"torch built for {gpu_stack}, GPU visible: {has_gpu}" if gpu_stack else "a CPU-only torch build"
        )
        raise ValueError(
            f"--platform {forced_platform} needs a {forced_platform} GPU, but this machine has {found}"
        )
    if not has_gpu:
        return PlatformChoice("cpu", forced_arch or DEFAULT_CPU_ARCH, "cpu (Triton interpreter)")

    properties = torch.cuda.get_device_properties(0)
    if gpu_stack == "rocm":
        arch = forced_arch or properties.gcnArchName.split(":")[0]
    else:
        arch = forced_arch or f"sm_{properties.major}{properties.minor}"
    return PlatformChoice(gpu_stack, arch, properties.name)


def run_environment(choice: PlatformChoice) -> RunEnvironment:
    return RunEnvironment(
        platform=choice.platform,  # type: ignore[arg-type]
        device=choice.device,
        arch=choice.arch,
        versions=package_versions("torch", "triton", "numpy"),
    )
