"""The generated rest of the sample class (``autograder.sample_generated``): a class of 30 or
more, the same every run, with a realistic mix. Its grading, and the report on the whole
class, are checked end to end in ``tests/test_grading.py``."""

from collections import Counter

from autograder.sample_class import SAMPLE_CLASS
from autograder.sample_generated import GENERATED, NAMES, corpus_by_exercise, generated_class


def test_the_sample_class_has_thirty_students_or_more_each_once():
    written = {s.student_id for students in SAMPLE_CLASS.values() for s in students}
    generated = [s.student_id for s in generated_class()]
    assert len(set(NAMES)) == len(NAMES) >= GENERATED == len(generated)
    assert written.isdisjoint(generated)
    assert len(written) + len(generated) >= 30


def test_it_is_the_same_every_run_and_fewer_students_are_its_first_ones():
    everyone = generated_class()
    assert generated_class() == everyone
    assert generated_class(4) == everyone[:4]


def test_its_mix_is_realistic():
    """Most answers correct, abler students more often; the mistakes an exercise lists
    first (its classic ones) more often than the rest; a few chapters not handed in."""
    corpus = corpus_by_exercise()
    students = generated_class()
    answers = [(s, v) for s in students for chapter in s.answers.values()
               for v in chapter.values()]
    correct = sum(v.correct for _, v in answers) / len(answers)
    assert 0.6 <= correct <= 0.85, correct
    by_ability = sorted(students, key=lambda s: s.ability)
    half = len(students) // 2

    def share(group):
        picked = [v.correct for s, v in answers if s in group]
        return sum(picked) / len(picked)

    assert share(by_ability[half:]) > share(by_ability[:half]) + 0.1
    rank = Counter()
    for _, v in answers:
        if not v.correct:
            wrong = [w for w in corpus[v.chapter][v.exercise] if not w.correct]
            rank[wrong.index(v) < len(wrong) // 3] += 1
    assert rank[True] > rank[False]  # the first third of the list: most of the mistakes
    handed_in = [len(s.answers) for s in students]
    chapters = len(corpus)
    assert sum(handed_in) >= 0.75 * chapters * len(students)
    assert min(handed_in) < chapters
    for s in students:  # every exercise of a chapter handed in is answered
        for chapter in s.answers.values():
            assert set(chapter) == set(corpus[next(iter(chapter.values())).chapter])
