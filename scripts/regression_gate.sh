#!/usr/bin/env bash
# The regression gate of a workflow's report job: this run's cells (NEW_DIR) against, for each cell, the last run of the
# same workflow on main that judged that cell (green or not: a cell is judged by its own tests, not by the run's
# conclusion). gh lists the last KPR_GATE_RUNS (default 5) completed runs, newest first; a run of a pull request (a fork's
# branch may be called main too) or one that was cancelled or skipped is never a baseline, and each other one's cells are
# downloaded (a run whose artifacts expired, or that never made any, is passed over). `kpr matrix --compare NEWEST NEW
# --older ...` then judges (pytest_kpr/evidence/gate.py): per cell it walks back past runs that judged nothing (setup
# failed, incomplete, no results) and past cells of another provider (a `provider: fake` dispatch), and says "could not
# compare" when no run judged the cell. Its output is artifact text: it is printed between ::stop-commands:: and its
# token, so no line of it can act as a workflow command. Needs GH_TOKEN (actions: read) and GITHUB_REPOSITORY, as a GitHub
# job has them.
#
#   scripts/regression_gate.sh WORKFLOW_FILE NEW_DIR ARTIFACT_PATTERN
#
# Exit status: 0 no regression (also: no baseline yet, a notice), 1 a regression, 2 usage,
#              3 could not compare (gh failed, no cells in NEW_DIR, no GITHUB_REPOSITORY, unreadable artifacts, a cell
#                no earlier run judged).
set -uo pipefail
if [ $# -ne 3 ]; then
  echo "usage: scripts/regression_gate.sh WORKFLOW_FILE NEW_DIR ARTIFACT_PATTERN" >&2
  exit 2
fi
workflow=$1 new=$2 pattern=$3
cannot() { echo "::error::regression gate: could not compare: $*"; exit 3; }
repo=${GITHUB_REPOSITORY:-}
[ -n "$repo" ] || cannot "GITHUB_REPOSITORY is not set (it names the repository whose runs on main are the baseline)"
command -v gh >/dev/null || cannot "gh is not on PATH"
command -v kpr >/dev/null || cannot "kpr is not on PATH (install pytest-kpr first)"
if ! { [ -d "$new" ] && [ -n "$(find "$new" -name cluster.json -print -quit)" ]; }; then
  cannot "no cells in $new (no artifact matched $pattern, or the cells uploaded nothing)"
fi

baseline=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/kpr-gate-XXXXXX")
trap 'rm -rf "$baseline"' EXIT
listed=$(gh run list --repo "$repo" --workflow "$workflow" --branch main --status completed --limit "${KPR_GATE_RUNS:-5}" \
        --json databaseId,event,conclusion --jq '.[] | "\(.databaseId) \(.event) \(.conclusion)"' 2>"$baseline/list.err") \
  || cannot "gh run list failed: $(head -c 300 "$baseline/list.err" | tr -d '\000-\037')"
ids=""
while read -r id event conclusion; do
  [ -n "${id:-}" ] || continue
  case $event in
    pull_request*) echo "regression gate: run $id is a pull request's ($event): never a baseline"; continue ;;
  esac
  case $conclusion in
    cancelled|skipped|startup_failure|stale) echo "regression gate: run $id was $conclusion: never a baseline"; continue ;;
  esac
  ids="$ids $id"
done <<< "$listed"

dirs=()
n=0
for id in $ids; do
  [ "$id" = "${GITHUB_RUN_ID:-}" ] && continue
  d="$baseline/$(printf '%02d' "$n")-run-$id"
  got=0
  gh run download "$id" --repo "$repo" --pattern "$pattern" --dir "$d" >"$baseline/dl.log" 2>&1 || got=$?
  if [ "$got" = 0 ] && [ -n "$(find "$d" -name cluster.json -print -quit 2>/dev/null)" ]; then
    echo "regression gate: baseline run $id of $workflow on main"
    dirs+=("$d")
    n=$((n + 1))
  elif [ "$got" = 0 ] || grep -qi "no valid artifacts found to download" "$baseline/dl.log"; then
    # gh's own words (cli/cli pkg/cmd/run/download) when no artifact of the run matches: expired or never made
    echo "regression gate: run $id has no $pattern artifacts (expired, or it stopped before its cells): passed over"
  else
    cannot "gh run download $id failed: $(head -c 300 "$baseline/dl.log" | tr -d '\000-\037')"
  fi
done
if [ "${#dirs[@]}" -eq 0 ]; then
  echo "::notice::no completed $workflow run on main with $pattern artifacts yet: no baseline to compare against (the gate starts with the first one)"
  exit 0
fi

args=(--compare "${dirs[0]}" "$new")
for d in "${dirs[@]:1}"; do args+=(--older "$d"); done
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
echo "::stop-commands::$token"
rc=0
kpr matrix "${args[@]}" || rc=$?
echo "::$token::"
case $rc in
  0) echo "::notice::regression gate: no regression against the baseline"; exit 0 ;;
  1) echo "::error::regression gate: a regression against the baseline (the REGRESSION lines above)"; exit 1 ;;
  3) cannot "no earlier run on main judged a cell (the COULD NOT COMPARE lines above): a run that judged nothing is never a baseline" ;;
  *) cannot "kpr matrix --compare exited $rc (an unreadable artifact: the line above names it)" ;;
esac
