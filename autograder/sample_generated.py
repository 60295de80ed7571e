"""The rest of the sample class: students generated from the variants corpus, graded in
process.

The hand-written sample students (``sample_class``) show every grading outcome through the
real pipeline (kernels, nbgrader), but a class report needs a class. ``GENERATED`` more
students are drawn, with a fixed seed, from each chapter's corpus (``chapters/chNN/
variants.py``): each has an ability; per chapter, a student now and then hands nothing in
(more often late in the course); per exercise, they hand in one of its correct variants
(abler students more often), else one of its labelled mistakes, the k-th the corpus lists
with weight 1/k (each exercise lists its classic mistakes first).

They are graded by the same hidden tests as everyone, in the grader's Python (not in a
kernel), as the fairness report grades the corpus: inputs drawn from the course secret
and their id, and the parts, points, diagnoses and facts a kernel run would record
(``hidden.runner.hidden_record``), written to the sample gradebook, grades.csv and
diagnoses.json, which the report reads.
No kernel ran, so they have no notebook and no feedback page. Why in process: a notebook
costs a kernel start (seconds), an exercise here about a tenth of a second, and
``make grade`` must stay within 3 minutes on 2 cores; ``grade`` grades them in a process
of their own while the kernels grade the others. ``GENERATED`` is the knob: the share of
the class graded this cheaper way.
"""

import contextlib
import io
import random
import warnings
from dataclasses import dataclass

SEED = 20  # issue 20: the class report
# Stable ids, none of them a hand-written sample student's (a test checks).
NAMES = ("alba", "alvaro", "andres", "beatriz", "blanca", "carmen", "cristina", "daniel",
         "eva", "fernando", "ines", "ivan", "javier", "jorge", "julia", "laura", "manuel",
         "miguel", "natalia", "oscar", "pablo", "paula", "raul", "rocio", "sara", "sergio",
         "sofia", "teresa", "tomas", "victor")
GENERATED = 16  # with the 15 hand-written students: a class of 31
SKIP = (0.03, 0.025)  # chance of not handing a chapter in: first chapter, added per chapter
CORRECT = (0.45, 0.5)  # chance of a correct variant: the weakest student, added by ability
DETAIL = "estudiante generado: pruebas ocultas en el proceso del calificador, sin kernel"


@dataclass(frozen=True)
class GeneratedStudent:
    student_id: str
    ability: float  # 0 … 1
    answers: dict  # assignment -> {exercise id: corpus Variant}


def corpus_by_exercise():
    """chapter key -> exercise id -> its variants, in the order the corpus lists them."""
    from autograder.corpus import all_variants

    corpus = {}
    for v in all_variants():
        corpus.setdefault(v.chapter, {}).setdefault(v.exercise, []).append(v)
    return corpus


def generated_class(size=GENERATED, seed=SEED):
    """The generated students, the same every time for the same ``size`` and ``seed``."""
    from autograder.course import chapters

    rng = random.Random(seed)
    corpus = corpus_by_exercise()
    students = []
    for name in NAMES[:size]:
        ability = rng.random()
        answers = {}
        for position, chapter in enumerate(chapters()):
            exercises = corpus.get(chapter.key)
            if not exercises or rng.random() < SKIP[0] + SKIP[1] * position:
                continue
            answers[chapter.name] = {exercise: pick(rng, variants, ability)
                                     for exercise, variants in exercises.items()}
        students.append(GeneratedStudent(name, ability, answers))
    return students


def pick(rng, variants, ability):
    """A correct variant with chance CORRECT (by ability), else the k-th mistake listed
    with weight 1/k."""
    correct = [v for v in variants if v.correct]
    wrong = [v for v in variants if not v.correct]
    if rng.random() < CORRECT[0] + CORRECT[1] * ability or not wrong:
        return rng.choice(correct)
    return rng.choices(wrong, weights=[1 / k for k in range(1, len(wrong) + 1)])[0]


def grade_generated(students, course_dir):
    """One graded Outcome per chapter each student handed in: every exercise's hidden test
    run here on the variant, with that student's inputs."""
    from autograder.course import chapter_named
    from autograder.hidden.runner import grade_hidden, hidden_record
    from autograder.hidden.seeds import course_secret
    from autograder.markers import TEST_SUFFIX
    from autograder.outcome import Outcome

    secret = course_secret(cwd=course_dir)
    outcomes = []
    for student in students:
        for assignment, answers in student.answers.items():
            hidden = chapter_named(assignment).module("hidden").HIDDEN
            outcome = Outcome(student.student_id, assignment, detail=DETAIL)
            for exercise, variant in answers.items():
                # A variant's prints and warnings would be its kernel's: not this output's.
                with contextlib.redirect_stdout(io.StringIO()), \
                        contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    result = grade_hidden(exercise, hidden, variant.function,
                                          student.student_id, secret)
                record = hidden_record(hidden[exercise], result)
                cell = exercise + TEST_SUFFIX
                outcome.hidden_tests[exercise] = record
                outcome.scores[cell] = record["points"]
                outcome.max_scores[cell] = float(record["max_points"])
            outcomes.append(outcome)
    return outcomes


def record_in_gradebook(outcomes, db_url):
    """Each submission's points as autograded points, as nbgrader's autograde records them
    (a grade set by hand in the formgrader stays, and counts)."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gradebook:
        for o in outcomes:
            gradebook.update_or_create_student(o.student)
            gradebook.update_or_create_submission(o.assignment, o.student)
            for cell, points in o.scores.items():
                gradebook.find_grade(cell, o.assignment, o.assignment, o.student).auto_score \
                    = points
        gradebook.db.commit()


def graded_outcomes(course_dir, shard=None, size=GENERATED):
    """The Outcomes of the generated students of ``shard`` (default: all)."""
    from autograder.pipeline import in_shard

    return grade_generated([s for s in generated_class(size) if in_shard(s.student_id, shard)],
                           course_dir)


def grade_in_background(course_dir, shard=None, size=GENERATED):
    """``graded_outcomes`` in a process of its own, started now: a Future. Grading in
    kernels leaves the cores idle most of the time (kernel starts, messages, the gradebook),
    so the generated students cost ``make grade`` little wall time when graded meanwhile.
    The course's secret must exist already (``prepare_course``)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    executor = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    future = executor.submit(graded_outcomes, course_dir, shard, size)
    executor.shutdown(wait=False)
    return future


def add_generated(course_dir, out_dir, db_url, shard=None, size=GENERATED, pending=None):
    """The generated students (those of ``shard``), graded here or by ``pending`` (from
    ``grade_in_background``), into the sample course's gradebook and the grades files in
    ``out_dir``, beside the students graded in kernels; returns their Outcomes."""
    from autograder.pipeline import write_results

    outcomes = pending.result() if pending is not None else graded_outcomes(
        course_dir, shard, size)
    record_in_gradebook(outcomes, db_url)
    write_results(outcomes, out_dir, update=True)
    return outcomes
