"""Options, ini keys and markers as a user sees them: --help, --markers, usage errors."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.run.settings import OPTIONS


def test_help_lists_the_kpr_group_with_every_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*Cilium kube-proxy-replacement conformance (pytest-kpr; besides pytest's exit statuses: "
                                 "3 provisioning failed, 4 this machine cannot run the suites):*"])
    for opt in OPTIONS:
        result.stdout.fnmatch_lines([f"*{opt.flag}*"])
    # every option has an ini twin
    for opt in OPTIONS:
        result.stdout.fnmatch_lines([f"*{opt.ini} (*"])
    assert result.ret == 0


def test_markers_are_registered_with_their_signatures(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.kpr(property=None, evidence=(), last=False, plane=(), sources=()): a Cilium kube-proxy-replacement conformance*",
            "@pytest.mark.kpr_requires(*features, cilium=None, kernel=None):*",
            "@pytest.mark.kpr_disruptive:*",
        ]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kpr-provider=minikube"], "--kpr-provider: 'minikube' is not one of: kind, existing, fake, replay"),
        (["--kpr-timeout-scale=0"], "--kpr-timeout-scale: '0' must be a positive number"),
        (["--kpr-timeout-scale=fast"], "--kpr-timeout-scale: 'fast' is not a number"),
        (["--kpr-cluster-name=My_Cluster"], "--kpr-cluster-name: 'My_Cluster' is not a valid cluster name*"),
        (["--kpr-cilium-version=latest"], "--kpr-cilium-version: 'latest' is not a Cilium version*"),
        (["--kpr-if-unavailable=ignore"], "--kpr-if-unavailable: 'ignore' is not one of: fail, skip"),
        (["--kpr-context=ci"], "--kpr-context needs --kpr-provider=existing"),
        (["--kpr-provider=existing", "--kpr-upgrade-to=1.19.8"],
         "--kpr-upgrade-to changes Cilium on a cluster this run did not create (--kpr-provider=existing); pass --kpr-allow-disruptive to do it"),
        (["--kpr-helm-values=/nonexistent/values.yaml"], "--kpr-helm-values: no such file: /nonexistent/values.yaml"),
        (["--kpr-clusters-dir=/nonexistent/clusters"], "--kpr-clusters-dir: /nonexistent/clusters does not exist or is not a directory"),
        (["--kpr-clusters-dir=."], "--kpr-clusters-dir: . has no versions.yaml (it must look like the checkout's clusters/)"),
        (["--kpr-lbipam-block=198.18.20.10"], "--kpr-lbipam-block: '198.18.20.10' is not START-STOP with two IP addresses*"),
        (["--kpr-lbipam-block=198.18.20.10-198.18.20.300"], "--kpr-lbipam-block: * is not START-STOP with two IP addresses*"),
        (["--kpr-lbipam-block=198.18.20.10-2001:2::14:20"], "--kpr-lbipam-block: '198.18.20.10-2001:2::14:20' mixes IPv4 and IPv6*"),
        (["--kpr-shared-vip=198.18.10"], "--kpr-shared-vip: '198.18.10' is not an IP address"),
        (["--kpr-lbipam-block=198.18.20.20-198.18.20.10"], "--kpr-lbipam-block: '198.18.20.20-198.18.20.10' is reversed: 198.18.20.20 comes after 198.18.20.10"),
        (["--kpr-shared-vip=0.0.0.0"], "--kpr-shared-vip: '0.0.0.0' is the unspecified address: a Service cannot claim it"),
        (["--kpr-shared-vip=224.0.0.5"], "--kpr-shared-vip: '224.0.0.5' is a multicast address: a Service cannot claim it"),
        (["--kpr-shared-vip=127.0.0.9"], "--kpr-shared-vip: '127.0.0.9' is a loopback address*"),
        (["--kpr-shared-vip=169.254.1.1"], "--kpr-shared-vip: '169.254.1.1' is a link-local address*"),
        (["--kpr-shared-vip=255.255.255.255"], "--kpr-shared-vip: '255.255.255.255' is the broadcast address*"),
        (["--kpr-shared-vip=fd00::1%eth0"], "--kpr-shared-vip: 'fd00::1%eth0' is an address with a zone (%...)*"),
        (["--kpr-shared-vip=fd00:10:96::80"], "--kpr-shared-vip: fd00:10:96::80 is IPv6, a family this run does not test (IPv4; --kpr-ip-families)"),
        (["--kpr-lbipam-block=0.0.0.0-0.0.0.9"], "--kpr-lbipam-block: '0.0.0.0-0.0.0.9': 0.0.0.0 is the unspecified address*"),
        (["--kpr-lbipam-block=0.0.0.1-255.255.255.254"], "--kpr-lbipam-block: '0.0.0.1-255.255.255.254' holds 4294967294 addresses; the suite needs a few*"),
        (["--kpr-lbipam-block=fd00::10-fd00::20"], "--kpr-lbipam-block: fd00::10-fd00::20 is IPv6, a family this run does not test*"),
        (["--kpr-kind-config=/nonexistent/kind.yaml"], "--kpr-kind-config: no such file: /nonexistent/kind.yaml"),
        (["--kpr-artifacts=/etc/hostname/evidence"], "--kpr-artifacts: cannot create /etc/hostname/evidence: /etc/hostname is not a directory"),
        (["--kpr-cilium-version=1.17.6"], "--kpr-cilium-version: Cilium 1.17.6 is older than the oldest supported minor 1.18*"),
        (["--kpr-node-image=kindest/node v1.34"], "--kpr-node-image: 'kindest/node v1.34' is not an image reference*"),
        (["--kpr-node-image=kindest/node:v1.34@sha256:abc"], "--kpr-node-image: * is not an image reference*"),
        (["--kpr-probe-image=Probe:latest"], "--kpr-probe-image: 'Probe:latest' is not an image reference*"),
        (["--cluster-name=ci"], "--cluster-name is pytest-kind's option, which pytest-kpr does not read; use --kpr-cluster-name"),
        (["--keep-cluster"], "--keep-cluster is pytest-kind's option, which pytest-kpr does not read; use --kpr-keep-cluster"),
        (["--kind-bin=/usr/bin/kind"], "--kind-bin is pytest-kind's option, which pytest-kpr does not read; use --kpr-kind-bin"),
        (["--kubeconfig", "/tmp/k"], "--kubeconfig is pytest-kind's option, * use --kpr-provider=existing --kpr-kubeconfig"),
        (["--kind-image=kindest/node:v1.34.0"], "--kind-image is pytest-kind's option, * use --kpr-node-image"),
        (["--kind-kubectl-bin=/usr/bin/kubectl"], "--kind-kubectl-bin is pytest-kind's option, * use --kpr-kubectl-bin"),
    ],
)
def test_bad_option_values_are_one_line_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: pytest-kpr: {message}"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert result.stdout.str().strip() == "", "a usage error writes nothing but its line"
    assert len([line for line in result.stderr.lines if line.strip()]) == 1


def test_bad_ini_values_name_the_ini_key(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nkpr_timeout_scale = -2\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-kpr: ini key kpr_timeout_scale: '-2' must be a positive number"])


def test_command_line_overrides_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nkpr_cluster_name = from-ini\nkpr_timeout_scale = 3\n")
    pytester.makepyfile(
        """
        def test_settings(kpr_settings):
            assert kpr_settings.cluster_name == "from-cli"
            assert kpr_settings.timeout_scale == 3.0
            assert kpr_settings.sources["cluster_name"] == "cli"
            assert kpr_settings.sources["timeout_scale"] == "ini"
        """
    )
    result = pytester.runpytest("--kpr-cluster-name=from-cli")
    result.assert_outcomes(passed=1)


def test_header_shows_the_configuration(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--kpr-cluster-name=ci", "-m", "kpr", "--collect-only")
    result.stdout.fnmatch_lines(["kpr: provider kind (kind cluster ci), Cilium 1.20.5 (pinned in clusters/versions.yaml), profile default, artifacts *"])


@pytest.mark.parametrize("args", [[], ["-m", "not kpr"], ["-m", "not slow"], ["-p", "no:kpr"]], ids=["plain", "not-kpr", "not-slow", "without-the-plugin"])
def test_a_run_that_selects_no_kpr_test_is_as_if_the_plugin_were_not_installed(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                                              args: list[str]) -> None:
    """A project with one plain test: exit 0, no file left, and nothing of pytest-kpr in the output but pytest's own list of
    installed plugins -- the same as with the plugin disabled (``-p no:kpr``)."""
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)  # the self-tests' own --kpr-* options: a user's project has none
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    before = sorted(p.name for p in pytester.path.iterdir())
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret == 0, result.stdout.str()
    left = sorted(p.name for p in pytester.path.iterdir() if p.name not in ("__pycache__", "stdout", "stderr") and not p.name.startswith("runpytest-"))  # pytester's own
    assert left == before, left
    lines = [ln for ln in result.stdout.lines + result.stderr.lines if "kpr" in ln and not ln.startswith(("plugins:", "rootdir:"))]
    assert lines == [], lines
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("ref", [
    "busybox:1.36.1", "quay.io/cilium/cilium:v1.18.0", "localhost:5000/team/probe:dev", "pytest-kpr-probe:0.1.0",
    "registry.k8s.io/e2e-test-images/agnhost:2.52", "kindest/node:v1.34.0@sha256:" + "7" * 64, "kindest/node@sha256:" + "a" * 64,
    "my_registry.example/a__b/c-d:1.0",
])
def test_real_image_references_are_accepted(ref: str) -> None:
    from pytest_kpr.run.settings import _image

    assert _image(ref) == ref


@pytest.mark.parametrize(("markexpr", "selects"), [
    ("", False), ("kpr", True), ("kpr and not kpr_disruptive", True), ("not timing", False), ("kpr_upgrade", True),
    ("netns or timing", False), ("not kpr", False), ("kpr_upgrade and not kpr", False), ("slow or kpr", True),
    ("kpr_disruptive", True), ("(kpr", False), ("kpr-x", False), ("not (kpr or slow)", False), ("kpr and kpr_upgrade", True),
])
def test_only_a_marker_expression_naming_kpr_selects_the_suites(markexpr: str, selects: bool) -> None:
    """Only a ``-m`` that can be true for a test marked kpr selects the suites: one that does not name a kpr marker (make
    test's ``-m "not timing"``) or excludes them (``not kpr``) must not provision a cluster, nor show anything of the
    plugin; one pytest cannot parse selects nothing here (pytest reports it)."""
    from types import SimpleNamespace

    from pytest_kpr.plugin.hooks import _selects_kpr

    assert _selects_kpr(SimpleNamespace(option=SimpleNamespace(markexpr=markexpr))) is selects  # type: ignore[arg-type]


@pytest.mark.parametrize(("setup", "args", "says"), [
    (lambda d: (d / "art").symlink_to("/nonexistent/dir"), ["--kpr-artifacts=art"], "--kpr-artifacts */art is a symlink to /nonexistent/dir, which does not exist"),
    (lambda d: (d / "art").write_text("x"), ["--kpr-artifacts=art"], "--kpr-artifacts: cannot create */art: */art is not a directory"),
    (lambda d: None, ["--kpr-artifacts=/proc/kpr-x"], "--kpr-artifacts /proc/kpr-x cannot be created: *"),
    (lambda d: None, ["--kpr-upgrade-to=1.20.2;id"], "--kpr-upgrade-to: '1.20.2;id' is not a Cilium version such as 1.20.2"),
    (lambda d: None, ["--kpr-cilium-version=1.20.2 --set x=y"], "--kpr-cilium-version: '1.20.2 --set x=y' is not a Cilium version*"),
    (lambda d: None, ["--kpr-provider=fake", "--kpr-cilium-version=1.20.5", "--kpr-upgrade-to=1.21.0"],
     "--kpr-upgrade-to: the fake cluster plays only the Cilium releases the pins know (*; clusters/versions.yaml): 1.21.0 is not one"),
    (lambda d: None, ["--kpr-provider=fake", "--kpr-cilium-version=1.20.9"], "--kpr-cilium-version: the fake cluster plays only * 1.20.9 is not one"),
    (lambda d: (d / "pytest.ini").write_text("[pytest]\nkpr_timout_scale = 2\n"), [],
     "unknown ini key kpr_timout_scale (did you mean kpr_timeout_scale?)"),
])
def test_a_bad_place_or_value_is_one_line_and_exit_4_before_any_cluster_work(pytester: pytest.Pytester, setup: Any, args: list[str],
                                                                           says: str) -> None:
    setup(pytester.path)
    pytester.makepyfile(test_a="import pytest\npytestmark = pytest.mark.kpr\ndef test_x(kpr_facts):\n    pass\n")
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=fake", "-p", "no:cacheprovider", *args)
    assert result.ret == 4
    result.stderr.fnmatch_lines([f"ERROR: pytest-kpr: {says}"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize(("content", "says"), [
    (b"\x8f\xd2binary", "kubeconfig * is not text (not UTF-8 at byte 0)"),
    (b"[1, 2]\n", "kubeconfig * is not a kubeconfig (no 'contexts' list)"),
    (b"contexts: [5]\n", "kubeconfig * is not a kubeconfig (a context without a name)"),
    (b"contexts: [{name: a}]\nclusters: {}\ncurrent-context: a\n", "kubeconfig * is not a kubeconfig ('clusters' is not a list)"),
])
def test_a_kubeconfig_of_the_wrong_shape_or_not_text_is_one_line(pytester: pytest.Pytester, content: bytes, says: str) -> None:
    (pytester.path / "kc").write_bytes(content)
    pytester.makepyfile(test_a="import pytest\npytestmark = pytest.mark.kpr\ndef test_x(kpr_facts):\n    pass\n")
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=existing", "--kpr-kubeconfig=kc", "-p", "no:cacheprovider")
    assert result.ret == 4
    result.stdout.fnmatch_lines([f"[[]kpr[]]   - {says}"])
    assert "INTERNALERROR" not in result.stdout.str()


def test_plain_pytest_where_there_are_no_tests_hints_at_the_suites(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(["pytest-kpr: no tests here; the conformance suites that come with the plugin run with: pytest -m kpr"])


def test_two_runs_with_the_default_artifacts_keep_both_results(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --kpr-artifacts each run writes under a directory of its own (kpr-artifacts/<UTC time>-<random>/), and
    kpr-artifacts/latest links the newest; kpr matrix finds every run under the parent folder. A directory named with
    --kpr-artifacts is used as it is (CI names one per cell)."""
    import json
    import subprocess
    import sys

    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:cacheprovider --kpr-suites=none")
    pytester.makepyfile(test_a="import pytest\npytestmark = pytest.mark.kpr(property='demo')\ndef test_x(kpr_facts):\n    pass\n")
    for _ in range(2):
        pytester.runpytest_subprocess("-m", "kpr", "--kpr-provider=fake").assert_outcomes(passed=1)
    runs = sorted(p for p in (pytester.path / "kpr-artifacts").iterdir() if not p.is_symlink())
    assert len(runs) == 2 and all((r / "fake" / "results.json").is_file() for r in runs), runs
    latest = pytester.path / "kpr-artifacts" / "latest"
    assert latest.is_symlink() and latest.resolve() == runs[-1], (latest.resolve(), runs)
    assert json.loads((latest / "fake" / "results.json").read_text())["run"]["complete"]
    page = subprocess.run([sys.executable, "-m", "pytest_kpr", "matrix", str(pytester.path / "kpr-artifacts")], capture_output=True,
                          text=True, timeout=120)
    assert page.returncode == 0 and page.stdout.count("](") == 2, page.stdout + page.stderr  # two columns, not three (latest)


def test_pytest_xdist_workers_write_under_the_controllers_run_directory(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:cacheprovider --kpr-suites=none")
    pytester.makepyfile(test_a="import pytest\npytestmark = pytest.mark.kpr(property='demo')\n"
                               "def test_x(kpr_facts):\n    pass\ndef test_y(kpr_facts):\n    pass\n")
    pytester.runpytest_subprocess("-m", "kpr", "--kpr-provider=fake", "-n", "2").assert_outcomes(passed=2)
    runs = [p for p in (pytester.path / "kpr-artifacts").iterdir() if not p.is_symlink()]
    assert len(runs) == 1, runs
    assert (pytester.path / "kpr-artifacts" / "latest").resolve() == runs[0]
