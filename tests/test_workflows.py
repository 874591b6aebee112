"""The GitHub workflows say what the README promises: self-tests with the real-kernel gate on every push,
and `make kpr` on kind for the Cilium versions pinned in clusters/versions.yaml (1.18, 1.19, 1.20: the minors Cilium supports)."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
WF = REPO / ".github" / "workflows"


def steps(job: dict) -> str:
    return "\n".join(str(s.get("run", "")) + str(s.get("uses", "")) for s in job["steps"])


def test_selftests_run_make_test_as_root_with_the_real_kernel_gate_on_every_push() -> None:
    wf = yaml.safe_load((WF / "selftest.yml").read_text())
    assert "push" in wf[True]  # YAML reads the key `on` as True
    run = steps(wf["jobs"]["make-test"])
    assert "sudo" in run and "KPR_REQUIRE_NETNS=1" in run and "make test" in run


def test_kind_workflow_runs_make_kpr_for_the_pinned_cilium_matrix_and_uploads_evidence() -> None:
    wf = yaml.safe_load((WF / "kpr-kind.yml").read_text())
    read = steps(wf["jobs"]["matrix"])
    assert "clusters/versions.yaml" in read and '["cilium"]["matrix"]' in read
    kpr = wf["jobs"]["kpr"]
    assert kpr["strategy"]["matrix"]["cilium"] == "${{ fromJSON(needs.matrix.outputs.cilium) }}"
    run = steps(kpr)
    assert "make kpr" in run and "--kpr-cilium-version=${{ matrix.cilium }}" in run
    assert "helm/kind-action@" in run and "actions/upload-artifact@" in run
    matrix = yaml.safe_load((REPO / "clusters" / "versions.yaml").read_text())["cilium"]["matrix"]
    assert {".".join(v.split(".")[:2]) for v in matrix} == {"1.18", "1.19", "1.20"}
