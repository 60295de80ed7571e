"""``python -m autograder bench``: stock nbgrader, ours and the floor, on synthetic classes.

``--chapters all`` (or ``01,04``; ``--chapter 04`` for one) benchmarks each chapter in turn
on a class of its own. In each, the pipelines grade the same submissions with the same
per-cell limit:

- **stock**: the nbgrader CLI as shipped, sequential (``nbgrader autograde`` then
  ``nbgrader generate_feedback``), in a course with a stock configuration: every cell
  runs, demonstrations included, and the hidden tests run in the student's kernel. It is
  by far the slowest, so it runs where asked (``--stock 01,04``, ``--no-stock``); by
  default on the one chapter benchmarked, or of several only on chapter 1, where the goal
  compares it with ours.
- **ours**: ``autograder.pipeline.grade`` with N workers (intake, hardened kernel,
  demonstrations skipped, hidden tests scored in the grader, feedback). Its wall time is
  the grading itself; what a run pays once (preparing every chapter, collecting,
  exporting) is printed apart and added once to the projection. The workers' seed
  (``autograder.grading_seed``) starts as ``grade`` begins, as in a real run, and imports
  while the course is prepared: whatever of it is not ready when grading starts is in the
  wall time; it then serves every chapter of the run.
- **floor**: the cheapest possible isolated grading (``autograder.floor``): with the same N
  workers, one child per submission forked from a warm process that has imported torch
  runs the exercise cells and observes the hidden cases, and the parent scores them.
- **floor, cold** (``--cold-floor``): the former floor, bare nbclient execution of the same
  cells in a fresh python3 kernel per submission (kernel start and ``import torch``
  included).

Prints a table per chapter (seconds per notebook by phase), a summary with the ratios,
the projected time of 200 students × 7 chapters on this machine and issue 19's goals
(``autograder.bench_report``), and writes a CSV with one row per chapter, notebook and
pipeline.
"""

import concurrent.futures
import csv
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from autograder.bench_report import COLD_FLOOR, GOAL_CHAPTER, PHASES, ChapterRun, report
from autograder.course import BUILD_DIR, chapter_named, chapters
from autograder.execute import CellClock
from autograder.floor import warm_floor
from autograder.preprocessors import is_demo
from autograder.submissions import SampleStudent

NEVER_ENDS = "while True:\n    pass\n"
KILLS_THE_KERNEL = "import os\nos._exit(1)\n"


def cast(chapter):
    """The kinds of student in the synthetic class, in the proportions they repeat in."""
    module = chapter.module("variants")
    mistakes = list(getattr(module, "SAMPLE_STUDENTS", []))
    first = next(iter(chapter.module("student").EJERCICIOS))
    correct = SampleStudent("correct", "reference")
    return ([("correct", correct)] * 5
            + [("wrong", s) for s in mistakes[:2]]
            + [("stubs", SampleStudent("stubs", "stubs", use_reference=False))]
            + [("crashes", SampleStudent("crashes", "os._exit", {first: KILLS_THE_KERNEL}))]
            + [("times out", SampleStudent("times out", "endless loop",
                                           {first: NEVER_ENDS}))])


def write_class(course_dir, chapter, students, destination):
    """``students`` submissions for ``chapter``: [(student id, kind)]."""
    from autograder.sample_class import submission

    source = nbformat.read(course_dir / "source" / chapter.name / f"{chapter.name}.ipynb", 4)
    release = nbformat.read(course_dir / "release" / chapter.name / f"{chapter.name}.ipynb", 4)
    kinds = cast(chapter)
    roster = []
    for i in range(students):
        kind, template = kinds[i % len(kinds)]
        student = f"s{i + 1:03d}"
        path = destination / student / chapter.name / f"{chapter.name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(submission(template, source, release), path)
        roster.append((student, kind))
    return roster


# ------------------------------------------------------------------------------ cold floor
def floor_notebook(submitted, source):
    """The submission's non-demo cells, its test cells replaced by the instructor's tests."""
    tests = {c.metadata["nbgrader"]["grade_id"]: c.source for c in source.cells
             if c.metadata.get("nbgrader", {}).get("grade")}
    nb = nbformat.v4.new_notebook(metadata=source.metadata)
    for cell in submitted.cells:
        if cell.cell_type != "code" or is_demo(cell):
            continue
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        nb.cells.append(nbformat.v4.new_code_cell(tests.get(grade_id, cell.source)))
    return nb


def run_floor(path, source_path, timeout):
    """Execute one cold-floor notebook in a plain python3 kernel; seconds by phase."""
    from nbclient import NotebookClient

    nb = floor_notebook(nbformat.read(path, 4), nbformat.read(source_path, 4))
    totals = dict.fromkeys(PHASES, 0.0)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    clock = CellClock(totals)
    try:
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells):
                with clock.cell(cell):
                    client.execute_cell(cell, index)
    except Exception:  # noqa: BLE001 - a dead kernel or a time-out ends this notebook's run
        pass
    return totals


# ------------------------------------------------------------------------------ stock
STOCK_CONFIG = """c = get_config()  # noqa
c.CourseDirectory.course_id = "bench-stock"
c.Execute.timeout = {timeout}
"""


