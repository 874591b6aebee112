#!/usr/bin/env bash
# Reliability of the real-kernel tier (root): run it N times in a row, then interrupt one run with
# SIGINT and kill another with SIGKILL, and check after each that no namespace, cgroup, BPF program
# or process of ours is left (a killed run's leftovers must be removed by the next run's start).
#   sudo scripts/netns_loop.sh [N]   (default 20)
set -uo pipefail
cd "$(dirname "$0")/.."
N="${1:-20}"
PY=.venv/bin/python
PYTEST=(.venv/bin/pytest -q -p no:cacheprovider -m netns tests/)
leftovers() {
  { ip netns list | grep '^kprt-' ; find /sys/fs/cgroup -maxdepth 2 -name 'kprt-*' 2>/dev/null;
    bpftool prog show 2>/dev/null | grep ' name kprt_' ; pgrep -f 'pytest_kpr probe hold' ; pgrep -f 'http.server 8080 --bind 10.250.' ; } || true
}
fail=0
for i in $(seq "$N"); do
  start=$(date +%s.%N)
  if out=$("${PYTEST[@]}" 2>&1); then status=pass; else status=FAIL; fail=$((fail + 1)); fi
  left=$(leftovers)
  printf 'run %2d: %s in %.1fs (%s)%s\n' "$i" "$status" "$(echo "$(date +%s.%N) - $start" | bc)" "$(echo "$out" | tail -1)" "${left:+  LEFT: $left}"
  [ "$status" = FAIL ] && echo "$out" | tail -30
  [ -n "$left" ] && fail=$((fail + 1))
done
# interrupted run: Ctrl-C (SIGINT to the PID) in the middle. Job control on: otherwise a background
# job of a non-interactive shell starts with SIGINT ignored and Python would never see it.
set -m
"${PYTEST[@]}" >/tmp/kpr-interrupted.log 2>&1 & pid=$!
sleep 2.5; kill -INT "$pid"; wait "$pid"; rc=$?
left=$(leftovers); echo "SIGINT run: exit $rc ${left:+LEFT: $left}${left:-nothing left}"
[ -n "$left" ] && fail=$((fail + 1))
# killed run: SIGKILL leaves namespaces behind; the next run must remove them at its start
"${PYTEST[@]}" >/tmp/kpr-killed.log 2>&1 & pid=$!
sleep 2.5; kill -KILL "$pid"; wait "$pid" 2>/dev/null
echo "SIGKILL run left: $(leftovers | tr '\n' ' ')"
"${PYTEST[@]}" -k "no_route" >/tmp/kpr-after-kill.log 2>&1; grep -o 'removed leftovers of an earlier run.*' /tmp/kpr-after-kill.log || true
left=$(leftovers); echo "after the next run: ${left:-nothing left}"
[ -n "$left" ] && fail=$((fail + 1))
echo "failures: $fail"
exit $((fail > 0))
