# pytest-kpr: the two entry points.
#   make kpr    the conformance suites on a fresh kind cluster with Cilium in KPR mode (needs Docker,
#               kind, kubectl, helm on PATH); extra pytest arguments in KPR_ARGS
#   make test   every self-test tier (fixtures, pytester, real kernel in netns as root, suites vs fake)
# Both create .venv and install the package into it first.

PYTHON   ?= python3
VENV     ?= .venv
BIN      := $(VENV)/bin
STAMP    := $(VENV)/.installed-stamp
KPR_ARGS ?=
TEST_ARGS ?=
# self-tests run in 3 pytest-xdist workers on 2 cores: about 60 tests wait on a process of their own (a stubbed kind, the
# wheel, an xdist run), and a third worker fills those waits (measured 2026-12-06 at issue 55, make test on this idle
# 2-core machine: 2 workers 153 s / 264 CPU-s, 3 workers 133 s / 262 CPU-s; on 2026-12-03, before those tests grew,
# 2 workers were best: 98 s / 160 CPU-s, 4 workers 98 s / 178). TEST_WORKERS=0 runs them in one process. The timing tests
# mostly sleep: 4 workers overlap them (TIMING_WORKERS).
TEST_WORKERS ?= 3
TIMING_WORKERS ?= 4

# Debian packages the real-kernel tier uses (installed by `make test` when root and missing).
KERNEL_DEBS := iproute2 iptables nftables conntrack clang libbpf-dev bpftool curl util-linux

PROBE_IMAGE ?= pytest-kpr-probe:$(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)

.PHONY: kpr test test-reach test-kernels test-browser test-package test-workflows venv kernel-deps qemu-deps probe-image clean help mutation

help:
	@echo "make kpr    run the kpr conformance suites against kind (pytest -m kpr)"
	@echo "make test   run the plugin's self-tests"

# make kpr needs the plugin and its dependencies; the self-tests add the test extra (linters, docs, build) on top
KPR_STAMP := $(VENV)/.kpr-stamp

$(KPR_STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "[kpr] installing pytest-kpr and its dependencies into $(VENV) (pip; about a minute the first time)"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e . > $(VENV)/pip.log 2>&1 \
		|| { grep -v "is ignored: it is neither" $(VENV)/pip.log >&2; echo "[kpr] pip install failed (log: $(VENV)/pip.log)" >&2; exit 1; }
	@$(BIN)/python -c "import pytest_kpr" && touch $@

$(STAMP): $(KPR_STAMP)
	@echo "[kpr] installing the self-tests' extra (pytest-xdist, linters, mkdocs, act) into $(VENV)"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]' > $(VENV)/pip.log 2>&1 \
		|| { grep -v "is ignored: it is neither" $(VENV)/pip.log >&2; echo "[kpr] pip install failed (log: $(VENV)/pip.log)" >&2; exit 1; }
	@$(BIN)/python -c "import pytest_kpr" && touch $@

venv: $(STAMP)

probe-image:
	docker build -t $(PROBE_IMAGE) -f clusters/images/probe/Dockerfile .

# the cluster's tools are prepared for kind only: KPR_ARGS=--kpr-provider=fake (a dry run) or =existing needs neither
KPR_ON_KIND := $(if $(filter --kpr-provider=fake --kpr-provider=existing,$(KPR_ARGS)),,1)

kpr: $(KPR_STAMP)
	@if [ -n "$(KPR_ON_KIND)" ] && [ -z "$$(sed -n 's/^  image: "\(.*\)"/\1/p' clusters/versions.yaml)" ] && docker info >/dev/null 2>&1 \
		&& ! docker image inspect $(PROBE_IMAGE) >/dev/null 2>&1; then \
		echo "[kpr] no published probe image is pinned yet (clusters/versions.yaml probe.image): building $(PROBE_IMAGE) locally"; \
		$(MAKE) --no-print-directory probe-image; \
	fi
	@if [ -z "$(KPR_ON_KIND)" ]; then :; \
	elif ! command -v helm >/dev/null 2>&1; then \
		echo "[kpr] helm is not on PATH: the preflight will say so (the Cilium chart repository is added once helm is there)"; \
	elif ! helm repo list 2>/dev/null | grep -q '^cilium[[:space:]]'; then \
		echo "[kpr] adding the Cilium Helm chart repository (helm repo add cilium https://helm.cilium.io)"; \
		helm repo add cilium https://helm.cilium.io >/dev/null && helm repo update cilium >/dev/null; \
	fi
	$(BIN)/pytest -m kpr $(KPR_ARGS)

# $(call install_when_missing,CHECK,PACKAGES,WHAT FOR): when the shell test CHECK fails, root installs PACKAGES with
# apt-get; anyone else is stopped with WHAT FOR (no commas inside the arguments: they separate them)
define install_when_missing
	@if ! $(1); then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "[kpr] installing $(2): $(3)"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(2) >/dev/null; \
		else \
			echo "[kpr] make $@ needs root to install $(2): $(3)"; exit 2; \
		fi; \
	fi
endef

