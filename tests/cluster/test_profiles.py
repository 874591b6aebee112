"""Cluster profiles (--kpr-profile): Helm values overlays under clusters/profiles/, validated at start, recorded."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml

from pytest_kpr.cluster.cilium import helm_values_files
from pytest_kpr.core.errors import SettingsError
from pytest_kpr.run.settings import resolve

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "clusters" / "profiles"


def test_the_profiles_the_readme_names_exist_and_each_says_where_its_values_come_from() -> None:
    assert sorted(p.stem for p in PROFILES.glob("*.yaml")) == ["default", "drop", "dsr", "dual-stack", "hostns-only", "ipv6", "lrp", "maglev", "netkit", "small-maps", "topology", "xdp"]
    for p in PROFILES.glob("*.yaml"):
        text = p.read_text()
        assert text.startswith("#") and isinstance(yaml.safe_load(text), dict), p.name


@pytest.mark.parametrize(("profile", "key", "value"), [
    ("hostns-only", ("socketLB", "hostNamespaceOnly"), True),
    ("drop", ("serviceNoBackendResponse",), "drop"),
    ("maglev", ("loadBalancer", "algorithm"), "maglev"),
    ("dsr", ("loadBalancer", "mode"), "dsr"),
    ("small-maps", ("bpf", "lbMapMax"), 512),
    ("dual-stack", ("ipv6", "enabled"), True),
    ("ipv6", ("ipv4", "enabled"), False),
    ("netkit", ("bpf", "datapathMode"), "netkit"),
    ("netkit", ("bpf", "masquerade"), True),
    ("xdp", ("loadBalancer", "acceleration"), "native"),
    ("xdp", ("routingMode",), "native"),
    ("topology", ("loadBalancer", "serviceTopology"), True),
    ("dsr", ("bpf", "lbModeAnnotation"), True),
    ("lrp", ("localRedirectPolicy",), True),
    ("lrp", ("localRedirectPolicies", "enabled"), True),
])
def test_a_profile_is_applied_after_the_version_values_and_before_the_users(profile: str, key: tuple[str, ...], value: object,
                                                                             tmp_path: Path) -> None:
    extra = tmp_path / "mine.yaml"
    extra.write_text("operator:\n  replicas: 2\n")
    s = resolve({"kpr_profile": profile, "kpr_helm_values": [str(extra)]}, lambda k: None, REPO)
    files = helm_values_files(s.provider_config(), "1.20.2")
    assert files == [REPO / "clusters/cilium/values-kpr.yaml", REPO / "clusters/cilium/values-1.20.yaml", PROFILES / f"{profile}.yaml", extra]
    merged: dict = {}
    for f in files:
        for k, v in (yaml.safe_load(f.read_text()) or {}).items():
            merged[k] = {**merged[k], **v} if isinstance(v, dict) and isinstance(merged.get(k), dict) else v
    cur: object = merged
    for part in key:
        cur = cur[part]  # type: ignore[index]
    assert cur == value
    if profile == "small-maps":
        assert merged["bpf"]["disableExternalIPMitigation"] is True, "the overlay adds to values-kpr.yaml's bpf, it does not replace it"


def test_an_unknown_profile_is_a_usage_error_listing_the_profiles() -> None:
    with pytest.raises(SettingsError, match=r"--kpr-profile: no profile 'maglve' \(known: default, drop, dsr, dual-stack, hostns-only, ipv6, lrp, maglev, netkit, small-maps, topology, xdp;"):
        resolve({"kpr_profile": "maglve"}, lambda k: None, REPO)


def test_the_profile_is_recorded_in_cluster_json_and_the_header(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(textwrap.dedent("""
        from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider
        PROVIDER = FakeProvider(FakeCluster(FakeConfig(lb_algorithm="Maglev")))  # what the maglev profile sets
        def pytest_kpr_provider(config, settings, timeouts, kube_factory):
            return PROVIDER
    """))
    pytester.makepyfile("import pytest\n@pytest.mark.kpr\ndef test_x(kpr_facts):\n    pass\n")
    result = pytester.runpytest("-m", "kpr", "-p", "no:cacheprovider", "--kpr-artifacts=artifacts", f"--kpr-clusters-dir={REPO / 'clusters'}",
                                "--kpr-profile=maglev")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["kpr: provider kind*, profile maglev, artifacts *"])
    assert json.loads((pytester.path / "artifacts" / "fake" / "cluster.json").read_text())["profile"] == "maglev"


@pytest.mark.parametrize("profile", ["default", "hostns-only", "drop", "maglev", "dsr", "small-maps", "dual-stack", "ipv6", "netkit", "xdp", "topology", "lrp"])
def test_every_profile_promises_what_its_values_set_and_the_dry_run_shows_it(pytester: pytest.Pytester, profile: str) -> None:
    """The promises are read back after provisioning; the fake, configured by the profile, shows them (no refusal)."""
    from pytest_kpr.judge.profiles import PROFILE_PROMISES
    from pytest_kpr.testing import PROFILE_CONFIG

    assert set(PROFILE_PROMISES) == set(PROFILE_CONFIG) == {p.stem for p in PROFILES.glob("*.yaml")}
    pytester.makepyfile("import pytest\n\n@pytest.mark.kpr\ndef test_x(kpr_facts):\n    pass\n")
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=fake", f"--kpr-profile={profile}", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_profile_that_did_not_take_effect_stops_the_run_before_the_suites(pytester: pytest.Pytester) -> None:
    """The cluster runs the default configuration although the drop profile was asked for (a mistyped Helm key is
    ignored by the chart): exit 3, one line naming the setting, no suite runs."""
    from helpers import use_fake_cluster

    use_fake_cluster(pytester, "pod_ready_ticks=0")
    pytester.makepyfile("import pytest\n\n@pytest.mark.kpr\ndef test_x(kpr_facts):\n    pass\n")
    result = pytester.runpytest("-m", "kpr", "--kpr-profile=drop", "-p", "no:cacheprovider")
    assert result.ret == 3 and result.parseoutcomes().get("passed") is None
    result.stdout.fnmatch_lines(["*pytest-kpr: the profile 'drop' promises no_backend_response 'drop', but the agents report 'reject' "
                                 "(clusters/profiles/drop.yaml did not take effect)*"])


def test_a_run_that_judged_nothing_exits_5_unless_asked(pytester: pytest.Pytester) -> None:
    from helpers import use_fake_cluster

    use_fake_cluster(pytester, "pod_ready_ticks=0")
    pytester.makepyfile("import pytest\n\n@pytest.mark.kpr\ndef test_x(kpr_facts):\n    pytest.skip('not here')\n")
    result = pytester.runpytest("-m", "kpr", "-p", "no:cacheprovider")
    assert result.ret == 5
    result.stdout.fnmatch_lines(["*pytest-kpr: no property was judged (1 kpr tests skipped, 0 deselected): that is not a pass; exit status 5*"])
    assert pytester.runpytest("-m", "kpr", "--kpr-allow-all-skipped", "-p", "no:cacheprovider").ret == 0


def test_listing_the_tests_is_not_a_run(pytester: pytest.Pytester) -> None:
    """--collect-only follows pytest: exit 0 when tests were collected, 5 when none; "no property was judged" is for runs."""
    from helpers import use_fake_cluster

    use_fake_cluster(pytester, "pod_ready_ticks=0")
    pytester.makepyfile("import pytest\n\n@pytest.mark.kpr\ndef test_x(kpr_facts):\n    pytest.skip('not here')\n")
    result = pytester.runpytest("-m", "kpr", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*test_x*", "1 test collected*"])
    assert "no property was judged" not in result.stdout.str()
    none = pytester.runpytest("-m", "kpr and nothing", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert none.ret == 5 and "no property was judged" not in none.stdout.str()
    assert not (pytester.path / "kpr-artifacts").exists(), "listing the tests wrote nothing"


@pytest.mark.parametrize(("profile", "family"), [("dual-stack", "dual"), ("ipv6", "ipv6"), ("default", None)])
def test_a_profile_with_a_kind_config_of_its_name_creates_the_cluster_from_it(profile: str, family: str | None) -> None:
    """dual-stack and ipv6 change the cluster itself: kind's ipFamily, with kind's IPv6 subnets; --kpr-kind-config still wins."""
    s = resolve({"kpr_profile": profile}, lambda k: None, REPO)
    cfg = yaml.safe_load(s.kind_config.read_text())
    assert s.kind_config.name == (f"{profile}.yaml" if family else "kpr.yaml")
    assert cfg["networking"].get("ipFamily") == family
    assert cfg["networking"]["disableDefaultCNI"] is True and cfg["networking"]["kubeProxyMode"] == "none"
    if family:
        assert "fd00:10:244::/56" in cfg["networking"]["podSubnet"] and "fd00:10:96::/112" in cfg["networking"]["serviceSubnet"]
    mine = resolve({"kpr_profile": profile, "kpr_kind_config": str(REPO / "clusters/kind/kpr.yaml")}, lambda k: None, REPO)
    assert mine.kind_config == REPO / "clusters/kind/kpr.yaml"
