# Every target creates the virtual environment first, so `make demo` and `make test`
# work on a fresh machine with nothing but Python 3.11+ installed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

NODE_STAMP := interop/node_modules/.installed
CONFORMANCE_STAMP := conformance/node_modules/.installed

.PHONY: demo test lint typecheck unit newer-python bench clean conformance tmux services package

$(STAMP): pyproject.toml answerback/__init__.py
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
	$(BIN)/pyright --project pyproject.toml

# tmux drives the terminal client's end-to-end tests (tests/test_terminal_e2e.py), which
# are skipped without it.
tmux:
	@command -v tmux >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq \
		&& apt-get install -y -qq tmux >/dev/null; } || echo "tmux is missing, so the \
		terminal tests will be skipped: install it (apt-get install tmux, brew install tmux)"

# A real Redis and a real haproxy for the scale-out tests and benchmark
# (tests/test_scale_out.py), which are skipped, saying why, without them.
services:
	@missing=""; for tool in redis-server haproxy; do command -v $$tool >/dev/null \
		|| missing="$$missing $$tool"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq $$missing >/dev/null \
			|| echo "could not install$$missing: the scale-out tests will be skipped"; \
		else echo "$$missing missing and not root, so the scale-out tests will be skipped: \
			install them (apt-get install redis-server haproxy, brew install redis haproxy)"; fi; \
	fi

# Most of the suite's time is servers and peers starting, so it runs on every core
# (pytest-xdist; up to four workers, each test file kept on one so its module-scoped
# servers start once).
PYTEST_WORKERS := -n auto --maxprocesses 4 --dist loadfile

unit: $(STAMP) $(NODE_STAMP) $(CONFORMANCE_STAMP) tmux services
	$(BIN)/pytest -q $(PYTEST_WORKERS)

# Users run newer Pythons than the 3.11 the project is developed on, and Python 3.12+ lets
# a host start tasks eagerly (asyncio.eager_task_factory), which the engine honours, a path
# 3.11 cannot take. So the whole test suite runs again under the newest Python 3.12+ on the
# machine (scripts/newer_python.sh), in a virtual environment of its own; without one it
# is skipped, saying so.
NEWER_VENV := $(VENV)/newer

newer-python: $(STAMP) $(NODE_STAMP) $(CONFORMANCE_STAMP) tmux services
	@python=$$(scripts/newer_python.sh); \
	if [ -z "$$python" ]; then \
		echo "no Python 3.12+ on this machine: the tests run on this one only"; \
		exit 0; fi; \
	if [ ! $(NEWER_VENV)/.installed -nt pyproject.toml ] \
		|| ! $(NEWER_VENV)/bin/python -c '' 2>/dev/null; then \
		rm -rf $(NEWER_VENV) && "$$python" -m venv $(NEWER_VENV) \
		&& $(NEWER_VENV)/bin/pip install --quiet --upgrade pip \
		&& $(NEWER_VENV)/bin/pip install --quiet -e '.[dev]' \
		&& touch $(NEWER_VENV)/.installed || exit 1; fi; \
	echo "the test suite under $$($(NEWER_VENV)/bin/python --version)"; \
	$(NEWER_VENV)/bin/pytest -q $(PYTEST_WORKERS)

# The official MCP conformance suite and the Node (>= 22) it runs on, pinned in
# conformance/package-lock.json.
$(CONFORMANCE_STAMP): conformance/package.json conformance/package-lock.json
	npm ci --prefix conformance --no-audit --no-fund
	touch $(CONFORMANCE_STAMP)

conformance: $(STAMP) $(CONFORMANCE_STAMP)
	$(BIN)/python conformance/run.py

# Build the sdist and wheel, install the wheel into a fresh virtual environment outside the
# checkout and run an example from it: a file missing from the package fails here.
package: $(STAMP)
	$(BIN)/python scripts/check_package.py

test: lint typecheck unit newer-python conformance package

# The scale-out benchmark (benchmarks/scale_out.py) needs redis-server and haproxy.
bench: $(STAMP) services
	$(BIN)/python -m benchmarks.run
	$(BIN)/python -m benchmarks.scale_out

clean:
	rm -rf $(VENV)
