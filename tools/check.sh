#!/usr/bin/env bash
# The checks CI runs before the tests, in order: format, lint, types, the API reference.
# Usage: tools/check.sh [PYTHON]   (default: .venv/bin/python, else python3)
#        SKIP_FORMAT=1 tools/check.sh   skips `ruff format --check` (only while a formatting pass is pending)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"

step() { printf '\n== %s\n' "$*"; }

if [ "${SKIP_FORMAT:-0}" != 1 ]; then
  step "ruff format --check"
  "$PY" -m ruff format --check .
fi

step "ruff check"
"$PY" -m ruff check .

step "mypy src/attndyn"
"$PY" -m mypy src/attndyn

step "docs: sphinx -W (warnings are errors)"
rm -rf docs/_build/html
start=$(date +%s)
PYTHONPATH=src "$PY" -m sphinx -W --keep-going -q -b html docs docs/_build/html
echo "docs built in $(( $(date +%s) - start )) s: docs/_build/html/index.html"
