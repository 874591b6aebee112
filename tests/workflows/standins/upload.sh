#!/usr/bin/env bash
# actions/upload-artifact v4 as a directory: $KPR_ACT_ARTIFACTS/$NAME. PATHS: one path or glob per line, relative to the
# workspace. A directory uploads its contents; a file goes to the artifact's root. Hidden files and directories are left
# out unless HIDDEN=true (v4.4+). A second upload of one name fails unless OVERWRITE=true (v4: 409 Conflict).
set -euo pipefail
shopt -s nullglob dotglob globstar
: "${KPR_ACT_ARTIFACTS:?}" "${NAME:?}"
case $NAME in */* | *\\* | *:* | *'"'* | *'<'* | *'>'* | *'|'* | *'*'* | *'?'*)
  echo "upload-artifact stand-in: the artifact name '$NAME' has a character v4 rejects" >&2; exit 1 ;;
esac
dest="$KPR_ACT_ARTIFACTS/$NAME"
if [ "${OVERWRITE:-false}" = true ]; then rm -rf "$dest"; fi
# mkdir is the artifact's creation: atomic, so two jobs uploading one name at once cannot both succeed
if ! mkdir "$dest" 2>/dev/null; then
  echo "Failed to CreateArtifact: Received non-retryable error: Failed request: (409) Conflict: an artifact with this name already exists on the workflow run" >&2
  exit 1
fi
tmp=$dest
cd "${GITHUB_WORKSPACE:-.}"
found=0
while IFS= read -r pattern; do
  [ -n "$pattern" ] || continue
  for m in $pattern; do
    if [ -d "$m" ]; then
      (cd "$m" && find . -mindepth 1 \( -type f -o -type l \) -print0) | while IFS= read -r -d '' f; do
        if [ "${HIDDEN:-false}" != true ] && [[ $f == */.* ]]; then continue; fi
        mkdir -p "$tmp/$(dirname "$f")" && cp -P "$m/$f" "$tmp/$f"
      done
    elif [ -f "$m" ]; then
      if [ "${HIDDEN:-false}" != true ] && [[ $(basename "$m") == .* ]]; then continue; fi
      cp -P "$m" "$tmp/"
    fi
  done
done <<< "$PATHS"
found=$(find "$tmp" -type f | wc -l)
if [ "$found" = 0 ]; then
  rmdir "$dest"
  case ${IF_NONE:-warn} in
    error) echo "No files were found with the provided path: $PATHS. No artifacts will be uploaded." >&2; exit 1 ;;
    warn) echo "::warning::No files were found with the provided path: $PATHS. No artifacts will be uploaded." ;;
  esac
  exit 0
fi
echo "upload-artifact stand-in: $NAME ($found files)"
echo "id=$(printf '%s' "$NAME" | cksum | cut -d' ' -f1)" >> "${GITHUB_OUTPUT:-/dev/null}"
