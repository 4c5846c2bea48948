# Two commands for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
HOST   ?= 127.0.0.1
CONSENTRY_DATABASE_URL ?= sqlite:///data/consentry.db
export CONSENTRY_DATABASE_URL

.PHONY: run test lint typecheck pytest schema bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(VENV)/.installed $@

## run: install and start the server on http://$(HOST):$(PORT) (SQLite under data/, offline model);
## it prints one line with its URL, and logs as text on a terminal (CONSENTRY_LOG_FORMAT=json for JSON)
run: $(VENV)/.installed
	@$(BIN)/consentry serve --host $(HOST) --port $(PORT)

## test: install dev tools, then lint, type-check and run the whole suite
test: $(VENV)/.installed-dev lint typecheck pytest

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check backend graphs tests
	$(BIN)/ruff format --check backend graphs tests

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

pytest: $(VENV)/.installed-dev
	$(BIN)/pytest -q -n 2

## schema: regenerate docs/protocol.schema.json and, from it, the TypeScript declarations backend/consentry/web/consentry-protocol.d.ts
schema: $(VENV)/.installed
	$(BIN)/consentry schema > docs/protocol.schema.json
	$(BIN)/python -m consentry.typescript_declarations > backend/consentry/web/consentry-protocol.d.ts

## bench: Consentry beside a naive baseline under concurrent consent conversations (docs/performance.md)
bench: $(VENV)/.installed
	$(BIN)/consentry bench --concurrency 1,10,100

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
