#!/bin/sh
# salt-lint on every SLS of the Salt tree and yamllint (strict) on its pure-YAML files.
# Usage: tests/salt/lint.sh [BINDIR]   (BINDIR holds salt-lint and yamllint; default .venv/bin)
set -eu
cd "$(dirname "$0")/../.."
BIN=${1:-.venv/bin}
find salt -name '*.sls' -print0 | sort -z | xargs -0 "$BIN/salt-lint"
"$BIN/yamllint" --strict salt .salt-lint .yamllint
echo "salt-lint and yamllint: ok"
