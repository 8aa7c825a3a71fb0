"""The write guard judges a write by who asked for it: Triton's own temporary files pass, a candidate's do not.

Triton's NVIDIA backend hands ptxas a .ptx written through `tempfile.NamedTemporaryFile`; before tempfile
counted as plumbing, the guard saw tempfile as the caller and refused every JIT compile on the H200
(every candidate, honest ones too, came back `integrity_reject: filesystem_write`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import triton

from kernelvault.toolchain.sandboxed.integrity import ProcessGuards, Violations


def _code_living_in(folder: Path, source: str) -> dict:
    """Run `source` as if it were a module of that folder (the guard judges callers by file location)."""
    scope: dict = {}
    exec(compile(source, str(folder / "kernelvault_guard_probe.py"), "exec"), scope)  # noqa: S102
    return scope


WRITE_A_PTX = """
import tempfile
def write_ptx(where):
    with tempfile.NamedTemporaryFile(dir=where, delete=False, mode="w", suffix=".ptx") as handle:
        handle.write("// ptx")
    return handle.name
"""


@pytest.fixture
def guarded(tmp_path: Path):  # noqa: ANN201
    workdir, elsewhere = tmp_path / "candidate", tmp_path / "elsewhere"
    workdir.mkdir()
    elsewhere.mkdir()
    violations = Violations()
    guards = ProcessGuards(violations, [workdir])
    guards.install()
    try:
        yield violations, workdir, elsewhere
    finally:
        guards.uninstall()


def test_a_temporary_file_triton_writes_for_ptxas_is_allowed(guarded) -> None:  # noqa: ANN001
    violations, _, elsewhere = guarded
    triton_code = _code_living_in(Path(triton.__file__).parent / "backends" / "nvidia", WRITE_A_PTX)
    written = Path(triton_code["write_ptx"](elsewhere))
    assert written.read_text() == "// ptx" and violations.first is None


def test_a_candidate_temporary_file_outside_its_folder_is_refused_inside_allowed(guarded, tmp_path) -> None:  # noqa: ANN001
    violations, workdir, elsewhere = guarded
    candidate_code = _code_living_in(tmp_path, WRITE_A_PTX)
    assert Path(candidate_code["write_ptx"](workdir)).parent == workdir and violations.first is None
    with pytest.raises(PermissionError, match="KernelVault sandbox"):
        candidate_code["write_ptx"](elsewhere)
    assert violations.first is not None and violations.first.startswith("filesystem_write")
    assert not list(elsewhere.iterdir())


def test_pathlib_is_plumbing_too(guarded, tmp_path) -> None:  # noqa: ANN001
    violations, _, elsewhere = guarded
    source = "from pathlib import Path\ndef put(where):\n    Path(where, 'x.bin').write_bytes(b'1')\n"
    _code_living_in(Path(triton.__file__).parent / "runtime", source)["put"](elsewhere)
    assert violations.first is None
    with pytest.raises(PermissionError):
        _code_living_in(tmp_path, source)["put"](elsewhere)
    assert not (elsewhere / "x.bin").exists() or (elsewhere / "x.bin").read_bytes() == b"1"


def test_a_refused_process_names_the_line_that_started_it(guarded, tmp_path) -> None:  # noqa: ANN001
    violations, _, _ = guarded
    candidate_code = _code_living_in(
        tmp_path, "import subprocess\ndef start():\n    subprocess.run(['true'])\n"
    )
    with pytest.raises(PermissionError, match="KernelVault sandbox"):
        candidate_code["start"]()
    assert violations.found == ["subprocess: subprocess.Popen (called from kernelvault_guard_probe.py:3)"]


def test_the_harness_modules_a_candidate_worker_may_import_late_start_no_process(tmp_path: Path) -> None:
    """The H100 run of the load_inline examples: the jail module looked libc up with `ctypes.util.find_library`
    (which starts ldconfig) when the candidate's worker first imported it, with the guards on; the build was refused
    as the candidate's `subprocess.Popen`. Imported in a fresh interpreter here, with process starts guarded."""
    import subprocess
    import sys

    probe = (
        "from pathlib import Path\n"
        "from kernelvault.toolchain.sandboxed.integrity import ProcessGuards, Violations\n"
        "violations = Violations()\n"
        f"ProcessGuards(violations, [Path({str(tmp_path)!r})]).install()\n"
        "import kernelvault.toolchain.jail, kernelvault.toolchain.hip_build, kernelvault.toolchain.static_wall\n"
        "print(violations.found)\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "[]"
