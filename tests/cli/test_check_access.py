"""``kpr check-access`` and the RBAC manifest it reads (clusters/rbac.yaml): against the fake's API server, which answers
SelfSubjectAccessReviews (FakeConfig.rbac_denied), and against what a whole fake run asks of the API."""

from __future__ import annotations

import argparse
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pytest_kpr.cli.access import run
from pytest_kpr.cluster.access import SCOPES, Need, load_needs, needed
from pytest_kpr.k8s.api import API_VERSIONS
from pytest_kpr.testing import FakeCluster, FakeConfig

REPO = Path(__file__).resolve().parents[2]
RBAC = REPO / "clusters" / "rbac.yaml"


def _args(**kw: Any) -> argparse.Namespace:
    base = {"kubeconfig": None, "context": None, "namespace": None, "cilium_namespace": "kube-system", "disruptive": False, "rbac": RBAC}
    return argparse.Namespace(**{**base, **kw})


def _check(fake: FakeCluster, capsys: pytest.CaptureFixture[str], **kw: Any) -> tuple[int, str, str]:
    rc = run(_args(**kw), kube_factory=lambda a: fake)
    out, err = capsys.readouterr()
    return rc, out, err


def test_everything_allowed_is_exit_0_and_creates_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeCluster(FakeConfig())
    before = {k: dict(v) for k, v in fake._objects.items()}
    rc, out, err = _check(fake, capsys)
    assert rc == 0, err
    needs = [n for n in load_needs(RBAC) if n.when == "always" and needed(n, None)]
    assert len(out.splitlines()) == len(needs) and all(line.startswith("allowed") for line in out.splitlines())
    assert err == (f"kpr check-access: all {len(needs)} allowed (the run creates its namespaces and binds pytest-kpr-workloads to "
                   "itself in each)\n")
    assert {k: dict(v) for k, v in fake._objects.items()} == before  # a review is answered, never stored
    assert any("get     /version" in line and "(cluster)" in line for line in out.splitlines())


@pytest.mark.parametrize(("denied", "kw", "first"), [
    ("create pods/exec in kube-system", {}, "create pods/exec in kube-system (pytest-kpr-agents in the RBAC manifest)"),
    ("create namespaces", {}, "create namespaces (pytest-kpr-namespaces in the RBAC manifest)"),
    ("bind clusterroles", {}, "bind clusterroles.rbac.authorization.k8s.io pytest-kpr-workloads (pytest-kpr-namespaces in the RBAC manifest)"),
    ("get /version", {}, "get /version (pytest-kpr-cluster in the RBAC manifest)"),
    ("create services in team-a", {"namespace": "team-a"}, "create services in team-a (pytest-kpr-workloads in the RBAC manifest)"),
    ("create clusterrolebindings", {"disruptive": True}, "create clusterrolebindings.rbac.authorization.k8s.io (pytest-kpr-disruptive-cluster*"),
])
def test_a_denied_verb_is_exit_1_naming_it(capsys: pytest.CaptureFixture[str], denied: str, kw: dict, first: str) -> None:
    rc, out, err = _check(FakeCluster(FakeConfig(rbac_denied=(denied,))), capsys, **kw)
    assert rc == 1
    assert any(line.startswith("DENIED") for line in out.splitlines())
    assert err.startswith("kpr check-access: 1 of ") and " denied, first: " in err
    import fnmatch

    assert fnmatch.fnmatch(err.split(" denied, first: ", 1)[1].strip(), first), err


def test_the_disruptive_needs_are_asked_only_when_asked_for(capsys: pytest.CaptureFixture[str]) -> None:
    _, plain, _ = _check(FakeCluster(FakeConfig()), capsys)
    _, more, _ = _check(FakeCluster(FakeConfig()), capsys, disruptive=True)
    assert "clusterrolebindings" not in plain and "clusterrolebindings" in more


