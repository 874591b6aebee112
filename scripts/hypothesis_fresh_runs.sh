#!/usr/bin/env bash
# Run a property-test file N times, each with a fresh Hypothesis database, and count the failures.
# CI runs Hypothesis derandomised (tests/conftest.py, profile "ci"), so a property that fails on one
# seed in eight would never fail there: run a new property test this way (N >= 50) before committing it,
# and turn every counterexample it finds into an explicit example.
#   scripts/hypothesis_fresh_runs.sh 50 tests/test_lbmodel.py
#   scripts/hypothesis_fresh_runs.sh 50 tests/test_bad_input.py -k random    (extra pytest arguments)
set -uo pipefail
n=${1:?usage: $0 N TEST_PATH}
path=${2:?usage: $0 N TEST_PATH [PYTEST_ARGS...]}
shift 2
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
pass=0; fail=0
for i in $(seq 1 "$n"); do
  d=$(mktemp -d "${TMPDIR:-/tmp}/kpr-hypothesis-$$-XXXX")
  if env -u CI HYPOTHESIS_STORAGE_DIRECTORY="$d" "$py" -m pytest "$path" "$@" -q -p no:cacheprovider -x > "$d/out.txt" 2>&1; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); cp "$d/out.txt" "${TMPDIR:-/tmp}/kpr-hypothesis-failure-$$-$i.txt"
    echo "run $i failed: ${TMPDIR:-/tmp}/kpr-hypothesis-failure-$$-$i.txt"
  fi
  rm -rf "$d"
done
echo "$path: $n runs with a fresh database: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
