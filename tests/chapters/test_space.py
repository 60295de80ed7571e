"""Every exercise declares its contract as a space, and the hidden draws sample all of it
for every student (see autograder/hidden/space.py)."""

import pytest

from autograder.course import chapters
from autograder.hidden.reference import load_reference
from autograder.hidden.space import coverage

EXERCISES = [pytest.param(c, name, id=f"{c.key}-{name}") for c in chapters()
             for name in c.module("hidden").HIDDEN]


@pytest.mark.parametrize("chapter,name", EXERCISES)
def test_the_draws_cover_the_whole_contract(chapter, name):
    hidden = chapter.module("hidden").HIDDEN[name]
    assert hidden.space is not None and hidden.space.dimensions, "no contract space declared"
    assert coverage(hidden, getattr(load_reference(chapter.key), name)) == []
