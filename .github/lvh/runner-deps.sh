#!/usr/bin/env bash
# On the GitHub runner, before little-vm-helper starts the VM: what its install-dependencies step would install, without
# that step. Its `sudo rm /var/lib/man-db/auto-update` (no -f; little-vm-helper#531) fails on runner images that no longer
# have the file (actions/runner-images#13213), so kpr-kernels.yml passes install-dependencies: "false" and runs this.
set -euo pipefail
sudo rm -f /var/lib/man-db/auto-update
sudo apt-get update -qq
sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  cpu-checker qemu-system-x86 libvirt-daemon-system libvirt-clients bridge-utils
sudo kvm-ok
