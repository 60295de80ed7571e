"""The fairness report: every variant of the corpus through the hidden tests, in process.

Correct variants must get full marks, wrong ones must lose points on their exercise,
and the diagnosis must match the variant's label for at least ``MIN_DIAGNOSED`` of
the wrong ones. Each variant is graded as two different students (different inputs).
"""

import secrets
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from autograder.corpus import all_variants
from autograder.course import chapter_modules, chapter_named
from autograder.hidden.runner import grade_hidden
from autograder.tables import format_table

MIN_DIAGNOSED = 0.90
STUDENTS = ("ana", "bruno")
SECRET = "informe-de-justicia"


@dataclass(frozen=True)
class Row:
    exercise: str
    variant: str
    expected: str
    correct: bool
    points: float  # worst case over STUDENTS: min if correct, max if wrong
    max_points: float
    diagnosis: str  # of the first student
    chapter: str = ""

    @property
    def points_ok(self):
        return self.points == self.max_points if self.correct else self.points < self.max_points

    @property
    def diagnosed(self):
        return self.correct or self.diagnosis == self.expected


def fairness_rows(keys=None):
    keys = keys or [m.__name__.split(".")[-2] for m in chapter_modules("variants")]
    rows = []
    for key in keys:
        hidden = chapter_named(key).module("hidden").HIDDEN
        for v in all_variants((key,)):
            results = [grade_hidden(v.exercise, hidden, v.function, student, SECRET)
                       for student in STUDENTS]
            scores = [r.puntos for r in results]
            rows.append(Row(v.exercise, v.name, v.expected, v.correct,
                            min(scores) if v.correct else max(scores), results[0].maximo,
                            results[0].diagnostico or "—", key))
    return rows


@dataclass(frozen=True)
class Miss:
    """A correct variant below full marks on one draw: what reproduces it."""
    chapter: str
    variant: str
    student: str
    secret: str
    points: float
    max_points: float
    report: str


@contextmanager
def torch_threads(count):
    """As a grading kernel runs: a thread count changes the order of float sums."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def draw_misses(course_secrets, keys=None, threads=1):
    """Every correct variant under each of ``course_secrets`` (a whole class's worth of
    draws instead of the report's one): each miss is an unfair draw, with what reproduces
    it. The report's fixed secret shows a space is covered; this shows no corner of it
    costs a right answer (zero gradients where a norm is not differentiable, float32 noise
    where the truth is exactly 0)."""
    keys = keys or [m.__name__.split(".")[-2] for m in chapter_modules("variants")]
    misses = []
    with torch_threads(threads):
        for key in keys:
            hidden = chapter_named(key).module("hidden").HIDDEN
            for v in (v for v in all_variants((key,)) if v.correct):
                for secret in course_secrets:
                    for student in STUDENTS:
                        r = grade_hidden(v.exercise, hidden, v.function, student, secret)
                        if r.puntos != r.maximo:
                            misses.append(Miss(key, v.name, student, secret, r.puntos,
                                               r.maximo, r.informe(v.exercise)))
    return misses


def random_secrets(count):
    return [secrets.token_hex(16) for _ in range(count)]


def misses_report(misses, draws):
    lines = [f"correct variants under {draws} random course secrets × {len(STUDENTS)} "
             f"students, one thread: {len(misses)} below full marks"]
    for m in misses:
        lines += [f"  {m.chapter} {m.variant} student={m.student} secret={m.secret} "
                  f"{m.points:g}/{m.max_points:g}", *("    " + line for line in
                                                    m.report.splitlines())]
    return "\n".join(lines)


def summary(rows):
    correct = [r for r in rows if r.correct]
    wrong = [r for r in rows if not r.correct]
    diagnosed = sum(r.diagnosed for r in wrong) / len(wrong) if wrong else 1.0
    return {
        "correct_full": (sum(r.points_ok for r in correct), len(correct)),
        "wrong_below_full": (sum(r.points_ok for r in wrong), len(wrong)),
        "diagnosed": diagnosed,
        "passed": all(r.points_ok for r in rows) and diagnosed >= MIN_DIAGNOSED,
    }


def report(rows):
    header = ("exercise", "variant", "points", "diagnosis", "expected", "")
    lines = [header]
    for r in rows:
        verdict = "ok" if r.points_ok and r.diagnosed else (
            "WRONG POINTS" if not r.points_ok else "other diagnosis")
        lines.append((r.exercise, r.variant, f"{r.points:g}/{r.max_points:g}",
                      "—" if r.correct and r.diagnosis == "—" else r.diagnosis, r.expected,
                      verdict))
    text = format_table(lines)
    text += ["", "per clause (autograder/chapters/chNN/contract.py):"] + clause_report(rows)
    s = summary(rows)
    text.append("")
    text.append("correct variants at full marks: {}/{}".format(*s["correct_full"]))
    text.append("wrong variants below full marks: {}/{}".format(*s["wrong_below_full"]))
    text.append(f"wrong variants diagnosed as labelled: {s['diagnosed']:.0%} "
                f"(required: {MIN_DIAGNOSED:.0%})")
    text.append("FAIRNESS: " + ("PASS" if s["passed"] else "FAIL"))
    return "\n".join(text)


def clause_report(rows):
    """Each clause of the graded chapters: the cases that check it and the worst points of
    the variants that break it (a clause none of whose variants loses points is flagged)."""
    from autograder.contract import EVERY_CASE, clauses_of

    by_variant = {(r.chapter, r.exercise, r.variant): r for r in rows}
    lines = [("exercise", "clause", "checked by", "violated by (points)", "")]
    for key in sorted({r.chapter for r in rows}):
        for exercise, clauses in clauses_of(chapter_named(key)).items():
            for number, clause in enumerate(clauses, 1):
                cases = ("every case" if clause.cases == EVERY_CASE else
                         ", ".join(f"{d}={v!r}" for d, v in clause.cases))
                found = [by_variant.get((key, exercise, name)) for name in clause.violated_by]
                broken = ", ".join(f"{r.variant} ({r.points:g}/{r.max_points:g})"
                                   for r in found if r)
                ok = found and all(r and r.points < r.max_points for r in found)
                text = " ".join(clause.text.split())
                lines.append((f"{key} {exercise}", f"{number}. {text[:48]}"
                              + ("…" if len(text) > 48 else ""), cases, broken or "—",
                              "ok" if ok else "UNCHECKED"))
    return format_table(lines) if len(lines) > 1 else ["(no clauses)"]


def mutation_report(verdicts):
    """Per exercise: the share of live mutants the hidden tests kill, and every survivor."""
    from autograder.mutation import MIN_SCORE, scores

    lines = [("chapter", "exercise", "killed", "survived", "equivalent", "stillborn", "score")]
    for s in scores(verdicts):
        verdict = f"{s.share:.0%}" + ("" if s.share >= MIN_SCORE else " LOW")
        lines.append((s.chapter, s.exercise, str(s.killed), str(s.survived), str(s.equivalent),
                      str(s.stillborn), verdict))
    text = format_table(lines)
    survivors = [v for v in verdicts if v.outcome == "survived"]
    if survivors:
        text += ["", "surviving mutants (points per student):"]
        text += [f"  {v.mutant.chapter} {v.mutant.exercise} [{v.mutant.id}] "
                 f"{'/'.join(f'{p:g}' for p in v.points)} of {v.maximum:g}" for v in survivors]
    passed = all(s.share >= MIN_SCORE for s in scores(verdicts))
    text += ["", f"MUTATION: {'PASS' if passed else 'FAIL'} (every exercise ≥ {MIN_SCORE:.0%})"]
    return "\n".join(text), passed
