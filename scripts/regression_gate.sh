#!/usr/bin/env bash
# The regression gate of a workflow's report job: this run's cells (NEW_DIR) against the cells of the last successful run
# of the same workflow on main, downloaded with gh; `kpr matrix --compare` fails on a property that passed there and
# fails here. Needs GH_TOKEN (actions: read) and GITHUB_REPOSITORY, as a GitHub job has them.
#
#   scripts/regression_gate.sh WORKFLOW_FILE NEW_DIR ARTIFACT_PATTERN
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: scripts/regression_gate.sh WORKFLOW_FILE NEW_DIR ARTIFACT_PATTERN" >&2
  exit 2
fi
workflow=$1 new=$2 pattern=$3
repo=${GITHUB_REPOSITORY:?GITHUB_REPOSITORY names the repository whose runs are the baseline}
id=$(gh run list --repo "$repo" --workflow "$workflow" --branch main --status success --limit 1 --json databaseId --jq '.[0].databaseId // empty')
if [ -z "$id" ]; then
  echo "::notice::no successful $workflow run on main yet: no baseline to compare against (the gate starts with the first one)"
  exit 0
fi
baseline=$(mktemp -d)
trap 'rm -rf "$baseline"' EXIT
echo "regression gate: run $id of $workflow on main (the last successful one) against this run's cells"
gh run download "$id" --repo "$repo" --pattern "$pattern" --dir "$baseline"
kpr matrix --compare "$baseline" "$new"
