# Sourced by bench/gpu_session.sh and by one-off device commands (`source bench/gpu_env.sh; python3 ...`):
# the wheels the device image lacks, PYTHONPATH, libseccomp, and $KV_RESULTS_DIR.
export KV_RESULTS_DIR="${OUT:-${KV_RESULTS_DIR:-/tmp/kv-results}}"
mkdir -p "$KV_RESULTS_DIR"
# Installed once per machine (the marker), so that two sessions started side by side on the GPUs of one
# host (CUDA_VISIBLE_DEVICES) share one install instead of racing on /tmp/site.
if compgen -G ".whl/*.whl" >/dev/null; then
  if [ ! -f /tmp/site/.kv-installed ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    # Ray travels as a pruned tree (bench/fetch_device_wheels.sh says why), unpacked beside the wheels
    if [ -f .whl/ray-core.tar.xz ]; then tar xJf .whl/ray-core.tar.xz -C /tmp/site || exit 1; fi
    touch /tmp/site/.kv-installed
  fi
  export PYTHONPATH="/tmp/site" PATH="/tmp/site/bin:$PATH"  # ninja (load_inline) comes as a wheel
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
# The jail's seccomp filter needs libseccomp: where the image has none, Debian's travels in .whl/.
if ! ldconfig -p 2>/dev/null | grep -q "libseccomp.so.2" && [ -f .whl/libseccomp2.deb ]; then
  mkdir -p /tmp/kvlib && dpkg -x .whl/libseccomp2.deb /tmp/kvlib
  export KV_LIBSECCOMP="$(find /tmp/kvlib -name 'libseccomp.so.2' | head -n 1)"
fi
