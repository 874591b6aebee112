"""What a recording holds that the fake never answers (pytest_kpr.run.shapes): a field, a format, an order planted in a
copy of a kept recording is listed, exactly, and nothing else; the same recording against itself lists nothing."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_kpr.run.recording import read_recording, recording_meta
from pytest_kpr.run.shapes import blind_spots, kind_of, line_format, shape

KEPT = Path(__file__).resolve().parents[1] / "data" / "recordings" / "fake-healthy-nodeport" / "recording.jsonl.gz"


def kept() -> tuple[list[dict[str, Any]], str]:
    data = KEPT.read_bytes()
    return read_recording(data), str(recording_meta(data)["run_id"])


def test_a_recording_against_itself_has_no_blind_spot() -> None:
    entries, run = kept()
    assert blind_spots(entries, entries, (run, run)) == {}


def first(entries: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(e for e in entries if kind_of(e) == kind and "answer" in e)


def test_a_field_a_header_and_an_order_the_fake_never_gave_are_each_listed() -> None:
    fake, run = kept()
    real = copy.deepcopy(fake)
    svc = first(real, "kube get Service")
    svc["answer"]["spec"]["trafficDistribution"] = "PreferClose"  # a field
    svc["answer"]["metadata"] = dict(reversed(list(svc["answer"]["metadata"].items())))  # an order
    frontends = first(real, "kube exec cilium-dbg shell -- db/show frontends")
    frontends["answer"]["stdout"] = frontends["answer"]["stdout"].replace("ServiceName", "Service")  # a format (the header)
    spots = blind_spots(real, fake, (run, run))
    assert set(spots) == {"kube get Service", "kube exec cilium-dbg shell -- db/show frontends"}, spots
    assert "spec.trafficDistribution: str" in spots["kube get Service"]
    assert any(s.startswith("order metadata: ") for s in spots["kube get Service"])
    header = [s for s in spots["kube exec cilium-dbg shell -- db/show frontends"] if s.startswith("header ")]
    assert header == ["header Address Type Service PortName Backends RedirectTo Status Since Error"], spots


def test_a_kind_the_fake_never_answered_says_so() -> None:
    fake, run = kept()
    extra = {"seq": 10**6, "t": 0, "test": None, "seam": "kube", "op": "get", "args": {"args": ["CiliumNodeConfig", "x"]}, "answer": {}}
    assert blind_spots([*fake, extra], fake, (run, run)) == {"kube get CiliumNodeConfig": ["never answered by the fake"]}


@pytest.mark.parametrize(("line", "want"), [
    ("10.96.0.12:80/TCP   ClusterIP  kpr-suite-x-ab12cd34/web   http   10.244.1.5:8080/TCP   Done   3m",
     "N/TCP ClusterIP kpr-suite-x-<run>/web http N/TCP Done Nm"),
    ("[fd00:10:96::c]:80/TCP  ClusterIP", "N/TCP ClusterIP"),
    ("TCP OUT 10.244.1.5:40000 -> 10.96.0.12:80 expires=123 Flags=0x0010", "TCP OUT N -> N expires=N Flags=N"),
    ("lxc8cb2a2c29fcb(12) tcx/ingress cil_from_container prog_id 1211", "N(N) tcx/ingress cil_from_container prog_id N"),
    ("-A KUBE-SVC-GBAHE4EE634LR2Q6 -j KUBE-SEP-XCPZA7RIUFTFSDL2", "-A KUBE-SVC-N -j KUBE-SEP-N"),
])
def test_line_formats(line: str, want: str) -> None:
    assert line_format(line, "ab12cd34") == want


def test_an_error_is_its_type() -> None:
    assert shape({"seq": 1, "error": {"type": "ApiError", "message": "x"}}) == {"error ApiError"}


def test_kinds() -> None:
    assert kind_of({"seam": "kube", "op": "create", "args": {"args": [{"kind": "Service"}]}}) == "kube create Service"
    assert kind_of({"seam": "kube", "op": "exec", "args": {"argv": ["sh", "-c", "cilium-dbg status -o json; rc=$?"]}}) == \
        "kube exec cilium-dbg status -o json"
    assert kind_of({"seam": "node", "op": "run", "args": {"argv": ["bpftool", "net", "show", "dev", "lxc8cb2a2c29fcb"]}}) == \
        "node run bpftool net show dev"
    assert kind_of({"seam": "outside", "op": "http", "args": {"url": "http://x"}}) == "outside http"
    assert json.dumps(kind_of({"seam": "run", "op": "token", "args": {}})) == '"run token"'