def test_a_named_namespace_is_asked_there_and_a_run_that_creates_its_own_asks_to_bind(capsys: pytest.CaptureFixture[str]) -> None:
    """The two modes of clusters/rbac.yaml: with --namespace NAME the workloads' rules are asked in NAME and nothing on
    namespaces but get and list; a run that creates its namespaces is asked for namespace create and delete and for bind
    on pytest-kpr-workloads (it binds that role to itself in each), never for the workloads' rules anywhere."""
    _, named, named_err = _check(FakeCluster(FakeConfig()), capsys, namespace="team-a")
    _, prefix, _ = _check(FakeCluster(FakeConfig()), capsys, namespace="ci-")
    assert any("services" in ln and "team-a" in ln for ln in named.splitlines())
    assert not any("bind" in ln or "create  namespaces" in ln or "rolebindings" in ln for ln in named.splitlines())
    assert named_err.endswith("(the run works in team-a only)\n")
    assert not any(ln.split()[-1] == "pytest-kpr-workloads" for ln in prefix.splitlines())
    assert any("bind" in ln and "pytest-kpr-workloads" in ln and ln.split()[-1] == "pytest-kpr-namespaces" for ln in prefix.splitlines())
    assert any("create  rolebindings" in ln for ln in prefix.splitlines())


