#!/usr/bin/env bash
# Print the newest Python 3.12+ on this machine (on PATH, or installed with pyenv), or
# nothing. `make newer-python` runs the test suite under it too: users run newer
# Pythons than the 3.11 the project is developed on, and some behaviour exists only
# there (a host's eager task factory, answerback/jsonrpc/_backend.py).
set -uo pipefail

candidates=()
for name in python3.14 python3.13 python3.12; do
    command -v "$name" >/dev/null 2>&1 && candidates+=("$name")
done
pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
for dir in $(ls -d "$pyenv_root"/versions/3.1[2-9]* 2>/dev/null | sort -V -r); do
    candidates+=("$dir/bin/python3")
done

for candidate in "${candidates[@]}"; do
    # A pyenv shim for a version that is not selected exits non-zero: try each one.
    if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
        command -v "$candidate"
        exit 0
    fi
done
