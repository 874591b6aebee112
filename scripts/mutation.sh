#!/usr/bin/env bash
# `make mutation`: mutation testing of the judgements, the datapath rules, the frontend-ownership model and
# the health parsers (pyproject.toml [tool.mutmut]) against the fast, non-root tests that exercise them.
# Prints the score and every surviving mutant; docs/contributing/mutation.md lists the survivors and why each is equivalent.
# Not part of `make test` (about 6 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p kpr-artifacts
rm -rf mutants
echo "[mutation] mutmut run (log: kpr-artifacts/mutmut.log)"
.venv/bin/mutmut run > kpr-artifacts/mutmut.log 2>&1 || true
.venv/bin/mutmut results --all true > kpr-artifacts/mutmut-results.txt 2>/dev/null || true
.venv/bin/python - <<'PY'
import collections, re, subprocess
lines = [l.strip() for l in open("kpr-artifacts/mutmut-results.txt") if ": " in l]
status = collections.Counter(l.rsplit(": ", 1)[1] for l in lines)
total = sum(status.values())
killed = status["killed"] + status["timeout"]
print(f"[mutation] {total} mutants: {status['killed']} killed, {status['timeout']} timed out (killed), "
      f"{status['survived']} survived, {status['no tests']} without tests, {status['suspicious']} suspicious")
print(f"[mutation] score: {killed}/{total} = {100.0 * killed / max(total, 1):.1f}% killed")
survivors = [l.rsplit(": ", 1)[0] for l in lines if l.endswith(": survived") or l.endswith(": no tests")]
for name in survivors:
    diff = subprocess.run([".venv/bin/mutmut", "show", name], capture_output=True, text=True).stdout
    changed = [d for d in diff.splitlines() if d[:1] in "+-" and d[:3] not in ("+++", "---")]
    print(f"survivor {name}: " + " | ".join(c.strip() for c in changed)[:300])
PY
