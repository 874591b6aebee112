#!/usr/bin/env bash
# Self-tests under load: two `make test` runs at once, each from a fresh clone of this repository, while a CPU burner
# runs on every core. Prints each run's result per round and exits 1 if any run failed. The gate is the same as CI's:
# a loaded runner is normal, so `make test` must pass on one.
#
#   scripts/stress_selftests.sh [ROUNDS]     (default 1; the clones and their venvs are made once and reused)
#
# Everything it starts is its own: the clones live in one temporary directory named after this process, the burners
# are remembered by PID, each `make test` runs in a session of its own (setsid) whose process group is ended on exit,
# on failure and on Ctrl-C before the clones are removed (each run's own tests then clean up what they made). Logs:
# <tmp>/run-<round>-<n>.log (kept when a run fails, and the directory is printed).
set -euo pipefail

rounds="${1:-1}"
case "$rounds" in ''|*[!0-9]*|0) echo "usage: $0 [ROUNDS>=1]" >&2; exit 2 ;; esac
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/kpr-stress-$$-XXXX")"
burners=()
runs=()
keep=0

cleanup() {
    for pid in "${runs[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done  # a run's own process group
    for pid in "${runs[@]}"; do wait "$pid" 2>/dev/null || true; done
    for pid in "${burners[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${burners[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [ "$keep" = 0 ]; then rm -rf "$work"; else echo "[stress] logs kept in $work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for n in 1 2; do
    git clone -q "$repo" "$work/clone-$n"
done
cores="$(nproc)"
for _ in $(seq "$cores"); do
    python3 -c 'while True: pass' &
    burners+=("$!")
done
echo "[stress] $rounds round(s): 2 concurrent \`make test\` from fresh clones of $(git -C "$repo" rev-parse --short HEAD), $cores CPU burners"

failed=0
for round in $(seq "$rounds"); do
    runs=()
    start=$SECONDS
    for n in 1 2; do
        (cd "$work/clone-$n" && exec setsid -w make test) > "$work/run-$round-$n.log" 2>&1 &
        runs+=("$!")
    done
    for n in 1 2; do
        if wait "${runs[$((n - 1))]}"; then rc=0; else rc=$?; fi
        summary="$(grep -E '^=+ .*(passed|failed|error).* in [0-9.]+s' "$work/run-$round-$n.log" | tail -2 | tr -s '=' | tr '\n' ' ')"
        if [ "$rc" = 0 ]; then
            echo "[stress] round $round run $n: passed ($summary)"
        else
            echo "[stress] round $round run $n: FAILED, exit $rc ($summary)"
            grep -E '^(FAILED|ERROR) ' "$work/run-$round-$n.log" | head -10 | sed 's/^/[stress]   /'
            failed=$((failed + 1))
            keep=1
        fi
    done
    runs=()
    echo "[stress] round $round: $((SECONDS - start)) s"
done
total=$((2 * rounds))
echo "[stress] $((total - failed)) of $total runs passed"
[ "$failed" = 0 ]
