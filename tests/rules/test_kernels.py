"""Kernel facts as data (clusters/kernels.yaml) and the expectations that come from them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_kpr.rules.kernels import KernelTable

TABLE = KernelTable.load(Path(__file__).resolve().parents[2] / "clusters" / "kernels.yaml")


@pytest.mark.parametrize(("feature", "kernel", "has"), [
    ("tcx", "6.1.0-50-amd64", False), ("tcx", "6.5.13", False), ("tcx", "6.6.0", True), ("tcx", "6.12.107+deb12-amd64", True),
    ("tcx", "6.18.0", True),
    ("getpeername_hook", "5.7.19", False), ("getpeername_hook", "5.8.0", True),
    ("icmp_no_backend", "5.1.21", False), ("icmp_no_backend", "5.2.0", True),
    ("netns_cookie", "5.6.19", False), ("netns_cookie", "5.7.0", True),
    ("bpf_host_routing", "5.4.0-150-generic", False), ("bpf_host_routing", "5.10.0", True),
    ("netkit", "6.6.30", False), ("netkit", "6.7.0", True),
    ("tcx", "garbage", None),
])
def test_each_feature_on_both_sides_of_its_boundary(feature: str, kernel: str, has: bool | None) -> None:
    assert TABLE.expects(feature, kernel) is has


def test_every_feature_and_floor_cites_a_source() -> None:
    assert set(TABLE.features) >= {"socket_lb", "icmp_no_backend", "netns_cookie", "getpeername_hook", "bpf_host_routing", "tcx", "netkit"}
    assert all(f.source and f.what for f in TABLE.features.values())
    assert {f.cilium for f in TABLE.floors} >= {(1, 16), (1, 17), (1, 18), (1, 19), (1, 20)} and all(f.source for f in TABLE.floors)


@pytest.mark.parametrize(("version", "kernels", "problems"), [
    ("1.20.2", {"a": "6.1.0", "b": "5.10.0"}, []),
    ("1.20.2", {"a": "6.1.0", "b": "5.4.0-150-generic"}, ["node b runs kernel 5.4.0-150-generic, below Cilium 1.20's floor 5.10"]),
    ("1.17.6", {"a": "5.4.0-150-generic"}, []),
    ("1.17.6", {"a": "4.19.0"}, ["node a runs kernel 4.19.0, below Cilium 1.17's floor 5.4"]),
])
def test_the_floor_of_a_cilium_version(version: str, kernels: dict[str, str], problems: list[str]) -> None:
    got = TABLE.floor_problems(version, kernels)
    assert [g.split(" (")[0] for g in got] == problems


@pytest.mark.parametrize(("profile", "kernels", "problems"), [
    ("netkit", {"a": "6.8.0-49-generic", "b": "6.12.107+deb12-amd64"}, []),
    ("netkit", {"a": "6.8.0", "b": "6.7.12"}, ["node b runs kernel 6.7.12, below the netkit profile's floor 6.8"]),
    ("netkit", {"a": "6.6.30", "b": "5.4.0-150-generic"},  # both floors, each named
     ["node b runs kernel 5.4.0-150-generic, below Cilium 1.20's floor 5.10", "node a runs kernel 6.6.30, below the netkit profile's floor 6.8",
      "node b runs kernel 5.4.0-150-generic, below the netkit profile's floor 6.8"]),
    ("netkit", {"a": "garbage"}, []),  # not a version: the Cilium floor's own check reports it where asked
    ("default", {"a": "6.6.30"}, []), ("xdp", {"a": "6.6.30"}, []),
])
def test_a_profiles_own_floor(profile: str, kernels: dict[str, str], problems: list[str]) -> None:
    got = TABLE.floor_problems("1.20.2", kernels, profile)
    assert [g.split(" (")[0] for g in got] == problems
    assert all("netkit is available for kernel 6.8 and onwards" in g for g in got if "netkit profile" in g), got


def test_every_profile_floor_names_a_profile_and_cites_its_source() -> None:
    profiles = {p.stem for p in (Path(__file__).resolve().parents[2] / "clusters" / "profiles").glob("*.yaml")}
    assert TABLE.profile_floors and set(TABLE.profile_floors) <= profiles, sorted(TABLE.profile_floors)
    assert all(f.source for f in TABLE.profile_floors.values())


def test_a_profile_floor_is_a_kernel_version(tmp_path: Path) -> None:
    from pytest_kpr.core.yamlfile import YamlFileError

    bad = tmp_path / "kernels.yaml"
    bad.write_text("floors: []\nfeatures: {}\nprofile_floors:\n  netkit:\n    kernel: 6.8\n    source: x\n")
    with pytest.raises(YamlFileError, match="profile_floors.netkit.kernel"):
        KernelTable.load(bad)


def test_a_cluster_below_the_floor_is_refused_naming_the_node(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(textwrap.dedent("""
        from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider
        PROVIDER = FakeProvider(FakeCluster(FakeConfig(kernel="5.4.0-150-generic")))
        def pytest_kpr_provider(config, settings, timeouts, kube_factory):
            return PROVIDER
    """))
    pytester.makepyfile("import pytest\n@pytest.mark.kpr\ndef test_x(kpr_facts):\n    pass\n")
    result = pytester.runpytest("-m", "kpr", "-p", "no:cacheprovider", "--kpr-artifacts=artifacts")
    assert result.ret == 3
    result.stdout.fnmatch_lines(["*pytest-kpr: node fake-control-plane runs kernel 5.4.0-150-generic, below Cilium 1.20's floor 5.10*"])


@pytest.mark.parametrize(("attach", "kernel", "ok"), [
    ("tcx", "6.5.13", False), ("tcx", "6.6.0", True), ("tc", "6.5.13", True), ("tc", "6.12.107+deb12-amd64", True),
])
def test_the_attach_mode_against_the_kernel_on_both_sides_of_the_tcx_boundary(pytester: pytest.Pytester, attach: str, kernel: str,
                                                                              ok: bool) -> None:
    """The socket-LB suite against the fake at kernels on both sides of 6.6: tcx reported on a kernel without tcx fails."""
    import shutil

    shutil.copytree(Path(__file__).resolve().parents[2] / "suites", pytester.path / "suites")
    pytester.makeconftest(textwrap.dedent(f"""
        from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider
        PROVIDER = FakeProvider(FakeCluster(FakeConfig(pod_ready_ticks=2, kernel={kernel!r}, attach_mode={attach!r})))
        def pytest_kpr_provider(config, settings, timeouts, kube_factory):
            return PROVIDER
    """))
    result = pytester.runpytest(str(pytester.path / "suites" / "test_socket_lb.py"), "-m", "kpr", "-p", "no:cacheprovider", "--import-mode=importlib",
                                "--kpr-artifacts=artifacts", "-k", "attach_mode_is_possible")
    result.assert_outcomes(**({"passed": 1} if ok else {"failed": 1}))
    if not ok:
        result.stdout.fnmatch_lines([f"*the agent reports tcx, but node fake-control-plane runs kernel {kernel}, which has no tcx*"])
