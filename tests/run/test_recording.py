"""The run's recording (pytest_kpr.run.recording): each request through the seams with its answer, bounded and redacted.

No secret reaches it: a Secret's data, a kubeconfig's client key, certificate and token (as an object and as text), a
PEM private key, a bearer header and a JWT are planted in every seam's answers and arguments, and none is in the bytes
written. A fake run writes one, its requests charged to the tests that made them."""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass
from typing import Any

import pytest

import planted
from pytest_kpr.k8s.api import ExecResult
from pytest_kpr.run.recording import (REDACTED, Recorder, RecordingKube, RecordingNodes, RecordingOutside, read_recording, redact,
                                      redact_text)

KEY_PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAsecretsecretsecret\n-----END RSA PRIVATE KEY-----"
JWT = "eyJhbGciOiJSUzI1NiIsImtpZCI6IkpXVCJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6a3ViZS1zeXN0ZW0ifQ.c2lnbmF0dXJlc2VjcmV0"
CLIENT_KEY_DATA = base64.b64encode(KEY_PEM.encode()).decode()
KUBECONFIG_TEXT = (f"apiVersion: v1\nusers:\n- name: kind\n  user:\n    client-certificate-data: Q0VSVFNFQ1JFVA==\n"
                   f"    client-key-data: {CLIENT_KEY_DATA}\n    token: plain-token-secret-1234\n")
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "regcred", "namespace": "default"},
          "type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "ZG9ja2VyLWNvbmZpZy1zZWNyZXQ="},
          "stringData": {"password": "hunter2-planted"}}
#: every planted value: none may be in a recording
PLANTED = ["ZG9ja2VyLWNvbmZpZy1zZWNyZXQ=", "hunter2-planted", CLIENT_KEY_DATA, "Q0VSVFNFQ1JFVA==", "plain-token-secret-1234",
           "MIIEpAIBAAKCAQEAsecretsecretsecret", JWT, "bearer-secret-abcdef123"]


@pytest.mark.parametrize(("value", "want"), [
    (SECRET, {**SECRET, "data": {".dockerconfigjson": REDACTED}, "stringData": {"password": REDACTED}}),
    ({"kind": "SecretList", "items": [SECRET]}, {"kind": "SecretList", "items": [{**SECRET, "data": {".dockerconfigjson": REDACTED},
                                                                                   "stringData": {"password": REDACTED}}]}),
    ({"users": [{"user": {"client-key-data": "x", "client-certificate-data": "y", "token": "z"}}]},
     {"users": [{"user": {"client-key-data": REDACTED, "client-certificate-data": REDACTED, "token": REDACTED}}]}),
    ({"headers": {"Authorization": "Bearer abc"}}, {"headers": {"Authorization": REDACTED}}),
    ({"kind": "ConfigMap", "data": {"key": "value"}}, {"kind": "ConfigMap", "data": {"key": REDACTED}}),  # keys, never values
    ({"token": ""}, {"token": ""}),  # nothing to hide
    (["a", {"password": "p"}], ["a", {"password": REDACTED}]),
])
def test_redact_objects(value: Any, want: Any) -> None:
    assert redact(value) == want


@pytest.mark.parametrize(("text", "kept", "gone"), [
    (KEY_PEM, "", "MIIEpA"),
    (f"before\n{KEY_PEM}\nafter", "before", "MIIEpA"),
    (f"token {JWT} end", "token ", "eyJhbGci"),
    ("Authorization: Bearer bearer-secret-abcdef123", "Authorization: <redacted>", "bearer-secret"),
    (KUBECONFIG_TEXT, "client-key-data: <redacted>", CLIENT_KEY_DATA),
    (KUBECONFIG_TEXT, "    token: <redacted>", "plain-token-secret-1234"),
    ("REASON   DIRECTION   PACKETS\nService backend not found   INGRESS   3", "Service backend not found", "<redacted>"),
])
def test_redact_text(text: str, kept: str, gone: str) -> None:
    out = redact_text(text)
    assert kept in out and gone not in out, out


