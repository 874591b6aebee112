#!/usr/bin/env bash
# make kpr inside a little-vm-helper VM (kpr-kernels.yml), as root in the VM, with the runner's checkout at /host.
# The action pastes its cmd into an unquoted heredoc on the runner, where every $ would expand; so the cmd is only
# `bash /host/.github/lvh/kpr-in-vm.sh` and everything that needs a $ lives here, expanded in the VM.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)  # /host in the VM: the runner's checkout
cd "$root"
cell=$(cat .kpr-cell)  # the matrix kernel, written by the workflow (no expression reaches the VM's command line)
case "$cell" in
  "" | *[!A-Za-z0-9._-]*) echo "kpr-in-vm: bad cell name in .kpr-cell: '$cell'" >&2; exit 2 ;;
esac
provider=$(cat .kpr-provider 2>/dev/null || echo kind)  # fake: the workflow's dry run, on the runner without a VM
case "$provider" in kind | fake) ;; *) echo "kpr-in-vm: bad provider in .kpr-provider: '$provider'" >&2; exit 2 ;; esac
echo "kernel $(uname -r) (image $cell, provider $provider)"
# helm at the pinned version (azure/setup-helm on the runner), handed over through the shared checkout
export PATH="$root/.bin:$PATH"
helm version --short
if [ "$provider" = kind ]; then
  # what `make kpr` needs and the LVH kind image lacks: the venv module and pip (kind, docker and kubectl are in the image)
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends python3-venv python3-pip make >/dev/null
fi
export CI=true  # as on the runner: a skipped outside-view test fails (pytest runs as root here: it has CAP_NET_RAW)
args="--kpr-provider=$provider --kpr-artifacts=kpr-artifacts/kernel-$cell --junitxml=kpr-artifacts/kernel-$cell/junit.xml"
if [ "$provider" = kind ]; then args="$args --kpr-cluster-name=kpr --kpr-timeout-scale=3"; fi
make kpr KPR_ARGS="$args"
