"""The documentation site in a real headless browser (Debian's chromium; `make test-browser`, run by .ci/run): the site
is built, served over HTTP inside a network namespace of this test's own (loopback only: the site must not need
anything outside itself, and no traffic leaves the namespace), and the suites page must render its table of suites with
no console message at all. A screenshot of the page is kept in kpr-artifacts/browser/ (CI uploads it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import chromium
from netns import Topology, can_use_netns, wait_listening

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parent.parent
MKDOCS = Path(sys.executable).parent / "mkdocs"
SHOTS = REPO / "kpr-artifacts" / "browser"
PORT = 8000
CONSOLE = re.compile(r":CONSOLE[:(]\d+\)?\] (.*), source: (\S*)")


def _browser() -> str:
    browser = chromium()
    why = can_use_netns() or (None if browser else "chromium is not installed (make test-browser installs Debian's chromium)")
    if why:
        if os.environ.get("KPR_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{why}, but KPR_REQUIRE_BROWSER=1")
        pytest.skip(why)
    assert browser is not None
    return browser


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> "tuple[Topology, Path]":
    browser = _browser()
    root = tmp_path_factory.mktemp("site")
    r = subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(root / "site")], cwd=REPO, capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    (root / "broken.html").write_text('<html><body><p>x</p><script>undefinedFunction();</script></body></html>\n')
    t = Topology()
    try:
        t.add_ns("docs")
        t.spawn("docs", [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(root), str(PORT)])
        wait_listening(t, "docs", PORT)
        yield t, Path(browser)
    finally:
        t.close()


def _load(t: Topology, browser: Path, path: str, profile: Path, *extra: str) -> "tuple[str, list[str]]":
    """The page's DOM after its scripts ran (a virtual-time budget), and every console message the site logged (the
    browser's own pages, chrome://..., log about themselves: not the site's)."""
    cp = t.exec("docs", str(browser), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
                "--virtual-time-budget=5000", *extra, f"http://127.0.0.1:{PORT}/{path}", check=False, timeout=120)
    return cp.stdout, [m.group(1) for m in CONSOLE.finditer(cp.stderr) if not m.group(2).startswith("chrome://")]


def test_the_suites_page_renders_with_no_console_message(served: "tuple[Topology, Path]", tmp_path: Path) -> None:
    t, browser = served
    dom, console = _load(t, browser, "site/reference/suites/", tmp_path / "profile", "--dump-dom")
    assert console == [], console
    assert "<h1" in dom and ">Suites<" in dom, dom[:2000]
    table = dom.split("<table>", 1)[1].split("</table>", 1)[0]
    rows = table.split("<tbody>", 1)[1].count("<tr>")
    assert rows == len(list((REPO / "suites").glob("test_*.py"))), f"{rows} rows in the suites table"
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / "docs-suites.png"
    shot.unlink(missing_ok=True)
    _load(t, browser, "site/reference/suites/", tmp_path / "profile2", "--window-size=1280,2400", f"--screenshot={shot}")
    assert shot.is_file() and shot.stat().st_size > 10_000, "the screenshot is kept as an artifact"


def test_a_page_with_a_script_error_is_caught(served: "tuple[Topology, Path]", tmp_path: Path) -> None:
    """The console check can fail: a page whose script throws shows up in it."""
    t, browser = served
    _, console = _load(t, browser, "broken.html", tmp_path / "profile", "--dump-dom")
    assert any("undefinedFunction is not defined" in m for m in console), console