class PlantedKube:
    """A cluster whose every answer carries a planted secret."""

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return SECRET if kind == "Secret" else None

    def list(self, kind: str, namespace: str | None = None, label_selector: str | None = None) -> list[dict[str, Any]]:
        return [SECRET]

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        return obj

    def exec(self, namespace: str, pod: str, argv: Any, container: str | None = None, timeout: float = 60.0) -> ExecResult:
        return ExecResult(tuple(argv), 0, KUBECONFIG_TEXT, f"warning: {JWT}", f"pod {pod}")

    def logs(self, namespace: str, pod: str, container: str | None = None) -> str:
        return f"GET / Authorization: Bearer bearer-secret-abcdef123\n{JWT}\n"


class PlantedNodes:
    def run(self, node: str, argv: Any, timeout: float = 60.0) -> ExecResult:
        return ExecResult(tuple(argv), 0, KEY_PEM, "", f"node {node}")


@dataclass
class Answer:
    http_code: int
    detail: str


class PlantedOutside:
    def http(self, url: str, timeout: float, source_port: int | None = None) -> Answer:
        return Answer(200, f"server said {JWT}")


def test_no_planted_secret_reaches_the_recording() -> None:
    rec = Recorder(lambda: 1.5, lambda: "suites/test_x.py::test_y")
    kube, nodes, outside = RecordingKube(PlantedKube(), rec), RecordingNodes(PlantedNodes(), rec), RecordingOutside(PlantedOutside(), rec)
    kube.get("Secret", "regcred", "default")
    kube.list("Secret", "default")
    kube.create({**SECRET, "metadata": {"name": "copy", "namespace": "kpr"}})  # a secret in the arguments too
    kube.exec("kube-system", "cilium-x", ["cat", "/root/.kube/config"])
    kube.logs("kpr", "web")
    nodes.run("node-1", ["cat", "/etc/kubernetes/pki/apiserver.key"])
    outside.http("http://198.18.21.10/?token=" + JWT, 3.0)
    raw = gzip.decompress(rec.dump()).decode()
    assert [p for p in PLANTED if p in raw] == []
    entries = read_recording(rec.dump())
    assert [(e["seam"], e["op"]) for e in entries] == [("kube", "get"), ("kube", "list"), ("kube", "create"), ("kube", "exec"),
                                                     ("kube", "logs"), ("node", "run"), ("outside", "http")]
    assert all(e["test"] == "suites/test_x.py::test_y" and e["t"] == 1.5 for e in entries)
    assert entries[3]["answer"]["stdout"].count(REDACTED) == 3 and entries[3]["answer"]["returncode"] == 0
    assert [e["seq"] for e in entries] == list(range(1, 8))


