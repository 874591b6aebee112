"""Settings resolution and version comparison, without pytest in the loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kpr.plugin.markers import parse_requires
from pytest_kpr.run.settings import IfUnavailable, ProviderName, SettingsError, resolve
from pytest_kpr.core.versions import Version, parse_min_version

REPO = Path(__file__).resolve().parents[2]


def _resolve(cli: dict | None = None, ini: dict | None = None):
    ini = ini or {}
    return resolve({f"kpr_{k}": v for k, v in (cli or {}).items()}, lambda key: ini.get(key, ""), REPO)


def test_defaults_come_from_the_versions_file() -> None:
    s = _resolve()
    assert s.provider is ProviderName.KIND
    assert s.cilium_version == "1.20.5" and s.sources["cilium_version"] == "pins"
    assert s.node_image.startswith("kindest/node:v1.34.0@sha256:")
    assert s.kind_config == REPO / "clusters/kind/kpr.yaml"
    assert s.artifacts == REPO / "kpr-artifacts"
    assert s.if_unavailable is IfUnavailable.FAIL


def test_cli_beats_ini_beats_default() -> None:
    s = _resolve({"cluster_name": "a"}, {"kpr_cluster_name": "b", "kpr_timeout_scale": "2.5"})
    assert (s.cluster_name, s.timeout_scale) == ("a", 2.5)
    assert s.sources["cluster_name"] == "cli" and s.sources["timeout_scale"] == "ini"


def test_settings_are_frozen() -> None:
    s = _resolve()
    with pytest.raises(AttributeError):
        s.provider = ProviderName.EXISTING  # type: ignore[misc]


def test_per_minor_values_file_lookup() -> None:
    s = _resolve()
    assert s.provider_config().values_file("1.19") == REPO / "clusters/cilium/values-1.19.yaml"
    assert s.provider_config().values_file("1.15") is None


@pytest.mark.parametrize(("older", "newer"), [("1.17.6", "1.18.0"), ("1.18.0-pre.3", "1.18.0"), ("1.9", "1.10"), ("v1.16.19", "1.17")])
def test_versions_compare_like_a_user_reads_them(older: str, newer: str) -> None:
    assert Version.parse(older) < Version.parse(newer)


def test_minimum_versions_include_prereleases_and_kernel_suffixes() -> None:
    assert Version.parse("1.18.0-pre.3") >= parse_min_version("1.18")
    assert Version.parse("6.1.0-18-amd64", kernel=True) >= parse_min_version("6.1")
    assert Version.parse("5.15.0", kernel=True) < parse_min_version("6.1")


def test_requires_marker_validation() -> None:
    r = parse_requires(("socket-lb",), {"cilium": "1.18", "kernel": "5.10"})
    assert str(r.cilium) == "1.18.0" and r.kernel_text == "5.10"
    with pytest.raises(Exception, match="not a version"):
        parse_requires((), {"cilium": "new"})


@pytest.mark.parametrize(("features", "kind_nodes", "acceleration", "reason"), [
    (frozenset(), True, "Native", "requires feature cross-node-forward, which is disabled on this cluster: on kind with NodePort XDP "
                                  "acceleration (Native) a node forwards such a request with XDP_TX through its veth"),
    (frozenset(), False, "Disabled", "requires feature cross-node-forward, which is disabled on this cluster"),  # nothing more to say
    (frozenset({"cross-node-forward"}), True, "Native", None),
])
def test_a_missing_feature_says_why_when_the_facts_can(features: frozenset, kind_nodes: bool, acceleration: str, reason: str | None) -> None:
    from pytest_kpr.cluster.facts import ClusterFacts, Feature

    facts = ClusterFacts("c", "kind", True, "v1.34.0", "1.20.5", "cilium-dbg", True, "Full", "SNAT", "Random", "tcx", "reject",
                         features=frozenset(Feature(f) for f in features), xdp_acceleration=acceleration, kind_nodes=kind_nodes)
    got = parse_requires(("cross-node-forward",), {}).unmet(facts)
    if reason is None or not kind_nodes:
        assert got == reason
    else:
        assert got is not None and got.startswith(reason), got


@pytest.mark.parametrize(("cli", "ini", "where"), [({"cilium_version": "1.17.18"}, {}, "--kpr-cilium-version"),
                                                   ({}, {"kpr_cilium_version": "1.16.19"}, "ini key kpr_cilium_version")])
def test_a_cilium_version_below_the_oldest_supported_minor_is_refused(cli: dict, ini: dict, where: str) -> None:
    from pytest_kpr.run.settings import SettingsError

    with pytest.raises(SettingsError, match=rf"^{where}: Cilium 1\.1[67]\.\d+ is older than the oldest supported minor 1\.18 "
                                            r"\(clusters/versions.yaml; supported: 1\.18\.14, 1\.19\.8, 1\.20\.5\)$"):
        _resolve(cli, ini)
    assert _resolve({"cilium_version": "1.18.0"}).cilium_version == "1.18.0"


def test_every_bad_value_is_reported_in_one_round() -> None:
    with pytest.raises(SettingsError) as e:
        resolve({"kpr_provider": "minikube", "kpr_nodeport": "99999", "kpr_timeout_scale": "-1"}, lambda k: None, REPO)
    msg = str(e.value)
    assert msg.startswith("--kpr-provider: 'minikube' is not one of: kind, existing, fake, replay; ") and "--kpr-nodeport" in msg and \
        "--kpr-timeout-scale" in msg and "\n" not in msg


@pytest.mark.parametrize(("option", "provider", "ci", "required"), [
    ("auto", ProviderName.KIND, "true", True),  # a CI cell on kind: the runner is on the nodes' network by construction
    ("auto", ProviderName.FAKE, "1", True),
    ("auto", ProviderName.EXISTING, "true", False),  # someone else's cluster: the runner may legitimately be elsewhere
    ("auto", ProviderName.KIND, "", False),  # a laptop
    ("auto", ProviderName.KIND, "false", False),
    ("auto", ProviderName.KIND, None, False),
    ("yes", ProviderName.EXISTING, None, True),
    ("no", ProviderName.KIND, "true", False),
])
def test_the_outside_view_is_required_under_ci_on_a_cluster_the_run_creates(option: str, provider: ProviderName, ci: str | None,
                                                                             required: bool) -> None:
    from pytest_kpr.run.settings import RequireOutside, Settings

    s = Settings(provider=provider, require_outside=RequireOutside(option))
    assert s.outside_required({} if ci is None else {"CI": ci}) is required


@pytest.mark.parametrize(("cli", "profile", "want", "source"), [
    (None, "default", ("IPv4",), "default"),
    (None, "dual-stack", ("IPv4", "IPv6"), "profile"),
    (None, "ipv6", ("IPv6",), "profile"),
    ("ipv6,IPv4", "default", ("IPv4", "IPv6"), "cli"),
    ("IPV6", "dual-stack", ("IPv6",), "cli"),
])
def test_the_families_come_from_the_option_else_the_profile(cli: str | None, profile: str, want: tuple[str, ...], source: str) -> None:
    from pytest_kpr.run.settings import resolve

    s = resolve({"kpr_ip_families": cli, "kpr_profile": profile}, lambda key: None, REPO)
    assert (s.ip_families, s.sources["ip_families"]) == (want, source)


@pytest.mark.parametrize(("families", "vip", "block", "want"), [
    (None, None, None, ("198.18.10.80", "198.18.20.10-198.18.20.20")),
    ("IPv4,IPv6", None, None, ("198.18.10.80", "198.18.20.10-198.18.20.20")),
    # an IPv6-only run: the defaults of its family (its pods have no IPv4 address to reach an IPv4 VIP from)
    ("IPv6", None, None, ("2001:2::a:80", "2001:2::14:10-2001:2::14:20")),
    # what the user gave stays, when its family is one the run tests
    ("IPv6", "2001:db8::80", "2001:db8::1:10-2001:db8::1:20", ("2001:db8::80", "2001:db8::1:10-2001:db8::1:20")),
    ("IPv4,IPv6", "2001:db8:0::80", None, ("2001:db8::80", "198.18.20.10-198.18.20.20")),
])
def test_the_shared_vip_defaults_follow_the_runs_families(families: str | None, vip: str | None, block: str | None,
                                                          want: tuple[str, str]) -> None:
    from pytest_kpr.run.settings import resolve

    s = resolve({"kpr_ip_families": families, "kpr_shared_vip": vip, "kpr_lbipam_block": block}, lambda key: None, REPO)
    assert (s.shared_vip, s.lbipam_block) == want


def test_a_vip_of_a_family_the_run_does_not_test_is_refused() -> None:
    """An IPv4-only run cannot reach an IPv6 VIP from its pods (nor an IPv6-only run an IPv4 one): refused at start,
    naming the option and the families."""
    from pytest_kpr.run.settings import SettingsError, resolve

    with pytest.raises(SettingsError, match=r"--kpr-shared-vip: 2001:db8::80 is IPv6, a family this run does not test \(IPv4; --kpr-ip-families\)"):
        resolve({"kpr_ip_families": "IPv4", "kpr_shared_vip": "2001:db8:0::80"}, lambda key: None, REPO)


@pytest.mark.parametrize("text", ["IPv5", "", "ipv4,dual"])
def test_an_unknown_family_is_refused_naming_the_choices(text: str) -> None:
    from pytest_kpr.run.settings import SettingsError, resolve

    with pytest.raises(SettingsError, match="--kpr-ip-families.*name IPv4, IPv6 or IPv4,IPv6"):
        resolve({"kpr_ip_families": text}, lambda key: None, REPO)


@pytest.mark.parametrize(("text", "want"), [
    (None, "198.18.21.0,2001:2::15:0"),
    ("10.99.0.0, fd00:99::", "10.99.0.0,fd00:99::"),
    ("10.99.0.0", "not IPV4,IPV6"),
    ("2001:2::15:0,198.18.21.0", "not IPV4,IPV6"),
    ("198.18.21.0,nope", "not IPV4,IPV6"),
    ("255.255.255.0,2001:2::15:0", "leaves no room"),
    ("224.0.0.0,2001:2::15:0", "which is"),
])
def test_the_outside_vip_base_is_two_addresses_with_room_for_three_blocks(text: str | None, want: str) -> None:
    """--kpr-outside-vip-base moves the north-south, source-range and protocol suites' pools together
    (scenarios.vips.suite_blocks); a value that is not IPV4,IPV6 or whose blocks would run out of the family or into an
    address LB-IPAM cannot hand out is refused in one line."""
    from pytest_kpr.scenarios.vips import suite_blocks

    cli = {"outside_vip_base": text} if text is not None else {}
    if "," in want and "not" not in want:
        s = _resolve(cli)
        assert s.outside_vip_base == want
        assert [suite_blocks(want, k).block("IPv4")[0] for k in range(3)] == (
            ["198.18.21.10", "198.18.22.10", "198.18.23.10"] if text is None else ["10.99.0.10", "10.99.1.10", "10.99.2.10"])
    else:
        with pytest.raises(SettingsError, match=f"--kpr-outside-vip-base.*{want}"):
            _resolve(cli)
