#!/usr/bin/env bash
# Download, into .whl/, the wheels the H200 image lacks (it has torch, triton, transformers, peft, accelerate,
# pyarrow, huggingface_hub): bench/gpu_session.sh installs them into /tmp/site there. .whl/ is not
# committed (git-excluded); carry it with the device call (`carry: [".whl"]`). Pure-Python wheels and
# manylinux wheels for CPython 3.12 (the image's Python), each without dependencies: the list is the
# closure of what the image misses, found by running the GPU tests there.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
download() {
  "$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "$@"
}
# the corpus stack (datasets and its helpers), MinHash dedup, ninja for load_inline builds
download datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 datasketch==2.0.0 ninja
# the jail's seccomp filter: pyseccomp (pure Python) and, in case the image lacks it, Debian 12's libseccomp
# (gpu_session.sh unpacks it into /tmp/kvlib and names it in KV_LIBSECCOMP)
download pyseccomp==0.1.2
if [ ! -f .whl/libseccomp2.deb ] && command -v apt-get >/dev/null; then
  (cd "$(mktemp -d)" && apt-get download -q libseccomp2 >/dev/null && mv libseccomp2_*.deb "$OLDPWD/.whl/libseccomp2.deb")
fi
# training: TRL; Liger's Triton kernels (fused linear cross-entropy, RMSNorm, SwiGLU, RoPE) for the SFT MFU runs
download trl==1.16.0 liger-kernel==0.8.5
# agents (the RL rollouts and reward service import them): openai and LangGraph with their pure-Python deps
download openai jiter distro sniffio anyio httpx httpcore h11 pydantic pydantic-core annotated-types \
  typing-inspection tenacity httpx2 httpcore2 truststore idna langchain-protocol langgraph langgraph-checkpoint langgraph-prebuilt langgraph-sdk langchain-core \
  jsonpatch jsonpointer langsmith orjson ormsgpack xxhash uuid-utils requests-toolbelt zstandard websockets
# Ray, for the Ray executor's GPU bench: the cp312 wheel is 79 MB, over the device tool's 64 MiB carry
# limit, so it travels as .whl/ray-core.tar.xz (about 30 MB): the wheel's files without the parts the
# executor never imports (Java jars, rllib, data, serve, llm, tune, train); gpu_session.sh unpacks it.
# The jsonschema wheels are Ray core's one requirement the image lacks.
download jsonschema jsonschema-specifications referencing rpds-py
if [ ! -f .whl/ray-core.tar.xz ]; then
  staging=$(mktemp -d)
  "$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux2014_x86_64 -d "$staging" "ray==2.60.0"
  mkdir "$staging/tree" && (cd "$staging/tree" && "$PY" -m zipfile -e "$staging"/ray-*.whl . \
    && rm -rf ray/jars ray/rllib ray/data ray/serve ray/llm ray/tune ray/train \
    && chmod +x ray/core/src/ray/gcs/gcs_server ray/core/src/ray/raylet/raylet \
    && tar cf - . | xz -6 -T0 > "$OLDPWD/.whl/ray-core.tar.xz")
  rm -rf "$staging"
fi
# An unpinned name downloaded again on a later day leaves two versions of it in .whl/ (httpx 0.28.1 and
# 0.29.0, 2026-12-02), which pip refuses to install together on the device: keep only the newest of each.
"$PY" - <<'PYTHON'
from pathlib import Path

from packaging.utils import parse_wheel_filename

newest = {}
for wheel in sorted(Path(".whl").glob("*.whl")):
    name, version, _, _ = parse_wheel_filename(wheel.name)
    kept = newest.get(name)
    if kept is None or version > kept[0]:
        if kept is not None:
            kept[1].unlink()
            print(f"removed {kept[1].name}: {wheel.name} is newer")
        newest[name] = (version, wheel)
    else:
        wheel.unlink()
        print(f"removed {wheel.name}: {kept[1].name} is newer")
PYTHON
ls -la .whl