class EveryForm:
    """A cluster, a node and an outside caller that hand back every planted form (tests/planted.py) from every seam: objects
    from get and list, text from exec (stdout and stderr), logs and node commands, a detail from the outside view, and
    an error message from a call that fails."""

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return {"kind": "List", "items": planted.ALL_OBJECTS}

    def list(self, kind: str, namespace: str | None = None, label_selector: str | None = None) -> list[dict[str, Any]]:
        return planted.ALL_OBJECTS

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        return obj

    def patch(self, kind: str, name: str, namespace: str | None, body: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError(f"admission webhook said no: {planted.ALL_TEXT}")

    def exec(self, namespace: str, pod: str, argv: Any, container: str | None = None, timeout: float = 60.0) -> ExecResult:
        return ExecResult(tuple(argv), 0, planted.ALL_TEXT, planted.ALL_TEXT, f"pod {pod}")

    def logs(self, namespace: str, pod: str, container: str | None = None) -> str:
        return planted.ALL_TEXT

    def run(self, node: str, argv: Any, timeout: float = 60.0) -> ExecResult:
        return ExecResult(tuple(argv), 1, planted.ALL_TEXT, planted.ALL_TEXT, f"node {node}")

    def http(self, url: str, timeout: float, source_port: int | None = None) -> Answer:
        return Answer(200, planted.ALL_TEXT)


def test_every_planted_form_in_every_seam_stays_out_of_the_recording() -> None:
    rec = Recorder(lambda: 1.0, lambda: None)
    every = EveryForm()
    kube, nodes, outside = RecordingKube(every, rec), RecordingNodes(every, rec), RecordingOutside(every, rec)
    kube.get("Secret", "regcred", "creds")
    kube.list("Pod", "kpr")
    for obj in planted.ALL_OBJECTS:  # in the arguments too
        kube.create(obj)
    with pytest.raises(RuntimeError):
        kube.patch("Service", "web", "kpr", {"metadata": {"annotations": {"example.com/x": "annotation-opaque-36"}}})
    kube.exec("kube-system", "cilium-x", ["sh", "-c", "env; cat ~/.kube/config"])
    kube.logs("kpr", "web")
    nodes.run("node-1", ["cat", "/etc/kubernetes/admin.conf"])
    outside.http("http://198.18.21.10/?kpr=ab12", 3.0)
    assert planted.found(gzip.decompress(rec.dump())) == []
    assert {e["op"] for e in read_recording(rec.dump())} == {"get", "list", "create", "patch", "exec", "logs", "run", "http"}


def test_a_call_that_raises_is_recorded_with_its_error_and_raised() -> None:
    class Broken:
        def get(self, *a: Any) -> None:
            raise RuntimeError(f"connection refused; token {JWT}")

    rec = Recorder(lambda: 0.0, lambda: None)
    with pytest.raises(RuntimeError):
        RecordingKube(Broken(), rec).get("Pod", "x", "ns")
    (e,) = read_recording(rec.dump())
    assert e["error"]["type"] == "RuntimeError" and JWT not in e["error"]["message"] and "answer" not in e and e["test"] is None


def test_an_answer_over_the_cap_keeps_its_head_and_says_how_long_it_was() -> None:
    rec = Recorder(lambda: 0.0, lambda: None, answer_cap=100)
    rec.add("node", "run", {"node": "n"}, answer="x" * 500)
    (e,) = read_recording(rec.dump())
    assert e["answer"]["truncated"] is True and e["answer"]["bytes"] == 502 and e["answer"]["head"].startswith('"xxx')


def test_past_the_total_cap_the_recording_stops_and_its_last_line_says_so() -> None:
    rec = Recorder(lambda: 0.0, lambda: None, total_cap=1000)
    for i in range(50):
        rec.add("kube", "get", {"i": i}, answer={"n": i})
    entries = read_recording(rec.dump())
    last = entries[-1]
    assert last["cap"] == "total" and last["bytes"] <= 1000 and last["at_seq"] == len(entries) and last["dropped"] == 50 - len(entries) + 1
    assert all("seq" in e for e in entries[:-1]) and len(json.dumps(entries[:-1])) < 1200


def test_the_same_calls_make_the_same_bytes() -> None:
    def make() -> bytes:
        rec = Recorder(lambda: 2.0, lambda: None)
        rec.add("kube", "get", {"b": 1, "a": 2}, answer={"y": 1, "x": [1, 2]})
        return rec.dump()

    assert make() == make()


FAKE_WITH_A_PULL_SECRET = """
import pytest
from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider

FAKE = FakeCluster(FakeConfig(pod_ready_ticks=2))
FAKE.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "creds"}})
FAKE.create({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
             "metadata": {"name": "regcred", "namespace": "creds"}, "data": {".dockerconfigjson": "ZG9ja2VyLWNvbmZpZy1zZWNyZXQ="}})
PROVIDER = FakeProvider(FAKE)

def pytest_kpr_provider(config, settings, timeouts, kube_factory):
    return PROVIDER
"""


def test_a_fake_run_writes_its_recording_with_the_tests_and_the_virtual_clock_and_no_secret(pytester: pytest.Pytester) -> None:
    """Two suites against the fake, with --kpr-image-pull-secret naming a Secret the run copies into each namespace it makes
    (its data read and written through the API): recording.jsonl.gz is beside the evidence, its requests charged to the
    tests that made them (the rest between tests), on the fake's clock, and the Secret's data is not in it."""
    import shutil
    from pathlib import Path

    suites = Path(__file__).resolve().parents[2] / "suites"
    dest = pytester.path / "suites"
    dest.mkdir()
    for name in ("test_nodeport.py", "test_headless.py"):
        shutil.copy(suites / name, dest / name)
    pytester.makeconftest(FAKE_WITH_A_PULL_SECRET)
    result = pytester.runpytest(str(dest), "-m", "kpr", "--kpr-artifacts=artifacts", "-p", "no:cacheprovider", "--import-mode=importlib",
                                "--kpr-timeout-scale=0.05", "--kpr-image-pull-secret=creds/regcred")
    result.assert_outcomes(passed=7)
    data = (pytester.path / "artifacts" / "fake" / "recording.jsonl.gz").read_bytes()
    assert b"ZG9ja2VyLWNvbmZpZy1zZWNyZXQ=" not in gzip.decompress(data)
    entries = read_recording(data)
    tests = {e["test"] for e in entries}
    assert any(t and t.startswith("suites/test_nodeport.py::test_") for t in tests) and None in tests
    secrets = [e for e in entries if e["op"] == "create" and e["args"]["args"][0].get("kind") == "Secret"]
    assert secrets and all(s["args"]["args"][0]["data"] == {".dockerconfigjson": REDACTED} for s in secrets)
    assert {e["seam"] for e in entries} >= {"kube", "outside"} and all(e["t"] >= 0 for e in entries)
    assert [e["seq"] for e in entries] == sorted(e["seq"] for e in entries)
    from pytest_kpr.run.recording import recording_meta

    meta = recording_meta(data)
    assert meta["clock"] == "virtual" and meta["provider"] == "fake" and any(
        meta["run_id"] in json.dumps(e["args"]) for e in entries if e["op"] == "create")  # the namespaces the run made carry its id


def test_no_recording_writes_none(pytester: pytest.Pytester) -> None:
    from test_suites_vs_fake import run_suites

    run_suites(pytester, "", "headless", args=("--kpr-no-recording",)).assert_outcomes(passed=2)
    assert not (pytester.path / "artifacts" / "fake" / "recording.jsonl.gz").exists()


def test_the_suites_tokens_are_recorded_as_the_run_seams_requests() -> None:
    from pytest_kpr.core import tokens

    rec = Recorder(lambda: 0.0, lambda: "t")
    tokens.install(rec.token)
    try:
        a, b = tokens.token(), tokens.token(3)
    finally:
        tokens.install(None)
    assert len(a) == 12 and len(b) == 6 and tokens.token() not in (a, b)
    assert [(e["seam"], e["op"], e["args"], e["answer"]) for e in read_recording(rec.dump())] == [
        ("run", "token", {"bytes": 6}, a), ("run", "token", {"bytes": 3}, b)]


def test_the_first_line_is_the_runs_meta() -> None:
    from pytest_kpr.run.recording import recording_meta

    rec = Recorder(lambda: 0.0, lambda: None)
    rec.meta = {"run_id": "abcd1234", "seed": 7}
    rec.add("kube", "get", {"args": ["Pod", "x"]}, answer=None)
    assert recording_meta(rec.dump()) == {"recording": 1, "run_id": "abcd1234", "seed": 7}
    assert gzip.decompress(rec.dump()).decode().splitlines()[0].startswith('{"meta": ')
    assert [e["op"] for e in read_recording(rec.dump())] == ["get"]
