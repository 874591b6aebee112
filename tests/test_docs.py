"""The documentation stays true: the generated pages (suites, options, the kpr command, the evidence schemas) equal
what the code generates, the site builds with ``mkdocs build --strict`` (a broken link or anchor fails it), the README
stays short, and nothing user-facing points outside the repository."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
MKDOCS = Path(sys.executable).parent / "mkdocs"

sys.path.insert(0, str(REPO / "scripts"))
import gen_docs  # noqa: E402

sys.path.remove(str(REPO / "scripts"))


def test_the_generated_pages_are_current() -> None:
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_docs.py"), "--check"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr


def test_a_stale_page_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    page = tmp_path / "docs" / "reference" / "options.md"
    page.write_text(page.read_text().replace("`--kpr-provider`", "`--kpr-providr`"))
    monkeypatch.setattr(gen_docs, "DOCS", tmp_path / "docs")
    assert gen_docs.main(["--check"]) == 1
    assert capsys.readouterr().err == "docs/reference/options.md: generated page is stale; run python scripts/gen_docs.py\n"
    assert gen_docs.main([]) == 0 and gen_docs.main(["--check"]) == 0, "regenerating makes it current"


def test_a_new_property_changes_the_readmes_list_and_counts_by_generation() -> None:
    cat = gen_docs.catalogue()
    n = len(cat["properties"])
    new = {**cat["properties"][0], "property": "practice", "plane": ["socket"]}
    more = {"properties": [*cat["properties"], new]}
    readme = gen_docs.readme(more)
    assert f"runs {n + 1} suites" in readme and f"runs {n} suites" in gen_docs.readme(cat)
    assert f"{n + 1} properties, one suite each: " in readme and ", [practice](docs/reference/suites.md#practice)." in readme
    assert f"{n + 1} properties, one suite each" in gen_docs.home(more)
    assert "[practice](../reference/suites.md#practice)" in gen_docs.planes_page(more).split("- **socket**", 1)[1].split("\n")[0]


def test_the_rendered_pages_follow_from_the_checked_in_catalogue() -> None:
    """The suites page, the README, the home page and the planes page are what the checked-in properties.yaml renders
    to (read back as data), so the catalogue is their one source."""
    import yaml

    cat = yaml.safe_load((DOCS / gen_docs.CATALOGUE).read_text())
    assert cat == gen_docs.catalogue()
    for rel, content in gen_docs.rendered(cat).items():
        assert (DOCS / rel).read_text() == content, rel


def test_changing_a_suites_rule_text_changes_its_page(tmp_path: Path) -> None:
    shutil.copytree(REPO / "suites", tmp_path / "suites")
    before = gen_docs.suites_page(gen_docs.catalogue(tmp_path / "suites"))
    module = tmp_path / "suites" / "test_nodeport.py"
    old = "NodePort without a listener: the node answers HTTP 200 on the NodePort"
    module.write_text(module.read_text().replace(old, "NodePort without a listener: the node answers HTTP 204 on the NodePort", 1))
    cat = gen_docs.catalogue(tmp_path / "suites")
    after = gen_docs.suites_page(cat)
    assert after != before
    section = after.split("## NodePort\n", 1)[1].split("\n## ", 1)[0]
    assert "**Rule.** NodePort without a listener: the node answers HTTP 204 on the NodePort" in section
    assert "the node answers HTTP 204" in gen_docs.catalogue_text(cat)


def test_each_suite_section_shows_its_rule_plane_sources_evidence_and_faults() -> None:
    from pytest_kpr.plugin.markers import suites_in
    from pytest_kpr.rules import sources

    page = (DOCS / "reference" / "suites.md").read_text()
    for name, (suite, doc) in suites_in(REPO / "suites").items():
        section = page.split(f"\n## {suite.property}\n", 1)[1].split("\n## ", 1)[0]
        assert f"`suites/{name}`" in section
        assert all(f"`{e}`" in section for e in suite.evidence), name
        assert suite.plane and f"**Plane.** {suite.plane[0]}: " in section, name
        assert suite.sources and all(f"- `{s}`: {gen_docs._md(sources()[s])}" in section for s in suite.sources), name
        assert "**Faults that fail it** (" in section, f"{name}: no fault of the fake fails it"


def test_the_fault_column_is_read_from_the_faults_declarations() -> None:
    rows = {name: (config, failing) for name, config, failing, _ in gen_docs._fault_rows(REPO / "suites")}
    assert rows["getpeername-returns-the-backend"] == (
        "faults=Faults(getpeername_backend=True)", {"test_socket_lb.py::test_application_sees_the_service_while_its_socket_points_at_a_backend",
                                                    "test_udp.py::test_a_connected_client_reaches_a_backend_and_reads_from_the_cluster_ip"})
    assert rows["ct-flushed"] == ("faults=Faults(upgrade_flushes_ct=True)", {"test_upgrade.py::test_the_flows_conntrack_entries_survive[upgrade]"})
    assert gen_docs._words("*iptables: rules name web's ClusterIP 10.96.*so something other than BPF translates it*") == \
        "iptables: rules name web's ClusterIP 10.96. ... so something other than BPF translates it"


def test_the_options_and_cli_pages_cover_every_option_and_command() -> None:
    from pytest_kpr.cli.main import build_parser
    from pytest_kpr.run.settings import OPTIONS

    options = (DOCS / "reference" / "options.md").read_text()
    assert all(f"| `{o.flag}` | `{o.ini}` |" in options for o in OPTIONS)
    cli = (DOCS / "reference" / "cli.md").read_text()
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    assert all(f"## `kpr {name}`" in cli for name in sub.choices)
    assert "### `kpr probe flow`" in cli and "`--interval-ms" in cli


def test_the_published_schemas_are_json_schema() -> None:
    import jsonschema  # the test extra's; imported here so that `pip install .` alone still collects the kpr tests

    for path in sorted((DOCS / "reference" / "schemas").glob("*.schema.json")):
        jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text()))


def test_the_site_builds_strict(tmp_path: Path) -> None:
    r = subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(tmp_path / "site")], capture_output=True, text=True,
                       cwd=REPO, env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "suites" / "index.html").is_file()


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    page = tmp_path / "docs" / "index.md"
    page.write_text(page.read_text() + "\nSee [the planes](explanation/planes.md#no-such-heading).\n")
    r = subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(tmp_path / "site")], capture_output=True, text=True,
                       cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode != 0 and "no-such-heading" in r.stderr, r.stderr[-2000:]


def test_the_readme_is_short_and_its_links_resolve() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.encode()) <= 10 * 1024, f"README is {len(readme.encode())} bytes"
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    assert links and all((REPO / link).is_file() for link in links if "://" not in link), [
        link for link in links if "://" not in link and not (REPO / link).is_file()]


def test_nothing_user_facing_points_outside_the_repository() -> None:
    user_facing = [REPO / "README.md", REPO / "CHANGELOG.md", *DOCS.rglob("*.md"), *(REPO / "clusters").rglob("*.yaml")]
    outside = [f"{p.relative_to(REPO)}: {m}" for p in user_facing for m in re.findall(r"\.\./shared\S*|/work/\S+", p.read_text())]
    assert outside == []


@pytest.mark.parametrize(("name", "data", "words"), [
    ("cluster.json", {"provider": "fake"}, "cilium_version"),
    ("cluster.json", {"cilium_version": "1.20.5", "clock": "sundial"}, "clock"),
    ("results.json", {"properties": {"socket LB": {"verdict": "fine"}}}, "verdict"),
    ("upgrade.json", {"from": "1.19.8", "to": "1.20.5", "max_gap_s": 1, "transitions": [{"kind": "sideways"}]}, "transitions"),
    ("upgrade.json", {"from": "1.19.8", "to": "1.20.5", "max_gap_s": "1 s", "transitions": []}, "max_gap_s"),
])
def test_a_file_that_breaks_its_schema_fails_both_checks(name: str, data: dict, words: str) -> None:
    """The schema checks in the suites-vs-fake runs can fail: pytest-kpr's checker and jsonschema both refuse each file."""
    from helpers import holds_schema

    import jsonschema
    from pytest_kpr.evidence.artifacts import check
    from pytest_kpr.evidence.schemas import SCHEMAS

    assert words in (check(data, SCHEMAS[name]) or "")
    published = json.loads((DOCS / "reference" / "schemas" / name.replace(".json", ".schema.json")).read_text())
    assert not jsonschema.Draft202012Validator(published).is_valid(data)
    with pytest.raises(AssertionError):
        holds_schema(data, name)