@pytest.mark.parametrize(("text", "words"), [
    ("kind: ClusterRole\nmetadata: {name: x}\nrules: [{apiGroups: [''], resources: [pods], verbs: [get]}]\n", "needs the annotations"),
    ("a: [\n", "not valid YAML"),
    ("kind: ConfigMap\n", "has no Role or ClusterRole rules"),
])
def test_a_bad_manifest_is_one_line_exit_2(tmp_path: Path, text: str, words: str) -> None:
    import subprocess
    import sys

    bad = tmp_path / "rbac.yaml"
    bad.write_text(text)
    p = subprocess.run([sys.executable, "-m", "pytest_kpr", "check-access", "--rbac", str(bad), "--kubeconfig", str(bad)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1 and words in p.stderr, p.stderr


# -- the manifest covers what a run asks ----------------------------------------------------------------------------------

#: kind -> resource (plural), for the kinds the plugin touches (k8s.api.API_VERSIONS)
PLURALS = {"Namespace": "namespaces", "Node": "nodes", "Pod": "pods", "Service": "services", "ConfigMap": "configmaps",
           "Deployment": "deployments", "DaemonSet": "daemonsets", "EndpointSlice": "endpointslices", "CiliumEndpoint": "ciliumendpoints",
           "CiliumNode": "ciliumnodes", "CiliumLoadBalancerIPPool": "ciliumloadbalancerippools", "ServiceAccount": "serviceaccounts",
           "Secret": "secrets", "ClusterRoleBinding": "clusterrolebindings", "Event": "events", "RoleBinding": "rolebindings",
           "SelfSubjectAccessReview": "selfsubjectaccessreviews", "SelfSubjectReview": "selfsubjectreviews",
           "CiliumLocalRedirectPolicy": "ciliumlocalredirectpolicies"}

CALLS_CONFTEST = """
import json, pathlib
import pytest
from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider
FAKE = FakeCluster(FakeConfig())
PROVIDER = FakeProvider(FAKE)
def pytest_kpr_provider(config, settings, timeouts, kube_factory):
    return PROVIDER
@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    pathlib.Path("calls.json").write_text(json.dumps([list(c[:4]) for c in FAKE.calls]))
"""


def _asks(call: list[str]) -> tuple[str, str, str, str] | None:
    """(verb, group, resource, namespace) an API call of the fake's log asks; None for what is not an API call (a node
    command) or a review (which needs no permission)."""
    verb = call[0]
    if verb == "version":
        return ("get", "", "/version", "")
    if verb == "exec":
        return ("create", "", "pods/exec", call[1])
    if verb == "logs":
        return ("get", "", "pods/log", call[1])
    if verb in ("create", "get", "list", "patch", "delete") and len(call) >= 3 and call[1] in PLURALS:
        if call[1] == "SelfSubjectAccessReview":
            return None
        group = API_VERSIONS[call[1]].rpartition("/")[0]
        return (verb, group, PLURALS[call[1]], call[2])
    return None


def _covered(ask: tuple[str, str, str, str], needs: list[Need], run_namespaces: set[str]) -> bool:
    verb, group, resource, ns = ask
    for n in needs:
        if n.verb != verb or (n.url or n.resource) != resource or (not n.url and n.group != group) or n.name:
            continue
        if n.scope == "cluster" or (n.scope == "cilium-namespace" and ns == "kube-system") or (n.scope == "run-namespaces" and ns in run_namespaces):
            return True
    return False


def test_every_api_call_of_a_whole_fake_run_is_in_the_manifest(pytester: pytest.Pytester) -> None:
    """What the suites ask of the API (the fake logs every call) is what the manifest grants, each in its scope: a new
    call the manifest misses fails here, naming it."""
    import json

    shutil.copytree(REPO / "suites", pytester.path / "suites")
    pytester.makeconftest(textwrap.dedent(CALLS_CONFTEST))
    result = pytester.runpytest("suites", "-m", "kpr", "--kpr-provider=fake", "--kpr-artifacts=art", "-p", "no:cacheprovider",
                                "--import-mode=importlib", "--kpr-allow-disruptive")
    assert result.ret in (0, 1), result.stdout.str()[-2000:]
    calls = json.loads((pytester.path / "calls.json").read_text())
    run_namespaces = {c[3] for c in calls if c[:2] == ["create", "Namespace"]}
    asks = {a for c in calls if (a := _asks(c)) is not None}
    needs = load_needs(RBAC)
    missing = sorted(a for a in asks if not _covered(a, needs, run_namespaces))
    assert not missing, f"API calls of a fake run that clusters/rbac.yaml does not grant: {missing}"
    assert {n.scope for n in needs} == set(SCOPES)


@pytest.mark.parametrize(("namespace", "rc"), [("team-a", 0), ("ci-", 1), (None, 1)])
def test_a_named_namespace_needs_no_namespace_create_or_delete(capsys: pytest.CaptureFixture[str], namespace: str | None, rc: int) -> None:
    """The narrow set-up (pytest-kpr-workloads bound in the one namespace the run is given, no rights on namespaces but
    get and list) passes; a run that creates its namespaces still needs both, and says so."""
    fake = FakeCluster(FakeConfig(rbac_denied=("create namespaces", "delete namespaces")))
    got, out, err = _check(fake, capsys, namespace=namespace)
    assert got == rc, err
    asked = {(ln.split()[1], ln.split()[2]) for ln in out.splitlines()}
    assert (("create", "namespaces") in asked) is (rc == 1) and (("delete", "namespaces") in asked) is (rc == 1)
    assert ("get", "namespaces") in asked
    if rc:
        assert err.startswith("kpr check-access: 2 of ") and "first: create namespaces (pytest-kpr-namespaces" in err


def test_an_api_server_that_never_answers_is_one_line_within_the_timeout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The real client's first question is GET /version with --timeout (connect and read): its InfraError is one line,
    exit 1 -- before, check-access waited for ever on a server that accepted the connection and never answered."""
    from pytest_kpr.cli import access
    from pytest_kpr.cluster import existing
    from pytest_kpr.core.errors import InfraError
    from pytest_kpr.k8s import client

    asked: list[float] = []

    class Silent:
        def __init__(self, path: Path, context: str | None) -> None:
            pass

        def server_version(self, timeout: float) -> str:
            asked.append(timeout)
            raise InfraError("API server https://10.0.0.1:6443 unreachable: read timed out")

    kubeconfig = tmp_path / "config"
    kubeconfig.write_text("apiVersion: v1\n")
    monkeypatch.setattr(client, "RealKube", Silent)
    monkeypatch.setattr(existing, "kubeconfig_problem", lambda path, context: None)
    rc = access.run(_args(kubeconfig=kubeconfig, timeout=2.5))
    out, err = capsys.readouterr()
    assert rc == 1 and asked == [2.5] and out == ""
    assert err == ("kpr check-access: the API server did not answer GET /version within 2.5 s (API server https://10.0.0.1:6443 "
                   "unreachable: read timed out)\n")


# -- a whole run as a user who holds exactly the manifest's permissions ----------------------------------------------------

RBAC_CONFTEST = """
import json, pathlib
import pytest
import yaml
from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider
from pytest_kpr.testing.rbac import User

FAKE = FakeCluster(FakeConfig({config}))
for f in {files!r}:
    for doc in yaml.safe_load_all(pathlib.Path(f).read_text()):
        if doc:
            FAKE.create(doc)
FAKE.rbac.act_as(User("ci-bot", ("pytest-kpr",)))  # from here on, every request of the run is authorized by RBAC
PROVIDER = FakeProvider(FAKE, created=False)

def pytest_kpr_provider(config, settings, timeouts, kube_factory):
    return PROVIDER

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    FAKE.rbac.act_as(None)
    pathlib.Path("bindings.json").write_text(json.dumps(sorted(
        [k, ns or "", n, o["roleRef"]["name"]] for k in ("RoleBinding", "ClusterRoleBinding")
        for (ns, n), o in FAKE._objects.get(k, {{}}).items())))
    pathlib.Path("calls.json").write_text(json.dumps([list(c[:4]) for c in FAKE.calls]))
"""

CLUSTERS = REPO / "clusters"


def _run_as_user(pytester: pytest.Pytester, files: list[Path], *args: str, config: str = "") -> tuple[pytest.RunResult, list[list[str]], list[list[str]]]:
    import json

    shutil.copytree(REPO / "suites", pytester.path / "suites")
    pytester.makeconftest(RBAC_CONFTEST.format(files=[str(f) for f in files], config=config))
    result = pytester.runpytest("suites", "-m", "kpr", "--kpr-artifacts=art", "-p", "no:cacheprovider", "--import-mode=importlib",
                                "--kpr-allow-disruptive", *args)
    return (result, json.loads((pytester.path / "bindings.json").read_text()),
            json.loads((pytester.path / "calls.json").read_text()))


@pytest.mark.parametrize("mode", ["creates-namespaces", "named-namespace"])
def test_every_suite_runs_as_a_user_with_exactly_the_manifests_permissions(pytester: pytest.Pytester, mode: str) -> None:
    """The fake authorizes every request by RBAC (pytest_kpr.testing.rbac) for a user in the group the manifest binds:
    every suite, the disruptive one included, passes in both modes, nothing is refused, and no binding grants the
    workloads' rules beyond the run's namespaces. Where the run creates its namespaces it bound pytest-kpr-workloads
    (and pytest-kpr-disruptive) to itself in each, and nowhere else; in a named namespace it bound nothing."""
    files = [CLUSTERS / "rbac.yaml", CLUSTERS / "rbac-disruptive.yaml", CLUSTERS / f"rbac-{mode}.yaml"]
    args = ("--kpr-namespace=kpr-ci",) if mode == "named-namespace" else ()
    result, bindings, calls = _run_as_user(pytester, files, *args)
    out = result.stdout.str()
    assert result.ret == 0 and "Forbidden" not in out and "403" not in out, out[-3000:]
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 80 and not outcomes.get("failed") and not outcomes.get("error"), outcomes
    made = {c[3] for c in calls if c[:2] == ["create", "Namespace"]}
    own = sorted(b for b in bindings if b[0] == "RoleBinding" and b[1] != "kube-system" and b[1] != "kpr-ci")
    assert not any(b[0] == "ClusterRoleBinding" and b[3] in ("pytest-kpr-workloads", "pytest-kpr-disruptive") for b in bindings)
    if mode == "creates-namespaces":
        bound = {c[2] for c in calls if c[:2] == ["create", "RoleBinding"]} - {"kube-system"}  # the manifest's own, applied first
        assert made and bound == made, (made - bound, bound - made)
        assert {(b[3]) for b in own} == {"pytest-kpr-workloads", "pytest-kpr-disruptive"} or not own  # gone with their namespaces
    else:
        assert made == {"kpr-ci"}  # the admin's, applied with the manifest: the run made none
        assert [c[2] for c in calls if c[:2] == ["create", "RoleBinding"]] == ["kube-system", "kpr-ci", "kpr-ci"]  # the manifest's


def test_a_run_that_may_not_bind_the_workloads_role_stops_with_one_line_and_exit_3(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """The creates-namespaces mode without its `bind` (the namespaces' ClusterRoleBinding applied, the bind rule taken
    out): the run stops at its first namespace, exit 3, with one line naming the role and the manifest -- not a run of
    failures the gate would read as a regression (core.errors.SetupRefused)."""
    text = (CLUSTERS / "rbac.yaml").read_text().replace("    resourceNames: [pytest-kpr-workloads]\n    verbs: [bind]",
                                                         "    resourceNames: [pytest-kpr-workloads]\n    verbs: [get]")
    assert "verbs: [get]" in text
    (tmp_path / "rbac.yaml").write_text(text)
    result, bindings, _ = _run_as_user(pytester, [tmp_path / "rbac.yaml", CLUSTERS / "rbac-creates-namespaces.yaml"])
    out = result.stdout.str()
    assert result.ret == 3, out[-3000:]
    stopped = [ln for ln in out.splitlines() if ln.startswith("pytest-kpr: stopped: ")]
    assert len(stopped) == 1 and "may not create pods there, nor bind pytest-kpr-workloads there (clusters/rbac.yaml" in stopped[0]
    assert result.parseoutcomes().get("errors", 0) == 1 and not result.parseoutcomes().get("failed")
    assert not [b for b in bindings if b[0] == "RoleBinding" and b[1] != "kube-system"]


def test_a_permission_the_manifest_lacks_stops_the_run_with_exit_3(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A 403 anywhere in a suite (here: the workloads' role without pods/log, which the suites read) is the same set-up
    problem: one line naming what was refused, exit 3, the rest of the run not started."""
    text = (CLUSTERS / "rbac.yaml").read_text().replace("    resources: [pods/log]\n    verbs: [get]", "    resources: [pods/log]\n    verbs: [list]")
    assert "resources: [pods/log]\n    verbs: [list]" in text
    (tmp_path / "rbac.yaml").write_text(text)
    result, _, _ = _run_as_user(pytester, [tmp_path / "rbac.yaml", CLUSTERS / "rbac-creates-namespaces.yaml", CLUSTERS / "rbac-disruptive.yaml"])
    out = result.stdout.str()
    assert result.ret == 3, out[-3000:]
    stopped = [ln for ln in out.splitlines() if ln.startswith("pytest-kpr: stopped: ")]
    assert len(stopped) == 1 and 'user "ci-bot" cannot get pods/log' in stopped[0], stopped
    assert result.parseoutcomes().get("failed", 0) + result.parseoutcomes().get("errors", 0) == 1


def _request_of(call: list[str]) -> Any:
    """The authorization request an API call of the fake's log makes (None: a node command, a review, a who-am-I)."""
    from pytest_kpr.testing.rbac import Request, plural

    verb = call[0]
    if verb == "version":
        return Request("get", url="/version")
    if verb in ("exec", "logs"):
        return Request("create" if verb == "exec" else "get", "", "pods/exec" if verb == "exec" else "pods/log", call[1], call[2])
    if verb in ("create", "get", "list", "patch", "delete") and len(call) >= 3 and call[1] in API_VERSIONS:
        if call[1] == "SelfSubjectAccessReview":
            return None
        return Request(verb, API_VERSIONS[call[1]].rpartition("/")[0], plural(call[1]), call[2], call[3] if verb != "list" else "")
    return None


#: rules no request of a run makes, and why they are there: `kpr cleanup` lists what a killed run left; exec is a GET
#: that upgrades to a WebSocket, authorized as get by API servers before the WebSocket exec authorization (the fake
#: authorizes exec as create, as newer servers do)
NOT_A_RUNS = {("list", "namespaces"), ("list", "ciliumloadbalancerippools"), ("list", "clusterrolebindings"), ("get", "pods/exec")}


def test_every_rule_of_the_manifest_is_used_by_a_whole_run(pytester: pytest.Pytester) -> None:
    """Least privilege, checked the other way round: every rule of clusters/rbac.yaml is needed by some request of a whole
    run (every suite, the disruptive one included) in one mode or the other, or, for `bind`, by a RoleBinding the run
    made -- a rule no request needs fails here, naming it, and goes."""
    import json

    from pytest_kpr.testing.rbac import Request, rule_covers

    used: set[tuple[str, str, str, str, str, str]] = set()
    needs = load_needs(RBAC)
    pull = pytester.path / "pull-secret.yaml"  # the user's own: the pull Secret and the Role that lets the run read it
    pull.write_text(textwrap.dedent("""
        {apiVersion: v1, kind: Namespace, metadata: {name: creds}}
        ---
        {apiVersion: v1, kind: Secret, type: kubernetes.io/dockerconfigjson, metadata: {name: regcred, namespace: creds}, data: {}}
        ---
        {apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: read-regcred, namespace: creds},
         rules: [{apiGroups: [""], resources: [secrets], resourceNames: [regcred], verbs: [get]}]}
        ---
        {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: read-regcred, namespace: creds},
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: read-regcred},
         subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: pytest-kpr}]}
    """))
    for mode, args in (("creates-namespaces", ()), ("named-namespace", ("--kpr-namespace=kpr-ci",))):
        files = [CLUSTERS / "rbac.yaml", CLUSTERS / "rbac-disruptive.yaml", CLUSTERS / f"rbac-{mode}.yaml", pull]
        result, bindings, calls = _run_as_user(pytester, files, *args, "--kpr-image-pull-secret=creds/regcred",
                                               config="local_redirect_policy=True")
        assert result.ret == 0, result.stdout.str()[-2000:]
        shutil.rmtree(pytester.path / "suites")  # (the next mode's run copies them again)
        reqs = [r for c in calls if (r := _request_of(c)) is not None]
        bound = {b[3] for b in bindings if b[0] == "RoleBinding"}
        for n in needs:
            key = (n.role, n.verb, n.group, n.resource, n.name, n.url)
            if n.verb == "bind":  # an escalation check on a binding the run created (kube-proxy's: a ClusterRoleBinding)
                if n.name in bound or (n.name == "system:node-proxier" and any(c[:2] == ["create", "ClusterRoleBinding"] for c in calls)):
                    used.add(key)
                continue
            rule = {"verbs": [n.verb], "apiGroups": [n.group], "resources": [n.resource], **({"resourceNames": [n.name]} if n.name else {}),
                    **({"nonResourceURLs": [n.url]} if n.url else {})}
            if any(rule_covers(rule, Request(r.verb, r.group, r.resource, r.namespace, r.name if n.name else "", r.url)) for r in reqs):
                used.add(key)
    unused = sorted(f"{k[0]}: {k[1]} {k[5] or k[3] + ('.' + k[2] if k[2] else '') + (' ' + k[4] if k[4] else '')}"
                    for n in needs if (k := (n.role, n.verb, n.group, n.resource, n.name, n.url)) not in used
                    and (n.verb, n.resource) not in NOT_A_RUNS)
    assert unused == [], "rules of clusters/rbac.yaml no request of a whole run needs: " + json.dumps(unused, indent=1)
