# KernelVault. `make corpus TARGET=triton` runs the main job; `make test` runs the tests.
# The first use builds .venv by itself. torch is pinned so that a CPU-only machine takes the local
# CPU build (an unpinned torch pulls several GB of CUDA build); numpy and triton are installed
# explicitly because the Triton interpreter (how the cpu platform runs kernels) needs numpy. The train
# extra (transformers, TRL) is installed too: tests check the sft/rl configs with TRL's own format code;
# and the agents extra (langgraph, openai, tenacity), which `corpus` uses when an endpoint is configured;
# and the dist extra (ray), for `corpus --executor ray` and its tests, which start Ray locally.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TARGET ?= triton
TORCH_SPEC ?= torch==2.13.0
TRITON_SPEC ?= triton==3.9.0
# The versions CI tested (pip freeze of this .venv): a fresh machine installs the same ones.
CONSTRAINTS ?= constraints/cpu.txt
PYTEST_ARGS ?=
# The suite runs in TEST_WORKERS processes (pytest-xdist), each test file whole in one of them so that a module's
# shared fixtures are built once: alone, one process keeps a 2-core machine about half busy (its tests wait on
# jailed workers, sleeps and timeouts). 0: one process.
TEST_WORKERS ?= 2
STAMP := $(VENV)/.kernelvault-installed
# verl 0.9.1 pins transformers below what TRL 1.16 needs: its tests (marked verl) run in an environment of
# their own, with verl's pins, built the same way from constraints/verl-cpu.txt.
VERL_VENV ?= .venv-verl
VERL_CONSTRAINTS ?= constraints/verl-cpu.txt
VERL_STAMP := $(VERL_VENV)/.kernelvault-installed

.PHONY: corpus test test-gpu lint tasks-check venv clean

# The extras each environment installs (named here: a comma cannot go through $(call)).
MAIN_EXTRAS := .[dev,train,agents,dist]
VERL_EXTRAS := .[dev,verl]
# Runs a command (printed first) with a line every 5 s while it works: pip's install phase prints nothing for up to
# a minute on a 2-core machine, and a silent minute looks like a hang. The command's exit status is the recipe's;
# Ctrl-C stops it (a command started with & in a script ignores SIGINT, so the trap passes it on as SIGTERM).
define heartbeat
echo '$(1)'; $(1) & pid=$$!; trap 'kill $$pid 2>/dev/null; exit 130' INT TERM; \
  n=0; while kill -0 $$pid 2>/dev/null; do sleep 1; n=$$((n + 1)); \
  if [ $$((n % 5)) -eq 0 ] && kill -0 $$pid 2>/dev/null; then echo "  ... still installing ($$n s)"; fi; done; \
  wait $$pid
endef

venv: $(STAMP)

# HIP candidates compile on a CPU-only machine with Debian's ROCm 5.2 hipcc (gfx90a, gfx940); as root the
# packages are installed where missing, otherwise the HIP compile stage names what to install.
# The ROCm libraries' headers and libraries are the ground truth of the QA part (`make corpus TARGET=qa`).
HIP_PACKAGES := hipcc libamdhip64-dev rocm-device-libs librocprim-dev librocsparse-dev libhipsparse-dev \
	librocrand-dev libhiprand-dev

$(STAMP): pyproject.toml Makefile $(CONSTRAINTS)
	@if ! (command -v hipcc && test -d /usr/include/rocprim -a -d /usr/include/hiprand) >/dev/null \
	    && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing $(HIP_PACKAGES) (Debian's ROCm compiler and libraries: HIP candidates, QA checks)"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(HIP_PACKAGES) >/dev/null \
		|| (apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		    $(HIP_PACKAGES) >/dev/null) || echo "could not install $(HIP_PACKAGES)"; \
	fi
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(call heartbeat,$(BIN)/python -m pip install --quiet --disable-pip-version-check -c $(CONSTRAINTS) "$(TORCH_SPEC)" numpy "$(TRITON_SPEC)")
	@$(call heartbeat,$(BIN)/python -m pip install --quiet --disable-pip-version-check -c $(CONSTRAINTS) -e "$(MAIN_EXTRAS)")
	touch $(STAMP)

$(VERL_STAMP): pyproject.toml Makefile $(VERL_CONSTRAINTS)
	test -x $(VERL_VENV)/bin/python || $(PYTHON) -m venv $(VERL_VENV)
	@$(call heartbeat,$(VERL_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -c $(VERL_CONSTRAINTS) "$(TORCH_SPEC)" numpy "$(TRITON_SPEC)")
	@$(call heartbeat,$(VERL_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -c $(VERL_CONSTRAINTS) -e "$(VERL_EXTRAS)")
	touch $(VERL_STAMP)

ARGS ?=
corpus: $(STAMP)
	$(BIN)/kernelvault corpus --target $(TARGET) $(ARGS)

# The report tests render pages in headless Chromium (Debian's package); as root it is installed where
# missing, otherwise those tests skip and say why.
TEST_TOOLS := $(VENV)/.test-tools
$(TEST_TOOLS): $(STAMP)
	@if ! command -v chromium >/dev/null && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing chromium (headless browser for the report tests)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		    chromium fonts-dejavu-core >/dev/null) || echo "could not install chromium"; \
	fi
	touch $(TEST_TOOLS)

# The two environments build side by side (each pip install keeps one core busy, and neither needs the other).
test:
	$(MAKE) -j2 $(STAMP) $(TEST_TOOLS) $(VERL_STAMP)
	$(BIN)/python -m pytest -m "not gpu and not verl" -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)
	$(VERL_VENV)/bin/python -m pytest -m verl $(PYTEST_ARGS) tests/test_verl.py

# On a machine with a CUDA or ROCm GPU (see bench/gpu_session.sh for the H200 run).
test-gpu: $(STAMP)
	$(BIN)/python -m pytest -m gpu $(PYTEST_ARGS)

tasks-check: $(STAMP)
	$(BIN)/kernelvault tasks check

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) $(VERL_VENV) out .pytest_cache
