"""holds(problems, property): the suites' one assertion."""

from __future__ import annotations

import pytest



@pytest.mark.parametrize(("problems", "then", "want"), [
    ([], "", None),
    (["a"], "", "socket LB: a"),
    (["a", "b"], " (see x)", "socket LB: a; b (see x)"),
])
def test_holds_names_the_property_and_every_problem(problems: list[str], then: str, want: str | None) -> None:
    from pytest_kpr.judge import holds

    if want is None:
        holds(problems, "socket LB", then=then)
        return
    with pytest.raises(AssertionError) as e:
        holds(problems, "socket LB", then=then)
    assert str(e.value) == want
