# The README's two commands: `make serve` and `make test`. Everything else is for developers.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
DEV_STAMP := $(VENV)/.dev-installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
HOST ?= 127.0.0.1
PORT ?= 8080

.PHONY: serve test fuzz-long lint typecheck bench clean install dev

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e .
	touch $@

$(DEV_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# axe-core for the console's accessibility checks (tests/browser/package-lock.json pins it):
# installed once, so a test run needs no network.
AXE := tests/browser/node_modules/axe-core/axe.min.js

$(AXE): tests/browser/package-lock.json
	npm ci --prefix tests/browser --no-audit --no-fund --loglevel=error
	touch $@

install: $(STAMP)
dev: $(DEV_STAMP) $(AXE)

## Run the server on the embedded SQLite database under ./data/ (127.0.0.1:8080).
serve: $(STAMP)
	$(BIN)/dutyline serve --host $(HOST) --port $(PORT)

## Install the dev dependencies and run the whole test suite (the long fuzz aside: fuzz-long).
test: $(DEV_STAMP) $(AXE)
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q -m "not fuzz_long"

## Many more generated requests per API operation than `make test` sends (CI runs both).
fuzz-long: $(DEV_STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q -m fuzz_long

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests bench

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

## `make bench` lists the benchmark scenarios; `make bench NAME=team-list ARGS="--seconds 3"`
## runs one (bench/README.md, "How to run").
bench: $(DEV_STAMP)
	$(BIN)/python -m bench.run $(NAME) $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
