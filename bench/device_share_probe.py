"""Can the parent judge a jailed worker's outputs on the device? A probe for #24 item 1, on a GPU.

    python bench/device_share_probe.py [--megabytes 256]      # bench/gpu_session.sh: KV_BENCH=device_share

Legacy CUDA IPC handles do not cross PID namespaces; `kernelvault.toolchain.sandboxed.device_share` exports a
`cuMemCreate` allocation as a file descriptor instead. This probe tries, and prints one line per step:
1. the round trip inside this process (export, import, read through torch);
2. the same from a worker in the jail (its own user, PID, IPC, mount and network namespaces, seccomp): the
   worker fills a block with a pattern and sends the descriptor over a Unix socket (SCM_RIGHTS); this process
   maps it read-only and checks the pattern on the device; what kind of file the descriptor is; then a value
   sent the way the judge would take it (`bundles`: a nest of tensors, a transposed one among them);
3. the block after the worker has exited and its process group been killed (the mapping should hold);
4. forgeries: descriptors that are not CUDA allocations (a file, a pipe, a memfd, /dev/null), a size larger
   than the allocation, views outside the mapping: each must be a clean refusal;
5. the time to judge the block on the device against today's path (the worker copies to its CPU and writes a
   safetensors file; the parent reads it and compares on its CPU), for the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from kernelvault.toolchain.sandboxed.device_share import (  # noqa: E402
    CU_MEM_ACCESS_FLAGS_PROT_READ,
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    DeviceShareError,
    export_block,
    granularity,
    import_block,
    tensor_view,
)


def pattern(count: int, device: torch.device) -> torch.Tensor:
    return torch.arange(count, dtype=torch.float32, device=device).mul_(0.5).sin_()


def bundle_value(device: torch.device) -> tuple[object, ...]:
    square = pattern(1 << 20, device).view(1024, 1024)
    return (square, square.t(), torch.arange(7, device=device), 2.5, {"mode": "fast"})


def export_in_worker(sock_fd: int, bundle_fd: int, megabytes: int) -> int:
    """The worker's side: fill a block with the pattern, send its descriptor, send a bundle (the judge's
    transport, `bundles.BundleSender`), wait for 'done'."""
    from kernelvault.toolchain.sandboxed.bundles import BundleSender

    device = torch.device("cuda", 0)
    started = time.perf_counter()
    block = export_block(megabytes << 20, device)
    count = (megabytes << 20) // 4
    tensor_view(block, 0, torch.float32, (count,)).copy_(pattern(count, device))
    torch.cuda.synchronize()
    message = json.dumps({"size": block.size, "count": count, "export_s": time.perf_counter() - started,
                          "pid_seen_inside": os.getpid()}).encode()  # fmt: skip
    sender = BundleSender(bundle_fd)
    with socket.socket(fileno=sock_fd) as channel:
        socket.send_fds(channel, [message], [block.fd])
        sender.send("out/check0.st", bundle_value(device), device)
        channel.sendall(b"bundle sent")
        channel.recv(16)  # 'done': the parent has mapped them (or given up)
    sender.release()
    block.close()
    return 0


def step(name: str, action) -> object:  # noqa: ANN001 - a probe's steps are lambdas
    started = time.perf_counter()
    try:
        value = action()
    except Exception as error:  # noqa: BLE001 - a probe reports every failure and goes on
        print(f"FAIL  {name}: {type(error).__name__}: {error}", flush=True)
        return None
    print(
        f"ok    {name} ({time.perf_counter() - started:.3f} s){'' if value is None else f': {value}'}",
        flush=True,
    )
    return value


def refused(name: str, action) -> None:  # noqa: ANN001
    try:
        action()
    except DeviceShareError as error:
        print(f"ok    {name}: refused ({error})", flush=True)
        return
    except Exception as error:  # noqa: BLE001
        print(f"FAIL  {name}: {type(error).__name__} instead of a refusal: {error}", flush=True)
        return
    print(f"FAIL  {name}: accepted", flush=True)


def describe_fd(fd: int) -> str:
    info = os.fstat(fd)
    kind = next((label for test, label in ((stat.S_ISCHR, "character device"), (stat.S_ISREG, "regular file"),
                                           (stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket")) if test(info.st_mode)),
                "other")  # fmt: skip
    target = os.readlink(f"/proc/self/fd/{fd}")
    return f"{kind}, mode {oct(info.st_mode)}, rdev {os.major(info.st_rdev)}:{os.minor(info.st_rdev)}, -> {target}"


def in_process(megabytes: int) -> None:
    device = torch.device("cuda", 0)
    block = export_block(megabytes << 20, device)
    count = (megabytes << 20) // 4
    tensor_view(block, 0, torch.float32, (count,)).copy_(pattern(count, device))
    duplicate = os.dup(block.fd)
    mapped = import_block(duplicate, block.size, device)
    same = torch.equal(tensor_view(mapped, 0, torch.float32, (count,)), pattern(count, device))
    mapped.close()
    block.close()
    if not same:
        raise RuntimeError("the imported block does not hold the pattern")


def from_jail(megabytes: int) -> None:
    from kernelvault.toolchain.jail import gpu_device_nodes, probe_isolation
    from kernelvault.toolchain.sandbox import SandboxLimits, folder_jail, kill_group, start_sandboxed

    isolation = probe_isolation()
    print(f"info  isolation: {isolation.level}: {isolation.detail}", flush=True)
    folder = Path(tempfile.mkdtemp(prefix="kv-share-"))  # where the lanes' homes are (the jail's uid owns it)
    jail = folder_jail(isolation, folder, read_only=(str(ROOT),), devices=gpu_device_nodes())
    from kernelvault.toolchain.sandboxed.bundles import BundleInbox, bundle_socketpair

    parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)  # one message per recv
    inbox_end, bundle_end = bundle_socketpair()
    limits = SandboxLimits(timeout_s=120, memory_bytes=None)
    process = start_sandboxed([sys.executable, str(Path(__file__).resolve()), "--export", str(child_end.fileno()),
                               "--bundle-fd", str(bundle_end.fileno()), "--megabytes", str(megabytes)], folder, limits,
                              pass_fds=(child_end.fileno(), bundle_end.fileno()),
                              jail=jail)  # fmt: skip
    child_end.close()
    bundle_end.close()
    parent_end.settimeout(120)
    device = torch.device("cuda", 0)
    try:
        message, fds, _, _ = socket.recv_fds(parent_end, 4096, 4)
        if not fds:
            tail = (folder / "stderr.log").read_text()[-2000:] if (folder / "stderr.log").exists() else ""
            raise RuntimeError(f"the worker sent no descriptor: {message!r} {tail}")
        sent = json.loads(message)
        print(f"info  worker: {sent}", flush=True)
        print(f"info  received descriptor: {describe_fd(fds[0])}", flush=True)
        spare = os.dup(fds[0])
        count = sent["count"]
        started = time.perf_counter()
        try:
            block = import_block(fds[0], sent["size"], device, CU_MEM_ACCESS_FLAGS_PROT_READ)
            access = "read-only"
        except DeviceShareError as error:
            print(f"info  read-only mapping refused ({error}); read-write instead", flush=True)
            block = import_block(os.dup(spare), sent["size"], device, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            access = "read-write"
        judged = torch.equal(tensor_view(block, 0, torch.float32, (count,)), pattern(count, device))
        torch.cuda.synchronize()
        print(f"ok    mapped {access} from the jail and judged on the device: equal={judged} "
              f"({time.perf_counter() - started:.4f} s for {sent['size'] >> 20} MiB)", flush=True)  # fmt: skip
        refused(
            "a size larger than the allocation", lambda: import_block(os.dup(spare), sent["size"] * 2, device)
        )
        refused("a view past the end", lambda: tensor_view(block, block.size - 4, torch.float32, (2,)))
        refused("a view at a negative offset", lambda: tensor_view(block, -4, torch.float32, (1,)))
        refused("a misaligned view", lambda: tensor_view(block, 2, torch.float32, (1,)))
        step("the worker's bundle said it was sent", lambda: parent_end.recv(16))
        inbox = BundleInbox(inbox_end, "cuda", device)
        opened = step("a bundle from the jail, opened on the device", lambda: inbox.open("out/check0.st"))
        if opened is not None:
            expected = bundle_value(device)
            same = all(torch.equal(got, want) if isinstance(got, torch.Tensor) else got == want
                       for got, want in zip(opened, expected, strict=True))  # fmt: skip
            print(f"{'ok   ' if same else 'FAIL '} the bundle's values, strides kept: {same}, "
                  f"{opened[1].stride() == expected[1].stride()}", flush=True)  # fmt: skip
        inbox.release()
        parent_end.sendall(b"done")
        process.wait(timeout=60)
        kill_group(process)
        step("the mapping after the worker exited", lambda: torch.equal(
            tensor_view(block, 0, torch.float32, (count,)), pattern(count, device)))  # fmt: skip
        block.close()
        os.close(spare)
    finally:
        kill_group(process)
        parent_end.close()
        inbox_end.close()
        print(f"info  worker stderr tail: {(folder / 'stderr.log').read_text()[-600:]!r}", flush=True)
        shutil.rmtree(folder, ignore_errors=True)


def forgeries(workroot: Path) -> None:
    device = torch.device("cuda", 0)
    unit = granularity(device)
    plain = workroot / "plain.bin"
    plain.write_bytes(b"\0" * unit)
    read_end, write_end = os.pipe()
    refused("a regular file's descriptor", lambda: import_block(os.open(plain, os.O_RDONLY), unit, device))
    refused("a pipe's descriptor", lambda: import_block(read_end, unit, device))
    refused("a memfd's descriptor", lambda: import_block(os.memfd_create("kv-forged"), unit, device))
    refused("/dev/null's descriptor", lambda: import_block(os.open("/dev/null", os.O_RDONLY), unit, device))
    os.close(write_end)


def timings(megabytes: int, workroot: Path) -> None:
    """Judging the same bytes on the device (mapped) and through a safetensors file on the CPU."""
    from safetensors.torch import load_file, save_file

    device = torch.device("cuda", 0)
    count = (megabytes << 20) // 4
    expected = pattern(count, device)
    block = export_block(megabytes << 20, device)
    tensor_view(block, 0, torch.float32, (count,)).copy_(expected)
    torch.cuda.synchronize()
    started = time.perf_counter()
    mapped = import_block(os.dup(block.fd), block.size, device)
    equal = torch.equal(tensor_view(mapped, 0, torch.float32, (count,)), expected)
    device_s = time.perf_counter() - started
    mapped.close()
    started = time.perf_counter()
    path = workroot / "out.st"
    save_file(
        {"output": tensor_view(block, 0, torch.float32, (count,)).cpu()}, str(path)
    )  # the worker's side
    written = time.perf_counter()
    equal_cpu = torch.equal(
        load_file(str(path))["output"], expected.cpu()
    )  # the parent's (expected on its CPU)
    files_s = time.perf_counter() - started
    block.close()
    print(f"ok    {megabytes} MiB: on the device {device_s * 1e3:.1f} ms (equal={equal}); through a file "
          f"{files_s * 1e3:.1f} ms, of which the worker's copy and write {(written - started) * 1e3:.1f} ms "
          f"(equal={equal_cpu}): {files_s / device_s:.1f}x", flush=True)  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=256)
    parser.add_argument("--export", type=int, default=None, help=argparse.SUPPRESS)  # the worker's role
    parser.add_argument("--bundle-fd", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.export is not None:
        return export_in_worker(args.export, args.bundle_fd, args.megabytes)
    if not torch.cuda.is_available():
        print("device_share_probe needs a GPU")
        return 1
    print(f"info  {torch.cuda.get_device_name()}, torch {torch.__version__}, driver "
          f"{subprocess.run(['nvidia-smi', '--query-gpu=driver_version', '--format=csv,noheader'], capture_output=True, text=True).stdout.strip()}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="kv-share-probe-") as scratch:
        workroot = Path(scratch)
        step("granularity", lambda: granularity(torch.device("cuda", 0)))
        step("export and import in one process", lambda: in_process(64))
        step("export in the jail, import here", lambda: from_jail(args.megabytes))
        for megabytes in (1, 16, args.megabytes):
            step(f"timing {megabytes} MiB", lambda megabytes=megabytes: timings(megabytes, workroot))
        forgeries(workroot)  # last: a forged descriptor that crashed this process would say so by ending here
    return 0


if __name__ == "__main__":
    sys.exit(main())
