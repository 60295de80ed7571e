"""What the class report and the summary after grading add up, from Outcomes alone.

``ClassStats.of(outcomes, students)``: per chapter and exercise the scores (mean, share at
full marks and at zero, not submitted), per exercise part its pass rate, the diagnoses
ranked by how many students got each (per exercise and across the course), the outcomes a
person should look at, one row per student, and each exercise's discrimination. The page
(``report.page``), the CSV (``report.tables``) and the lines ``grade`` prints
(``summary_lines``) all read this one computation.
"""

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from autograder.markers import TEST_SUFFIX
from autograder.outcome import Status

FULL = 1e-9  # a score within this of the maximum is full marks
# Statuses a person should look at (besides intake repairs): not graded as handed in.
NEEDS_HUMAN = frozenset(Status) - {Status.GRADED, Status.RECORDED}
ANONYMOUS = "[estudiante]"  # what a student's id becomes in an example of the facts


@dataclass
class Diagnosis:
    """One misconception: which students showed it, and an example of its facts."""

    id: str
    students: set = field(default_factory=set)
    example: dict = None  # facts of one case, the student's id replaced by ANONYMOUS
    example_of: str = None  # whose (never shown): the first student, to pick it stably

    def add(self, student, facts):
        self.students.add(student)
        if facts is not None and (self.example_of is None or student < self.example_of):
            self.example, self.example_of = anonymise(facts, student), student


class ScoreSummary:
    """Mean and shares at full marks and at zero of ``scores`` out of ``max_score``."""

    @property
    def mean(self):
        return _mean(self.scores.values())

    @property
    def full_share(self):
        return _share(s >= self.max_score - FULL for s in self.scores.values())

    @property
    def zero_share(self):
        return _share(s <= FULL for s in self.scores.values())


@dataclass
class Exercise(ScoreSummary):
    assignment: str
    cell: str  # grade cell id
    max_score: float
    scores: dict  # student -> points (students who submitted the chapter)
    not_submitted: int
    parts: dict  # part name -> [passed, tried]
    diagnoses: dict  # diagnosis id -> Diagnosis
    discrimination: float | None = None

    @property
    def exercise_id(self):
        return self.cell.removesuffix(TEST_SUFFIX)

    def pass_rates(self):
        """Part name -> share of the submissions whose hidden test ran that passed it."""
        return {name: passed / tried for name, (passed, tried) in self.parts.items() if tried}

    def ranked(self):
        return rank(self.diagnoses)


@dataclass
class Chapter(ScoreSummary):
    assignment: str
    max_score: float
    scores: dict  # student -> points after the late penalty
    not_submitted: int
    exercises: list


@dataclass
class ClassStats:
    students: list  # every student of the class, sorted
    chapters: list  # Chapter, by assignment name
    diagnoses: dict  # diagnosis id -> Diagnosis, across the course
    needs_human: list  # Outcomes: not graded as handed in, or repaired on intake
    protections: dict = field(default_factory=dict)  # protection text -> submissions

    @classmethod
    def of(cls, outcomes, students=None):
        """The statistics of ``outcomes`` (one per submission); ``students``: the whole
        class (default: whoever submitted something), so those who never submitted a
        chapter count as not submitted."""
        students = sorted(set(students or ()) | {o.student for o in outcomes})
        by_assignment = defaultdict(list)
        for o in outcomes:
            by_assignment[o.assignment].append(o)
        course = {}
        chapters = [_chapter(name, by_assignment[name], len(students), course)
                    for name in sorted(by_assignment)]
        stats = cls(students, chapters, course, sorted(
            (o for o in outcomes if o.status in NEEDS_HUMAN or o.notes),
            key=lambda o: (o.student, o.assignment)),
            dict(Counter(o.protection for o in outcomes).most_common()))
        _discrimination(stats)
        return stats

    @property
    def exercises(self):
        return [e for c in self.chapters for e in c.exercises]

    def ranked(self):
        return rank(self.diagnoses)

    def share_of_class(self, diagnosis):
        return len(diagnosis.students) / len(self.students) if self.students else 0.0

    def student_rows(self):
        """Per student: points per chapter (None: not submitted), the total, and the
        diagnoses they got, most frequent in the class first."""
        order = {d.id: i for i, d in enumerate(self.ranked())}
        shown = defaultdict(set)
        for d in self.diagnoses.values():
            for student in d.students:
                shown[student].add(d.id)
        rows = []
        for student in self.students:
            points = {c.assignment: c.scores.get(student) for c in self.chapters}
            rows.append({"student": student, "chapters": points,
                         "total": sum(p for p in points.values() if p is not None),
                         "diagnoses": sorted(shown[student], key=order.get)})
        return rows

    def total_of(self, student):
        return sum(c.scores.get(student, 0.0) for c in self.chapters)


def _chapter(assignment, outcomes, class_size, course):
    cells = {}
    for o in outcomes:
        cells.update(o.max_scores)
    exercises = []
    for cell in sorted(cells):
        exercise_id = cell.removesuffix(TEST_SUFFIX)
        parts, diagnoses = {}, {}
        for o in outcomes:
            test = o.hidden_tests.get(exercise_id) or {}
            for part in test.get("parts") or ():
                tally = parts.setdefault(part["part"], [0, 0])
                tally[1] += 1
                if part.get("diagnosis") is None:
                    tally[0] += 1
                else:
                    for table in (diagnoses, course):
                        table.setdefault(part["diagnosis"], Diagnosis(part["diagnosis"])).add(
                            o.student, part.get("facts"))
        exercises.append(Exercise(
            assignment, cell, cells[cell], {o.student: float(o.scores.get(cell, 0.0))
                                            for o in outcomes},
            class_size - len(outcomes), parts, diagnoses))
    return Chapter(assignment, sum(cells.values()), {o.student: o.score for o in outcomes},
                   class_size - len(outcomes), exercises)


def _discrimination(stats):
    """Each exercise's item discrimination: the correlation, over the class, of its points
    with the rest of the course's total (not submitted: 0 points)."""
    totals = {s: stats.total_of(s) for s in stats.students}
    for exercise in stats.exercises:
        xs = [exercise.scores.get(s, 0.0) for s in stats.students]
        exercise.discrimination = correlation(xs, [totals[s] - x for s, x in
                                                   zip(stats.students, xs)])


def correlation(xs, ys):
    """Pearson's r, or None when either side does not vary."""
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx, syy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
    if sxx <= 1e-12 or syy <= 1e-12:
        return None
    return sxy / math.sqrt(sxx * syy)


def rank(diagnoses):
    """Most students first, then by id."""
    return sorted(diagnoses.values(), key=lambda d: (-len(d.students), d.id))


def anonymise(facts, student):
    """The facts with the student's id (e.g. in a traceback's path) replaced."""
    def scrub(value):
        return value.replace(student, ANONYMOUS) if isinstance(value, str) and student \
            else value

    return {key: scrub(value) for key, value in facts.items()}


def _mean(values):
    values = list(values)
    return sum(values) / len(values) if values else None


def _share(flags):
    flags = list(flags)
    return sum(flags) / len(flags) if flags else None