kernel-deps:
	@missing=""; for p in $(KERNEL_DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "[kpr] installing Debian packages for the real-kernel tier:$$missing"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
		else \
			echo "[kpr] missing for the real-kernel tier (not root, those tests will skip):$$missing"; \
		fi; \
	fi
	@# Ubuntu 24.04's bpftool is a wrapper (linux-tools-common) that runs only the linux-tools of the running kernel
	@# (actions/runner-images#14203): where the one on PATH does not run, a linux-tools package is installed -- the
	@# running kernel's, else the generic one's (tests/realkernel.py bpftool finds either: any kernel's bpftool works)
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! bpftool version >/dev/null 2>&1; then \
		echo "[kpr] bpftool does not run on kernel $$(uname -r) here: installing linux-tools-$$(uname -r) (or linux-tools-generic)"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "linux-tools-$$(uname -r)" >/dev/null 2>&1 || \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends linux-tools-generic >/dev/null 2>&1 || \
		echo "[kpr] no linux-tools package for this kernel: the tests that dump a map with bpftool will say so"; \
	fi
	@# the tier pins maps for bpftool under /sys/fs/bpf: a fresh machine may have none mounted yet (iproute2 mounts one
	@# the first time a test attaches a program, mid-run, and a pin made before that fails), so one is mounted first
	@if [ "$$(id -u)" = 0 ] && [ -d /sys/fs/bpf ] && [ "$$(stat -f -c %T /sys/fs/bpf)" != bpf_fs ]; then \
		echo "[kpr] mounting a bpffs at /sys/fs/bpf (as iproute2 and Cilium do) for the real-kernel tier's map pins"; \
		mount -t bpf bpf /sys/fs/bpf; \
	fi

# The timing tests (flow gaps measured in wall time) run after the rest, among themselves only: they mostly sleep, so
# several at once do not starve each other, while the CPU-bound self-tests would. Only the files that mark tests
# `timing` are collected for them (collecting every file again in each worker cost 10 CPU-seconds).
TIMING_FILES = $(shell grep -l 'mark\.timing' tests/test_*.py)

# Bytecode is cached whatever PYTHONDONTWRITEBYTECODE says (in __pycache__/, ignored by git): make test starts about a
# hundred Python processes (xdist workers, the kpr CLI in namespaces, runs in subprocesses), and with it set, as on this
# project's machines, each compiled pytest_kpr and pytest rewrote and compiled every test module again.
test: export PYTHONDONTWRITEBYTECODE =
test: $(STAMP) kernel-deps
	$(BIN)/pytest tests -n $(TEST_WORKERS) -m "not timing and not browser and not workflows and not reach" $(TEST_ARGS)
	$(BIN)/pytest $(TIMING_FILES) -n $(TIMING_WORKERS) -m timing $(TEST_ARGS)

# The fault table's sweeps (tests/test_faults.py): make test runs each fault row on the suites it declares; here each
# group's faults run under every other suite, where a failure is an error naming the row that reached it, and each group's
# run is replayed from its recording to the same verdicts (CI's make-test job runs it after make test).
test-reach: $(STAMP)
	$(BIN)/pytest tests/test_faults.py -n $(TEST_WORKERS) -m reach $(TEST_ARGS)

# What `pip install pytest-kpr` gets: the wheel in a fresh virtualenv, a dry run in an empty directory, the preflight
# without Docker, and `pip install -e .` without the test extra (scripts/check_package.sh; about 2 minutes).
test-package: $(STAMP)
	PYTHON=$(PYTHON) scripts/check_package.sh

# Debian packages for booting other kernels under qemu (make test-kernels); the kernels themselves are
# Debian's linux-image packages, fetched by scripts/kernel_cells.py into .kernels/ from Debian's archive and verified
# with Debian's archive keyring (debian-archive-keyring: Debian's, or Ubuntu's package of it on a GitHub runner).
QEMU_DEBS := qemu-system-x86 busybox-static kmod xz-utils debian-archive-keyring

qemu-deps:
	@missing=""; for p in $(QEMU_DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "[kpr] installing Debian packages for the kernel cells:$$missing"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
		else \
			echo "[kpr] make test-kernels needs root and:$$missing"; exit 2; \
		fi; \
	fi

# kpr matrix's HTML page and the documentation site in a real headless browser: Debian's chromium (installed when root
# and missing); the site's screenshot is kept in kpr-artifacts/browser/. The browser runs in a network namespace of its
# own (nftables: kernel-deps installs it, as a fresh runner may lack it).
test-browser: $(STAMP) kernel-deps
	$(call install_when_missing,{ command -v chromium || command -v google-chrome; } >/dev/null 2>&1,chromium,Debian's chromium for the browser check)
	KPR_REQUIRE_NETNS=0 KPR_REQUIRE_BROWSER=1 $(BIN)/pytest -p no:cacheprovider -m browser tests/evidence/test_matrix.py tests/test_docs_browser.py

# The real-kernel tier on Debian's 5.10 (bullseye), 6.1 and 6.12 kernels under qemu, and on the host's kernel: a table of cells.
test-kernels: $(STAMP) kernel-deps qemu-deps
	$(BIN)/python scripts/kernel_cells.py $(KERNEL_ARGS)

# Every job of every workflow under act on this machine, offline, with stand-ins for the third-party actions
# (tests/workflows/run.py; the kind, upgrade and kernel cells with provider fake). WORKFLOWS_ARGS="--only kpr-kind.yml"
# runs one; --list prints the plan and the jobs that cannot run here, with the reason.
test-workflows: $(STAMP)
	$(call install_when_missing,command -v sudo >/dev/null 2>&1,sudo,the act tier's jobs run as a user that is not root and use sudo as on GitHub (tests/workflows/runner_image.py))
	$(BIN)/python tests/workflows/run.py $(WORKFLOWS_ARGS)
	$(BIN)/pytest -p no:cacheprovider -m workflows tests/test_outside_caller.py

# Mutation testing of the judgements, rules, model and health parsers (not in `make test`: ~3 min).
mutation: $(STAMP)
	@$(BIN)/python -c "import mutmut" 2>/dev/null || $(BIN)/python -m pip install --quiet --disable-pip-version-check 'mutmut>=3.8,<4'
	scripts/mutation.sh

clean:
	rm -rf $(VENV) kpr-artifacts .pytest_cache .hypothesis mutants