def test_the_exit_status_page_states_the_codes_the_plugin_uses() -> None:
    """What docs/reference/exit-status.md says each of pytest-kpr's own statuses means is what the code returns."""
    from pytest_kpr.plugin.hooks import EXIT_NOTHING_JUDGED
    from pytest_kpr.plugin.session import EXIT_INTERNAL, EXIT_PROVISIONING, EXIT_UNAVAILABLE

    page = (DOCS / "reference" / "exit-status.md").read_text()
    for code, words in ((EXIT_UNAVAILABLE, "the machine cannot run the suites"), (EXIT_PROVISIONING, "provisioning failed"),
                        (EXIT_INTERNAL, "pytest-kpr itself failed before the suites"), (EXIT_NOTHING_JUDGED, "no property judged")):
        assert f"**{code}** {words}" in page or f"{code} nothing collected, **or {words}" in page, (code, words)
    guide = (DOCS / "guides" / "upgrade.md").read_text()
    assert f"usage error (exit {int(pytest.ExitCode.USAGE_ERROR)})" in guide and f"(exit {EXIT_PROVISIONING})" in guide


def test_no_generated_page_has_a_placeholder_that_would_render_as_an_html_tag() -> None:
    """``clusters/kind/<profile>.yaml`` outside a code span is an unknown HTML tag to the site (it showed
    ``clusters/kind/.yaml``); the generated pages write such placeholders as entities, and fault rows in the command
    line's form."""
    import re

    for name in ("options.md", "cli.md", "suites.md"):
        page = (DOCS / "reference" / name).read_text()
        for line in page.splitlines():
            if line.startswith(("<!--", "```")):
                continue
            prose = "".join(part for i, part in enumerate(line.split("`")) if i % 2 == 0)
            assert not re.search(r"<[A-Za-z][^>]*>", prose), (name, line[:200])
    suites = (DOCS / "reference" / "suites.md").read_text()
    assert "faults=Faults(" not in suites and "`--kpr-fake-faults=affinity_ignored`" in suites


