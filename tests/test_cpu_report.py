"""The self-tests' CPU figures (tests/cpu_report.py): per test, per file, and the yardstick they are counted against."""

from __future__ import annotations

import pytest
from cpu_report import YARDSTICK, summary


@pytest.mark.parametrize(("per_test", "total", "yardstick", "files"), [
    ({}, 0, None, {}),
    ({"tests/test_a.py::t1": 1.0, "tests/test_a.py::t2[x]": 0.5, "tests/test_b.py::t": 2.0}, 3.5, None,
     {"tests/test_b.py": 2.0, "tests/test_a.py": 1.5}),
    ({YARDSTICK: 2.0, "tests/test_a.py::t": 60.0}, 62.0, 2.0, {"tests/test_a.py": 60.0, "tests/test_packaging.py": 2.0}),
])
def test_the_figures_add_up_per_file_and_name_the_yardstick(per_test: dict[str, float], total: float, yardstick: float | None,
                                                            files: dict[str, float]) -> None:
    s = summary(per_test)
    assert s["tests_cpu_s"] == total and s["yardstick_cpu_s"] == yardstick
    assert s["files"] == files and list(s["files"]) == list(files), "the costliest file first"


def test_the_yardstick_is_a_test_that_exists() -> None:
    from pathlib import Path

    path, name = YARDSTICK.split("::")
    assert f"def {name}(" in (Path(__file__).resolve().parent.parent / path).read_text()
