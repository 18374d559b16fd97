# Every target creates the virtual environment first, so `make demo` and `make test`
# work on a fresh machine with nothing but Python 3.11+ installed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

NODE_STAMP := interop/node_modules/.installed

.PHONY: demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The TypeScript reference server for the interop tests (pinned in interop/package-lock.json).
$(NODE_STAMP): interop/package.json interop/package-lock.json
	npm ci --prefix interop --no-audit --no-fund
	touch $(NODE_STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/pyright

unit: $(STAMP) $(NODE_STAMP)
	$(BIN)/pytest -q

test: lint typecheck unit

clean:
	rm -rf $(VENV)
