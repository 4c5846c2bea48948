# Two commands for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
HOST   ?= 127.0.0.1
CONSENTRY_DATABASE_URL ?= sqlite:///data/consentry.db
export CONSENTRY_DATABASE_URL

.PHONY: run test lock test-fast lint typecheck pytest schema bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Installs take the pinned versions, with their hashes, from the lock files (`make lock`); the
# package itself goes in last, with nothing more. run.lock is dev.lock without the dev tools.
# PYTHONWARNINGS: setuptools warns about every editable install ("Editable installation"), which
# is what we mean; its warnings would be the first thing `make run` shows a newcomer.
RUN_LOCK := requirements/run.lock
DEV_LOCK := requirements/dev.lock
INSTALL_SELF := PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet --no-deps -e .

$(VENV)/.installed: $(RUN_LOCK) pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r $(RUN_LOCK)
	$(INSTALL_SELF)
	touch $@

# The development tools (tools/: `consentry bench`, `consentry chaos`) only with the dev tools.
$(VENV)/.installed-dev: $(DEV_LOCK) pyproject.toml tools/pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r $(DEV_LOCK)
	$(INSTALL_SELF)
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet --no-deps -e tools
	touch $(VENV)/.installed $@

## lock: re-resolve requirements/*.lock from pyproject.toml's ranges, for Linux, macOS and Windows
## on Python 3.11 and newer; pins that still fit stay (`make lock UPGRADE=1`: the newest of all)
UV_VERSION := 0.13.9
UV_COMPILE := $(BIN)/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes \
	--custom-compile-command 'make lock' $(if $(UPGRADE),--upgrade)
lock: | $(BIN)/python
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)
	$(UV_COMPILE) --extra dev -o $(DEV_LOCK) pyproject.toml
	$(UV_COMPILE) -c $(DEV_LOCK) -o $(RUN_LOCK) pyproject.toml

## run: install and start the server on http://$(HOST):$(PORT) (SQLite under data/, offline model);
## it prints one line with its URL, and logs as text on a terminal (CONSENTRY_LOG_FORMAT=json for JSON)
run: $(VENV)/.installed
	@$(BIN)/consentry serve --host $(HOST) --port $(PORT)

## test: install dev tools, then lint, type-check and run the whole suite
test: $(VENV)/.installed-dev lint typecheck pytest

## lint: ruff, and the import contracts of .importlinter (layers, graphs/ apart from backend/, tools/ apart
## from the product, private modules)
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check backend graphs tools tests
	$(BIN)/ruff format --check backend graphs tools tests
	$(BIN)/lint-imports --no-logo

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

pytest: $(VENV)/.installed-dev
	$(BIN)/pytest -q -n 2

## test-fast: the unit tests and the SQLite half of the integration tests, under two minutes
## (no PostgreSQL, no browser, no Deno; `make test` runs them all)
test-fast: $(VENV)/.installed-dev
	$(BIN)/pytest -q -n 2 -m "not postgres and not chromium and not deno" tests/unit tests/integration

## schema: regenerate docs/protocol.schema.json and, from it, the TypeScript declarations backend/consentry/web/consentry-protocol.d.ts
schema: $(VENV)/.installed
	$(BIN)/consentry schema > docs/protocol.schema.json
	$(BIN)/python -m consentry.typescript_declarations > backend/consentry/web/consentry-protocol.d.ts

## bench: Consentry beside a naive baseline under concurrent consent conversations (docs/performance.md)
bench: $(VENV)/.installed-dev
	$(BIN)/consentry bench --concurrency 1,10,100

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
