# KernelVault. `make corpus TARGET=triton` runs the main job; `make test` runs the tests.
# The first use builds .venv by itself. torch is pinned so that a CPU-only machine takes the local
# CPU build (an unpinned torch pulls several GB of CUDA build); numpy and triton are installed
# explicitly because the Triton interpreter (how the cpu platform runs kernels) needs numpy. The train
# extra (transformers, TRL) is installed too: tests check the sft/rl configs with TRL's own format code;
# and the agents extra (langgraph, openai, tenacity), which `corpus` uses when an endpoint is configured.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TARGET ?= triton
TORCH_SPEC ?= torch==2.13.0
TRITON_SPEC ?= triton==3.9.0
PYTEST_ARGS ?=
STAMP := $(VENV)/.kernelvault-installed

.PHONY: corpus test test-gpu lint tasks-check venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "$(TORCH_SPEC)" numpy "$(TRITON_SPEC)"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[dev,train,agents]"
	touch $(STAMP)

ARGS ?=
corpus: $(STAMP)
	$(BIN)/kernelvault corpus --target $(TARGET) $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest -m "not gpu" $(PYTEST_ARGS)

# On a machine with a CUDA or ROCm GPU (see bench/gpu_session.sh for the H200 run).
test-gpu: $(STAMP)
	$(BIN)/python -m pytest -m gpu $(PYTEST_ARGS)

tasks-check: $(STAMP)
	$(BIN)/kernelvault tasks check

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) out .pytest_cache
