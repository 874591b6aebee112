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


def test_upgrade_workflow_runs_adjacent_minors_up_and_back_and_uploads_upgrade_json() -> None:
    wf = yaml.safe_load((WF / "kpr-upgrade.yml").read_text())
    read = steps(wf["jobs"]["matrix"])
    assert "clusters/versions.yaml" in read and "zip(m, m[1:])" in read
    import subprocess
    import sys

    line = next(x for x in read.splitlines() if "pairs=" in x)
    code = line.split("python -c '", 1)[1].rsplit("')", 1)[0]
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    import json

    pairs = json.loads(out)
    assert [(p["from"].rsplit(".", 1)[0], p["to"].rsplit(".", 1)[0]) for p in pairs] == [("1.18", "1.19"), ("1.19", "1.20")]
    run = steps(wf["jobs"]["upgrade"])
    assert "--kpr-cilium-version=${{ matrix.pair.from }}" in run and "--kpr-upgrade-to=${{ matrix.pair.to }}" in run and "--kpr-downgrade" in run
    assert "actions/upload-artifact@" in run and "make kpr" in run


def test_kernels_workflow_runs_make_kpr_in_an_lvh_vm_per_pinned_kernel_and_reports_one_matrix() -> None:
    wf = yaml.safe_load((WF / "kpr-kernels.yml").read_text())
    pins = yaml.safe_load((REPO / "clusters" / "versions.yaml").read_text())["lvh"]
    assert [k.split("-")[0] for k in pins["kernels"]] == ["5.10", "5.15", "6.1", "6.6", "6.12", "6.18"]
    assert '["lvh"]["kernels"]' in steps(wf["jobs"]["matrix"])
    cell = wf["jobs"]["kernel"]
    lvh = next(s for s in cell["steps"] if "little-vm-helper" in str(s.get("uses", "")))
    assert lvh["uses"] == pins["action"], "the action is pinned by SHA, as in clusters/versions.yaml"
    assert len(lvh["uses"].split("@")[1]) == 40
    assert lvh["with"]["image-version"] == "${{ matrix.kernel }}" and "make kpr" in lvh["with"]["cmd"]
    assert "actions/upload-artifact@" in steps(cell)
    report = steps(wf["jobs"]["report"])
    assert "kpr matrix cells" in report and "GITHUB_STEP_SUMMARY" in report


def test_kind_workflow_runs_every_profile_on_the_newest_cilium() -> None:
    wf = yaml.safe_load((WF / "kpr-kind.yml").read_text())
    job = wf["jobs"]["profiles"]
    profiles = sorted(p.stem for p in (REPO / "clusters" / "profiles").glob("*.yaml") if p.stem != "default")
    assert sorted(job["strategy"]["matrix"]["profile"]) == profiles
    assert "--kpr-profile=${{ matrix.profile }}" in steps(job) and "--kpr-cilium-version" not in steps(job), "the pinned default: the newest"
    assert "profiles" in wf["jobs"]["report"]["needs"]
