#!/usr/bin/env bash
# Explore a property-test file: run it N times, each with new random seeds and three times its examples
# (KPR_HYPOTHESIS=explore: tests/conftest.py, tests/helpers.py examples()), and count the failures.
# Every other run -- make test, CI -- replays the same derandomised examples without a database, so a property that
# fails on one seed in eight would never fail there: run a new property test this way (N >= 50) before committing it,
# and turn every counterexample it finds into an explicit @example.
#   scripts/hypothesis_fresh_runs.sh 50 tests/rules/test_lbmodel.py
#   scripts/hypothesis_fresh_runs.sh 50 tests/cli/test_bad_input.py -k random    (extra pytest arguments)
set -uo pipefail
n=${1:?usage: $0 N TEST_PATH}
path=${2:?usage: $0 N TEST_PATH [PYTEST_ARGS...]}
shift 2
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
pass=0; fail=0
for i in $(seq 1 "$n"); do
  d=$(mktemp -d "${TMPDIR:-/tmp}/kpr-hypothesis-$$-XXXX")
  if KPR_HYPOTHESIS=explore "$py" -m pytest "$path" "$@" -q -p no:cacheprovider -x > "$d/out.txt" 2>&1; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); cp "$d/out.txt" "${TMPDIR:-/tmp}/kpr-hypothesis-failure-$$-$i.txt"
    echo "run $i failed: ${TMPDIR:-/tmp}/kpr-hypothesis-failure-$$-$i.txt"
  fi
  rm -rf "$d"
done
echo "$path: $n runs with new random seeds: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
