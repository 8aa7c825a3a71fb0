"""The package as a user installs it: one top-level name, data inside it, and a main job that runs from
another folder with no checkout in sight (issue #20: "a package that installs as one name").

The wheel is built from a copy of the tracked files (a build writes `build/` and `*.egg-info` beside the
sources) and installed with `pip install --target`; the checks run with `python -S` and an explicit path
(the installed folder, then this environment's site-packages for torch and the rest), so no `.pth` of the
development install (its editable finder) can make a checkout's module importable by accident.
"""

from __future__ import annotations

import ast
import email.parser
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import urllib.request
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("package")
    source = work / "source"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    wheels = work / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(source)], check=True
    )
    [built] = wheels.glob("kernelvault-*.whl")
    top = {name.split("/", 1)[0] for name in zipfile.ZipFile(built).namelist()}
    assert top == {"kernelvault", f"{built.name.split('-')[0]}-{built.name.split('-')[1]}.dist-info"}, top
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path) -> Path:
    site = wheel.parent.parent / "site"
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "install", "--no-deps",
                    "--no-compile", "--target", str(site), str(wheel)], check=True)  # fmt: skip
    return site


def _run(site: Path, cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(site), sysconfig.get_paths()["purelib"]])
    return subprocess.run([sys.executable, "-S", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def test_the_installed_package_has_one_name_and_its_data(installed: Path, tmp_path: Path) -> None:
    probe = """
import importlib, importlib.resources, json
found = {}
for name in ("toolchain", "agents", "corpus", "pipelines", "sft", "rl"):
    try:
        importlib.import_module(name)
        found[name] = "importable"
    except ImportError:
        found[name] = "missing"
import kernelvault.toolchain.verify, kernelvault.pipelines.candidates, kernelvault.toolchain.tasks as tasks
found["toolchain_file"] = kernelvault.toolchain.verify.__file__
found["bundled_tasks"] = len(tasks.load_tasks(None).tasks)
found["examples"] = str(kernelvault.pipelines.candidates.BUNDLED_EXAMPLES)
import kernelvault.pipelines.qa_job as qa_job
found["qa_entries"] = len(qa_job.load_bundled_qa().entries)
import kernelvault.agents.prompting as prompting, kernelvault.pipelines.eval_report as eval_report
found["platform_notes"] = len(prompting.platform_notes())
found["report_template"] = eval_report.TEMPLATES.get_template("report.html.jinja").filename
print(json.dumps(found))
"""
    result = _run(installed, tmp_path, "-c", probe)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert {name: found[name] for name in ("toolchain", "agents", "corpus", "pipelines", "sft", "rl")} == {
        name: "missing" for name in ("toolchain", "agents", "corpus", "pipelines", "sft", "rl")
    }
    assert found["toolchain_file"].startswith(str(installed))
    assert found["bundled_tasks"] > 50 and found["examples"].startswith(str(installed))
    assert found["qa_entries"] >= 40  # the bundled ROCm QA examples (examples/qa/*.yaml) are package data too
    # the platform paragraphs of the agents' prompts and the report's page template travel with their packages
    assert found["platform_notes"] == 6 and found["report_template"].startswith(str(installed))


def test_the_main_job_runs_from_another_folder_on_the_installed_package(
    installed: Path, tmp_path: Path
) -> None:
    task = installed / "kernelvault" / "tasks" / "vector_add.py"
    out = tmp_path / "out"
    result = _run(installed, tmp_path, "-c", "from kernelvault.cli import main; main()", "corpus",
                  "--target", "triton", "--tasks", str(task), "--out", str(out), "--platform", "cpu",
                  "--no-progress")  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    rows = [row for shard in sorted(out.rglob("*.parquet")) for row in pq.read_table(shard).to_pylist()]
    assert rows and {row["task_name"] for row in rows} == {"vector_add"}
    assert any(row["correct"] for row in rows)  # the bundled example, found in the installed package data


def test_no_library_module_imports_the_command_line() -> None:
    """The commands call the library, never the other way round (the cycle cli <-> evaluation, eval_report,
    rl.cli, sft.cli is gone): nothing outside kernelvault/cli/ imports kernelvault.cli."""
    library = [
        ROOT / "kernelvault" / name
        for name in ("contracts.py", "hip.py", "http_json.py", "simulated_openai.py")
    ]
    for package in ("toolchain", "agents", "corpus", "pipelines", "sft", "rl"):
        library += sorted((ROOT / package).rglob("*.py"))
    offenders = []
    for path in library:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            if any(name == "kernelvault.cli" or name.startswith("kernelvault.cli.") for name in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert len(library) > 60 and offenders == []


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        [name] = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(archive.read(name).decode())


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        name, separator, version = line.partition("==")
        if separator and not line.startswith("#"):
            pins[canonicalize_name(name)] = version.strip()
    return pins


def test_the_installed_command_runs_as_a_module_and_names_its_version(installed: Path, wheel: Path,
                                                                      tmp_path: Path) -> None:  # fmt: skip
    version = wheel.name.split("-")[1]
    for flag in ("-V", "--version"):
        result = _run(installed, tmp_path, "-m", "kernelvault", flag)
        assert (result.returncode, result.stdout.strip()) == (0, f"kernelvault {version}"), result.stderr
    result = _run(installed, tmp_path, "-m", "kernelvault", "corpus", "--target", "nope")
    assert (
        result.returncode == 2
        and result.stderr.count("\n") == 1
        and "invalid choice: 'nope'" in result.stderr
    )


def test_the_metadata_names_authors_tested_bounds_and_only_extras_that_exist(wheel: Path) -> None:
    metadata = _metadata(wheel)
    assert metadata["Author"] or metadata["Author-email"]
    extras = set(metadata.get_all("Provides-Extra"))
    named = set()
    for package in ("kernelvault", "toolchain", "agents", "corpus", "pipelines", "sft", "rl"):
        for path in (ROOT / package).rglob("*.py"):
            named |= set(re.findall(r"kernelvault\[(\w+)\]", path.read_text(encoding="utf-8")))
    assert named and named <= extras, f"messages name extras that do not exist: {sorted(named - extras)}"
    # The bounds admit what CI tests (constraints/cpu.txt) and what the GPU runs used (bench/results/).
    requires = {
        canonicalize_name(Requirement(line).name): Requirement(line)
        for line in metadata.get_all("Requires-Dist")
    }
    tested = _pins(ROOT / "constraints" / "cpu.txt")
    for name, gpu in (("torch", "2.11.0"), ("triton", "3.6.0")):
        assert requires[name].specifier.contains(tested[name], prereleases=False), (name, tested[name])
        assert requires[name].specifier.contains(gpu), (name, gpu)
        assert not requires[name].specifier.contains("99.0"), f"{name} has no upper bound"


def _pypi_unreachable() -> str | None:
    try:
        urllib.request.urlopen("https://pypi.org/simple/triton/", timeout=10).close()
    except OSError as error:
        return f"PyPI cannot be reached ({error}): resolving the wheel's dependencies needs it"
    return None


@pytest.mark.network
@pytest.mark.slow  # two resolutions side by side, about 35 s on two cores; metadata only, nothing installed
def test_installing_the_wheel_resolves_the_tested_torch_and_triton(wheel: Path, tmp_path: Path) -> None:
    """`pip install --dry-run --report` of the wheel into a fresh environment: with CI's constraints it
    resolves exactly the torch and triton CI tests (the bounds admit them), and a plain install, which takes the
    newest release the bounds allow, stays on the torch release CI tests (an open bound took 2.14)."""
    unreachable = _pypi_unreachable()
    if unreachable:
        pytest.skip(unreachable)
    fresh = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(fresh)], check=True)
    constraints = ROOT / "constraints" / "cpu.txt"
    runs = {}
    for name, extra in (("constrained", ["-c", str(constraints)]), ("plain", [])):
        command = [sys.executable, "-m", "pip", "--python", str(fresh / "bin" / "python"), "install", "--dry-run",
                   "--ignore-installed", "--quiet", "--report", str(tmp_path / f"{name}.json"), *extra, str(wheel)]  # fmt: skip
        runs[name] = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    resolved = {}
    for name, run in runs.items():
        _, stderr = run.communicate(timeout=300)
        assert run.returncode == 0, f"{name}: {stderr[-3000:]}"
        report = json.loads((tmp_path / f"{name}.json").read_text())
        resolved[name] = {canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
                          for item in report["install"]}  # fmt: skip
    tested = _pins(constraints)
    assert {name: resolved["constrained"][name] for name in ("torch", "triton")} == {
        name: tested[name] for name in ("torch", "triton")
    }
    plain = {name: Version(resolved["plain"][name]) for name in ("torch", "triton")}
    assert plain["torch"].release[:2] == Version(tested["torch"]).release[:2], plain
    # triton: the newest the bounds allow beside a CPU torch; the CUDA build of torch 2.13 pins 3.7.1 itself.
    triton = next(
        Requirement(line) for line in _metadata(wheel).get_all("Requires-Dist") if line.startswith("triton")
    )
    assert triton.specifier.contains(plain["triton"]), plain