def test_the_readmes_suite_count_is_the_number_of_suites() -> None:
    """The README states how many suites run; it is the number of suite modules (scripts/gen_docs.py writes it)."""
    import re

    n = len(list((REPO / "suites").glob("test_*.py")))
    said = re.search(r"runs (\d+) suites", " ".join((REPO / "README.md").read_text().split()))
    assert said and int(said.group(1)) == n, (said and said.group(0), n)


def test_every_count_and_list_the_docs_give_follows_the_code() -> None:
    """What a new user counted against each other (issue 58): the home page's properties, the README's suites, the
    options page's profiles and the needs page's suites are generated from the code (scripts/gen_docs.py), so they agree."""
    import re

    suites = sorted(p.name for p in (REPO / "suites").glob("test_*.py"))
    needs = (REPO / "docs" / "reference" / "needs.md").read_text()
    assert [s for s in suites if f"| `{s}` |" not in needs] == []
    props = sum(1 for line in (REPO / "docs" / "reference" / "suites.md").read_text().splitlines() if line.startswith("## "))
    assert re.search(rf"^{props} properties, one suite each", (REPO / "docs" / "index.md").read_text(), re.M)
    assert f"runs {len(suites)} suites" in (REPO / "README.md").read_text()
    profiles = sorted(p.stem for p in (REPO / "clusters" / "profiles").glob("*.yaml"))
    line = next(ln for ln in (REPO / "docs" / "reference" / "options.md").read_text().splitlines() if ln.startswith("| `--kpr-profile`"))
    listed = re.search(r"clusters/profiles/ \(([^)]*)\)", line)
    assert listed and sorted(listed.group(1).split(", ")) == profiles


def test_every_kpr_commands_exit_statuses_come_from_its_declaration_and_no_page_contradicts_them() -> None:
    """The exit-status page's table of kpr commands is generated from each command's declared statuses (the words its
    --help prints); and wherever a hand-written page says `kpr COMMAND ... exits N`, N is one COMMAND declares (the pages
    disagreed on check-access's statuses: issue 58)."""
    from pytest_kpr.cli.main import build_parser
    from pytest_kpr.core.exits import exit_statuses

    commands = dict(gen_docs._commands(build_parser()))
    page = (DOCS / "reference" / "exit-status.md").read_text()
    for path, parser in commands.items():
        row = next(ln for ln in page.splitlines() if ln.startswith(f"| `{path}` |"))
        assert all(f"**{code}**" in row for code in exit_statuses(parser)), row
        assert (parser.description or "").count("Exit status") <= 1, f"{path}: its statuses stated once"
    said = []
    for md in sorted(DOCS.rglob("*.md")):
        if md.relative_to(DOCS).as_posix() in ("reference/cli.md",):
            continue
        text = " ".join(md.read_text().split())
        for m in re.finditer(r"`(kpr [a-z-]+(?: [a-z-]+)?)[^`]*`(?:(?!`kpr )[^.|])*?\bexits? (?:status )?(\d+)", text):
            name = next((c for c in sorted(commands, key=len, reverse=True) if m[1].startswith(c)), None)
            if name:
                said.append((md.name, name, int(m[2])))
                assert int(m[2]) in exit_statuses(commands[name]), (md.name, m[0])
    assert ("reading-a-failure.md", "kpr matrix", 1) in said  # the check reads the pages' sentences
