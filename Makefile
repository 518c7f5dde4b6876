# One command sets up and runs each job; the virtual environment is built on first use.
VENV ?= .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: demo test lint bench

$(BIN)/.installed: pyproject.toml requirements.lock
	test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c requirements.lock -e '.[dev,ray]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/ragjudge demo

lint: $(BIN)/.installed
	$(BIN)/ruff check ragjudge tests bench
	$(BIN)/ruff format --check ragjudge tests bench
	$(BIN)/mypy ragjudge

# pytest's exit code 5 (no tests collected) is a failure, not a pass.
test: lint
	$(BIN)/python -m pytest -q -rs --durations=15; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests ran"; exit 1; fi; exit $$rc

bench: $(BIN)/.installed
	for f in bench/bench_*.py; do $(BIN)/python $$f || exit 1; done
