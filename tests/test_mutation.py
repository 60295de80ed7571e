"""Mutation testing of the hidden tests: every exercise kills ≥ 95 % of its live mutants."""

import pytest

from autograder.course import chapters
from autograder.mutation import (
    MIN_SCORE,
    chapter_mutants,
    mutation_verdicts,
    scores,
    stale_equivalences,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def verdicts():
    return mutation_verdicts()


def test_every_exercise_kills_its_mutants(verdicts):
    low = [(s.chapter, s.exercise, f"{s.share:.0%}") for s in scores(verdicts)
           if s.share < MIN_SCORE]
    survivors = [(v.mutant.chapter, v.mutant.exercise, v.mutant.id) for v in verdicts
                 if v.outcome == "survived"]
    assert not low, (low, survivors)


def test_equivalent_mutants_still_exist(verdicts):
    assert stale_equivalences(verdicts) == []


def test_every_exercise_has_mutants():
    for chapter in chapters():
        names = {m.exercise for m in chapter_mutants(chapter)}
        assert names == set(chapter.module("student").EJERCICIOS), chapter.key
