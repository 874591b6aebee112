#!/usr/bin/env bash
# actions/download-artifact v4 from $KPR_ACT_ARTIFACTS: NAME, or every artifact matching PATTERN (all when empty), each
# into DEST/<name> unless MERGE=true; a NAME that is not there fails, as v4 does.
set -euo pipefail
shopt -s nullglob
: "${KPR_ACT_ARTIFACTS:?}"
dest=${DEST:-.}
cd "${GITHUB_WORKSPACE:-.}"
mkdir -p "$dest"
if [ -n "${NAME:-}" ]; then
  [ -d "$KPR_ACT_ARTIFACTS/$NAME" ] || { echo "Unable to download artifact(s): Artifact not found for name: $NAME" >&2; exit 1; }
  cp -R "$KPR_ACT_ARTIFACTS/$NAME/." "$dest/"
else
  n=0
  for a in "$KPR_ACT_ARTIFACTS"/*/; do
    name=$(basename "$a")
    # shellcheck disable=SC2053 # a glob, as the action's pattern
    [[ -z ${PATTERN:-} || $name == $PATTERN ]] || continue
    if [ "${MERGE:-false}" = true ]; then cp -R "$a." "$dest/"; else mkdir -p "$dest/$name" && cp -R "$a." "$dest/$name/"; fi
    n=$((n + 1))
  done
  echo "download-artifact stand-in: $n artifacts${PATTERN:+ matching $PATTERN}"
fi
echo "path=$(cd "$dest" && pwd)" >> "${GITHUB_OUTPUT:-/dev/null}"
