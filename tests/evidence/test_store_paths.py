"""The evidence writer stays inside its directory: a name from the cluster or a recording (a pod's, a node's) is one file
name, and neither '..' nor a symlink already under the directory takes a write elsewhere. No root needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kpr.evidence.store import Evidence, EvidencePathError, put_bytes, put_text, safe_name


@pytest.mark.parametrize(("given", "name"), [
    ("web-7d9f", "web-7d9f"), ("../../etc/cron.d/x", "..-..-etc-cron.d-x"), ("..", "--"), (".", "-"), ("a/b", "a-b"),
    ("log-../../x.txt", "log-..-..-x.txt"), ("kind-worker", "kind-worker"), ("", "-"), ("ü", "-"), ("a\nb", "a-b"),
])
def test_a_name_from_the_cluster_becomes_one_file_name(given: str, name: str) -> None:
    assert safe_name(given) == name and "/" not in name and name not in (".", "..")


def test_a_name_that_leaves_the_directory_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    root = tmp_path / "art"
    with pytest.raises(EvidencePathError, match=r"^not writing .*: its name leaves .*art$"):
        put_text(root / "failures" / ".." / ".." / "escaped.txt", "x", root=root)
    with pytest.raises(EvidencePathError, match=r"^not writing .*: it is not under "):
        put_text(tmp_path / "elsewhere.txt", "x", root=root)
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "elsewhere.txt").exists()


def test_a_symlink_under_the_directory_is_never_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "art", tmp_path / "outside"
    outside.mkdir()
    root.mkdir()
    (root / "failures").symlink_to(outside)
    (root / "results.json").symlink_to(outside / "target.json")
    with pytest.raises(EvidencePathError, match=r"failures is a symlink \(evidence never follows one\)$"):
        put_text(root / "failures" / "t" / "pods.txt", "x", root=root)
    with pytest.raises(EvidencePathError, match=r"results.json: it is a symlink \(evidence never follows one\)$"):
        Evidence(root).write("results.json", {"a": 1})
    with pytest.raises(EvidencePathError):
        put_bytes(root / "results.json", b"x", root=root)
    assert list(outside.iterdir()) == []


def test_evidence_is_written_under_its_directory_as_before(tmp_path: Path) -> None:
    ev = Evidence(tmp_path / "art" / "kind-kpr")
    p = ev.write("svc.json", {"a": 1})
    assert p.read_text() == '{\n  "a": 1\n}\n' and ev.written == ["svc.json"]
    assert put_text(tmp_path / "art" / "kind-kpr" / "failures" / "t" / "x.txt", "y", root=tmp_path / "art").read_text() == "y"
    assert put_text(tmp_path / "art" / "kind-kpr" / "svc.json", "z").read_text() == "z"  # overwritten in place


def test_a_failure_bundle_names_a_pods_log_by_one_file_name(tmp_path: Path) -> None:
    """A pod or node named with '../' (a hostile recording replayed, or a cluster's answer) gets its log inside the bundle."""
    from pytest_kpr.observe.diagnose import _write

    dest, files = tmp_path / "art" / "failures" / "t", []  # type: ignore[var-annotated]
    _write(dest, "log-../../../../pwned.txt", "x", files)
    _write(dest, "agent-status-../x.txt", "y", files)
    assert [p.parent for p in files] == [dest, dest] and not (tmp_path / "pwned.txt").exists()
    assert sorted(p.name for p in dest.iterdir()) == ["agent-status-..-x.txt", "log-..-..-..-..-pwned.txt"]


@pytest.mark.parametrize(("link", "fault", "rc", "words"), [
    ("fake", None, 4, "--kpr-artifacts: not writing */art/fake/cluster.json: */art/fake is a symlink (evidence never follows one)"),
    ("fake/failures", "nodeport_wrong_port", 1, "could not collect the failure bundle: not writing */art/fake/failures/* is a symlink*"),
    ("fake/setup-failure", "helm_install_fails", 3, "*could not collect the diagnostics of the failed install: *setup-failure is a symlink*"),
])
def test_a_symlink_in_the_artifacts_directory_leaves_nothing_outside_it(pytester: pytest.Pytester, link: str, fault: str | None,
                                                                          rc: int, words: str) -> None:
    """A symlink planted where the run writes (the cluster's evidence directory, the failure bundles', setup-failure/)
    is never followed: nothing lands where it points, and the run says so in a line (its verdicts stand: a real failure
    is still a failure; an evidence directory that cannot be written at all is exit 4 before any cluster is asked)."""
    import shutil

    repo = Path(__file__).resolve().parents[2]
    shutil.copy(repo / "suites" / "test_nodeport.py", pytester.path / "test_nodeport.py")
    outside = pytester.path / "outside"
    outside.mkdir()
    target = pytester.path / "art" / link
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(outside)
    result = pytester.runpytest("test_nodeport.py", "-m", "kpr", "--kpr-provider=fake", "--kpr-artifacts=art", "-p", "no:cacheprovider",
                                *([f"--kpr-fake-faults={fault}"] if fault else []))
    assert result.ret == rc, result.stdout.str()[-2000:]
    result.stdout.fnmatch_lines([f"*{words}"])
    assert "INTERNALERROR" not in result.stdout.str()
    assert list(outside.iterdir()) == []
