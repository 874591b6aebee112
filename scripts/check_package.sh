#!/usr/bin/env bash
# make test-package: what a user gets from `pip install pytest-kpr`. Builds the wheel, installs it with its
# dependencies into a fresh virtualenv, and in an empty directory:
#   pytest -m kpr --kpr-provider=fake                                       every packaged suite passes
#   pytest -m kpr --kpr-provider=fake --kpr-fake-faults=snat_address_swapped the DSR/SNAT suite fails (exit 1)
#   pytest -m kpr  (no Docker/kind here)                                    the preflight, one report, exit 4
#   a checkout's root, with the wheel installed (a CI job's `pip install .`): pytest -m kpr collects with no error
# Then `pip install -e .` without the test extra and the dry run again. Everything lives in a temporary directory
# that is removed at the end, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
PYTHON="${PYTHON:-python3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/kpr-package-$$-XXXX")"
trap 'rm -rf "$work"' EXIT
step() { echo "[package] $*"; }
outcome() { tail -1 "$1" | sed -E 's/ in [0-9.]+s( \([0-9:]+\))?//; s/^=+ //; s/ =+$//'; }

step "building the wheel and the sdist"
.venv/bin/python -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
.venv/bin/python -m twine check --strict "$work"/dist/*

step "installing the wheel into a fresh virtualenv"
"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$work"/dist/pytest_kpr-*.whl 2>&1 | grep -v "is ignored: it is neither" || true

mkdir "$work/empty"
cd "$work/empty"
step "a dry run in an empty directory"
"$work/venv/bin/pytest" -m kpr --kpr-provider=fake -p no:cacheprovider -q >"$work/dry.log" 2>&1 || { tail -30 "$work/dry.log"; exit 1; }
# the wheel runs exactly what the checkout runs: the same outcome line (no count written here to go stale when a suite is added)
mkdir "$work/checkout-run"
(cd "$work/checkout-run" && "$repo/.venv/bin/pytest" -m kpr --kpr-provider=fake -p no:cacheprovider -q >"$work/checkout.log" 2>&1) \
  || { tail -30 "$work/checkout.log"; exit 1; }
wheel_outcome="$(outcome "$work/dry.log")"
[ "$wheel_outcome" = "$(outcome "$work/checkout.log")" ] && ! grep -Eq "[0-9]+ (failed|errors?)" <<<"$wheel_outcome" \
  || { echo "unexpected outcome: the wheel's dry run gave '$wheel_outcome', the checkout's '$(outcome "$work/checkout.log")'"; exit 1; }
tail -1 "$work/dry.log"

step "a checkout with the package installed (what a CI job's \`pip install .\` leaves): the kpr tests collect in its root"
mkdir "$work/checkout"
git -C "$repo" ls-files -z --cached --others --exclude-standard | (cd "$repo" && xargs -0 tar --ignore-failed-read -cf - 2>/dev/null) \
  | tar -C "$work/checkout" -xf -
rc=0; (cd "$work/checkout" && "$work/venv/bin/pytest" -m kpr --kpr-provider=fake --collect-only -q -p no:cacheprovider >"$work/collect.log" 2>&1) || rc=$?
# listing is not a run: exit 0 when tests were collected (as pytest); an error is 2 or an "error" in the tail
[ "$rc" = 0 ] && ! grep -Eq "[0-9]+ errors?|^ERROR " "$work/collect.log" \
  && grep -Eq "^[0-9]+/[0-9]+ tests collected" "$work/collect.log" \
  || { echo "the checkout's root did not collect cleanly (exit $rc)"; tail -30 "$work/collect.log"; exit 1; }
grep -E "^[0-9]+/[0-9]+ tests collected" "$work/collect.log"

step "a dry run with a fault fails its suite"
rc=0; "$work/venv/bin/pytest" -m kpr --kpr-provider=fake --kpr-fake-faults=snat_address_swapped -p no:cacheprovider -q >"$work/fault.log" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "^FAIL  DSR/SNAT" "$work/fault.log" || { echo "expected the DSR/SNAT suite to fail (exit 1), got $rc"; tail -20 "$work/fault.log"; exit 1; }
# as expected: said in one line (a raw "FAILED <test>" line here reads like a failing self-test in a CI summary)
echo "as expected, the planted fault failed: $(grep -m1 "^FAIL  DSR/SNAT" "$work/fault.log" | sed 's/  */ /g')"

step "the kind provider without its tools: the preflight in one report, exit 4"
rc=0; PATH="$work/venv/bin:/usr/bin:/bin" "$work/venv/bin/pytest" -m kpr --kpr-docker-bin=/nonexistent -p no:cacheprovider -q >"$work/pre.log" 2>&1 || rc=$?
[ "$rc" = 4 ] && ! grep -q "collected 0 items" "$work/pre.log" && ! grep -q Traceback "$work/pre.log" \
  || { echo "expected exit 4 with the preflight, got $rc"; tail -20 "$work/pre.log"; exit 1; }
grep -m3 "pytest-kpr" "$work/pre.log"

cd - >/dev/null
step "pip install -e . without the test extra, then the dry run"
"$PYTHON" -m venv "$work/venv-e"
"$work/venv-e/bin/python" -m pip install --quiet --disable-pip-version-check -e . 2>&1 | grep -v "is ignored: it is neither" || true
cd "$work/empty"
"$work/venv-e/bin/pytest" -m kpr --kpr-provider=fake -p no:cacheprovider -q >"$work/dry-e.log" 2>&1 || { tail -30 "$work/dry-e.log"; exit 1; }
tail -1 "$work/dry-e.log"
step "ok"
