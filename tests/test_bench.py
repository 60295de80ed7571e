"""The benchmark's arithmetic (the 200 × 7 projection, the goals) and its warm-fork floor on a
tiny notebook; no benchmark is run."""

import time

import nbformat
import pytest

from autograder.bench_report import ChapterRun, project, report
from autograder.course import chapter_named
from autograder.floor import imported_modules, steps_of, warm_floor

EXERCISE = "manual_backward"
REFERENCE = ("from autograder.hidden.reference import load_reference\n"
             f"{EXERCISE} = load_reference('ch01').{EXERCISE}\n")


def test_projection_adds_each_chapter_and_the_once_per_run_cost():
    # 200 students × (2 s + 3 s, and 5 chapters at their mean of 2.5 s) + 40 s once
    assert project({"01": 2.0, "04": 3.0}, once_s=40) == pytest.approx(200 * 17.5 + 40)
    assert project({"01": 1.5}, students=12, chapters=1) == pytest.approx(18.0)
    assert project({}) is None


def _run(chapter, ours_s, floor_s, stock_s=None, students=12, work_s=2.0):
    run = ChapterRun(chapter, students, once_s=30.0, warm_up_s=4.0)
    run.walls.update(ours=ours_s * students, floor=floor_s * students)
    # each notebook's phases sum to ``work_s``: work_s / 2 each on 2 workers
    run.rows = [("ours", f"s{i}", "correct", {"kernel start": work_s - 0.5, "execution": 0.5})
                for i in range(students)]
    run.rows += [("floor", f"s{i}", "correct", {"execution": 2 * floor_s})
                 for i in range(students)]
    if stock_s is not None:
        run.walls["stock"] = stock_s * students
    return run


def test_a_chapter_of_a_large_class_pays_its_start_and_drain_once():
    # 12 notebooks of 2 s of work on 2 workers: 12 s side by side, 4 s more of wall
    run = _run("01_grafo_dinamico", 16 / 12, 0.3)
    assert run.unoverlapped("ours", 2) == pytest.approx(4.0)
    assert run.class_seconds("ours", 2) == pytest.approx(200 * 1.0 + 4.0)
    assert run.class_seconds("ours", 2, students=12) == pytest.approx(16.0)  # the run itself
    assert run.class_seconds("stock", 2) is None


def test_report_states_the_goals_met_and_not_met():
    # ours 1.2 s per notebook, 1 s of work each: per chapter 200 × 1 s + the 2.4 s not
    # overlapped; 7 chapters and 30 s once: 24.1 min (scaling the wall: 28.5); stock 6 s:
    # both chapter-1 goals met
    text = report([_run("01_grafo_dinamico", 1.2, 0.3, 6.0)], 12, 2, 10)
    assert "stock / ours          5.00" in text
    assert f"{((200 + 2.4) * 7 + 30) / 60:6.1f} min = Σ per chapter" in text
    assert "  28.5 min scaling the wall" in text and "warming its parent" in text
    goals = text[text.index("Goals"):]
    assert "NOT met" not in goals and goals.count("met") == 3
    assert "indicative only" not in goals

    # ours 4 s of work per notebook on chapters 1 and 4, no stock: the class takes hours;
    # the goal's configuration differs (3 students)
    text = report([_run("01_grafo_dinamico", 4.0, 0.3, students=3, work_s=8.0),
                   _run("04_loop", 4.0, 0.5, students=3, work_s=8.0)], 3, 2, 10)
    goals = text[text.index("Goals"):]
    assert "indicative only" in goals and "stock not run" in goals
    assert goals.count("NOT met") == 2
    assert f"{(200 * 7 * 4.0 + 30) / 60:6.1f} min" in text


def _notebook(solution, before=""):
    """A tiny chapter-1 submission: imports, a demonstration that would kill its process,
    maybe a cell ``before`` the answer, the answer, and its graded test cell."""
    cell = nbformat.v4.new_code_cell
    demo = cell("import os\nos._exit(3)")
    demo.metadata["tags"] = ["demo"]
    answer = cell(solution, metadata={"nbgrader": {"solution": True, "grade": False,
                                                   "grade_id": EXERCISE}})
    test = cell("pass", metadata={"nbgrader": {"solution": False, "grade": True, "points": 8,
                                               "grade_id": f"{EXERCISE}_test"}})
    nb = nbformat.v4.new_notebook()
    nb.cells = [cell("import torch\nimport math"), demo, *([cell(before)] if before else []),
                answer, test]
    return nb


def test_steps_skip_demonstrations_and_observe_at_the_test_cell():
    hidden = chapter_named("01").module("hidden").HIDDEN
    steps = steps_of(_notebook(REFERENCE), hidden)
    assert [s.exercise for s in steps] == [None, None, EXERCISE]
    assert "os._exit" not in "".join(s.source for s in steps)
    # a graded cell without hidden tests runs the instructor's version, as nbgrader's
    nb = _notebook(REFERENCE)
    nb.cells[-1].metadata["nbgrader"]["grade_id"] = "sin_ocultas_test"
    steps = steps_of(nb, hidden, {"sin_ocultas_test": "assert True"})
    assert [s.source for s in steps][-1] == "assert True" and steps[-1].exercise is None
    assert imported_modules([_notebook(REFERENCE)]) == ["autograder.hidden.reference",
                                                        "math", "torch"]


def test_warm_floor_grades_each_submission_in_a_fresh_child(tmp_path):
    submissions = {"correct": _notebook(REFERENCE),
                   "crashes": _notebook(REFERENCE, before="import os\nos._exit(1)"),
                   "endless": _notebook("while True:\n    pass\n"),
                   "wrong": _notebook(f"def {EXERCISE}(*args):\n    return None\n"),
                   # what a previous child defined must not be there for this one
                   "nothing": _notebook("pass")}
    paths = []
    for student, nb in submissions.items():
        path = tmp_path / student / "01_grafo_dinamico" / "01_grafo_dinamico.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, path)
        paths.append(path)
    started = time.perf_counter()
    results, warm_up_s, grading_s = warm_floor("01", paths, "secreto", timeout=1, workers=2)
    points = dict(zip(submissions, (p for _, p in results)))
    full = chapter_named("01").module("hidden").HIDDEN[EXERCISE].points
    assert points == {"correct": full, "crashes": full, "endless": 0.0, "wrong": 0.0,
                      "nothing": 0.0}
    timings = dict(zip(submissions, (t for t, _ in results)))
    assert timings["endless"]["execution"] >= 1.0  # interrupted at the limit
    assert timings["correct"]["execution"] < 1.0
    assert 0 < warm_up_s and 0 < grading_s < time.perf_counter() - started