def run_stock(course_dir, chapter, submissions, timeout, work):
    """The nbgrader CLI, as shipped, on a copy of the course; wall-clock seconds."""
    stock = work / "stock"
    for name in ("source", "release"):
        shutil.copytree(course_dir / name, stock / name)
    (stock / "nbgrader_config.py").write_text(STOCK_CONFIG.format(timeout=timeout))
    for student_dir in submissions.iterdir():
        shutil.copytree(student_dir / chapter.name,
                        stock / "submitted" / student_dir.name / chapter.name)
    nbgrader = [sys.executable, "-m", "nbgrader"]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                                 f"{os.environ.get('PATH', '')}"}
    subprocess.run(nbgrader + ["generate_assignment", chapter.name, "--force"], cwd=stock,
                   env=env, capture_output=True, check=True)
    started = time.perf_counter()
    subprocess.run(nbgrader + ["autograde", chapter.name, "--force"], cwd=stock, env=env,
                   capture_output=True)  # fails for the crashing students, as it should
    graded = time.perf_counter()
    subprocess.run(nbgrader + ["generate_feedback", chapter.name, "--force"], cwd=stock,
                   env=env, capture_output=True)
    return graded - started, time.perf_counter() - graded


# ------------------------------------------------------------------------------ the run
class TimedPool:
    """``LocalPool`` timed from outside: the wall seconds of grading the collected
    submissions, without what ``pipeline.grade`` does once per run around it (prepare every
    chapter, collect, export)."""

    def __init__(self, workers):
        from autograder.parallel import LocalPool

        self.pool, self.seconds = LocalPool(workers), 0.0

    def start(self):
        """Untimed, as in ``pipeline.grade``: what it starts goes on in the background."""
        self.pool.start()

    def grade(self, run, outcomes, done):
        started = time.perf_counter()
        try:
            return self.pool.grade(run, outcomes, done)
        finally:
            self.seconds += time.perf_counter() - started


def chapter_list(names):
    """``all``, or chapter names separated by commas (``01,04``), as chapters."""
    if names.strip() == "all":
        return chapters()
    return [chapter_named(name.strip()) for name in names.split(",") if name.strip()]


def default_stock(selected):
    """Where stock nbgrader runs unless told (it is the slowest by far): the one chapter
    benchmarked, or of several only chapter 1, the one the goal compares on."""
    if len(selected) == 1:
        return list(selected)
    return [c for c in selected if c.name.startswith(GOAL_CHAPTER)]


def bench(chapter_names="04", students=50, workers=None, timeout=10, out=BUILD_DIR / "bench",
          stock=None, cold_floor=False):
    """Benchmark ``chapter_names`` (``all``, ``01,04``…); ``stock``: the chapters stock
    nbgrader runs on (default ``default_stock``); ``cold_floor``: also the bare-nbclient
    floor. Returns the printed text and the CSV's path."""
    from autograder.pipeline import prepare_course

    selected = chapter_list(chapter_names)
    stock = default_stock(selected) if stock is None else chapter_list(stock) if stock else []
    workers = workers or os.cpu_count() or 1
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    course = out / "course"
    prepare_course(course, selected=selected)
    runs = [bench_chapter(chapter, course, students, workers, timeout, out / chapter.name,
                          chapter in stock, cold_floor) for chapter in selected]
    write_csv(runs, out / "bench.csv")
    return report(runs, students, workers, timeout), out / "bench.csv"


def bench_chapter(chapter, course, students, workers, timeout, out, stock, cold_floor):
    """One chapter's synthetic class graded by each pipeline: a ``ChapterRun``."""
    from autograder.hidden.seeds import course_secret
    from autograder.pipeline import grade

    roster = write_class(course, chapter, students, out / "submissions")
    kinds = dict(roster)
    run = ChapterRun(chapter.name, students)

    pool = TimedPool(workers)
    started = time.perf_counter()
    outcomes = grade(out / "submissions", out / "grades", course_dir=course, timeout=timeout,
                     progress=None, executor=pool)
    run.walls["ours"] = pool.seconds
    run.once_s = time.perf_counter() - started - pool.seconds
    run.rows += [("ours", o.student, kinds[o.student], o.timings) for o in outcomes]
    run.points["ours"] = {o.student: o.score for o in outcomes}

    paths = [out / "submissions" / s / chapter.name / f"{chapter.name}.ipynb" for s, _ in roster]
    source_path = course / "source" / chapter.name / f"{chapter.name}.ipynb"
    floors, run.warm_up_s, run.walls["floor"] = warm_floor(
        chapter.name, paths, course_secret(course), timeout, workers, source_path)
    run.rows += [("floor", s, k, t) for (s, k), (t, _) in zip(roster, floors)]
    run.points["floor"] = {s: points for (s, _), (_, points) in zip(roster, floors)}

    if cold_floor:
        started = time.perf_counter()
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as executor:
            colds = list(executor.map(run_floor, paths, [source_path] * len(paths),
                                      [timeout] * len(paths)))
        run.walls[COLD_FLOOR] = time.perf_counter() - started
        run.rows += [(COLD_FLOOR, s, k, t) for (s, k), t in zip(roster, colds)]

    if stock:
        autograde_s, feedback_s = run_stock(course, chapter, out / "submissions", timeout,
                                            out)
        run.walls["stock"] = autograde_s + feedback_s
        each = {"execution": autograde_s / students, "feedback": feedback_s / students}
        run.rows += [("stock", s, k, each) for s, k in roster]
    return run


def write_csv(runs, path):
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["chapter", "pipeline", "student", "kind", *PHASES, "total"])
        for run in runs:
            for pipeline, student, kind, timings in run.rows:
                values = [timings.get(p, 0.0) for p in PHASES]
                writer.writerow([run.chapter, pipeline, student, kind,
                                 *(f"{v:.3f}" for v in values), f"{sum(values):.3f}"])
