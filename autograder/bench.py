"""``python -m autograder bench``: stock nbgrader, ours and the floor, on one synthetic class.

All three grade the same submissions in the same run, with the same per-cell limit:

- **stock**: the nbgrader CLI as shipped, sequential (``nbgrader autograde`` then
  ``nbgrader generate_feedback``), in a course with a stock configuration: every cell
  runs, demonstrations included, and the hidden tests run in the student's kernel.
- **ours**: ``autograder.pipeline.grade`` with N workers (intake, hardened kernel,
  demonstrations skipped, hidden tests scored in the grader, feedback).
- **floor**: bare nbclient execution, with the same N workers, of what must run for a
  grade: kernel start, ``import torch``, the non-demonstration cells and the tests.

Prints a table (seconds per notebook by phase, and the ratios) and writes a CSV with one
row per notebook and pipeline.
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

from autograder.course import BUILD_DIR, chapter_named
from autograder.execute import TIMING_KEYS, CellClock
from autograder.preprocessors import is_demo
from autograder.submissions import SampleStudent
from autograder.tables import format_table

PHASES = (*TIMING_KEYS, "nbgrader + database", "feedback")
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


# ------------------------------------------------------------------------------ floor
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
    """Execute one floor notebook in a plain python3 kernel; seconds by phase."""
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
def bench(chapter_name="04", students=50, workers=None, timeout=10, out=BUILD_DIR / "bench"):
    from autograder.pipeline import grade, prepare_course

    chapter = chapter_named(chapter_name)
    workers = workers or os.cpu_count() or 1
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    course = out / "course"
    prepare_course(course, selected=[chapter])
    roster = write_class(course, chapter, students, out / "submissions")
    kinds = dict(roster)
    rows, totals = [], {}

    started = time.perf_counter()
    outcomes = grade(out / "submissions", out / "grades", course_dir=course, timeout=timeout,
                     workers=workers, progress=None)
    totals["ours"] = time.perf_counter() - started
    for o in outcomes:
        rows.append(("ours", o.student, kinds[o.student], o.timings))

    source_path = course / "source" / chapter.name / f"{chapter.name}.ipynb"
    paths = [out / "submissions" / s / chapter.name / f"{chapter.name}.ipynb" for s, _ in roster]
    started = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        floors = list(pool.map(run_floor, paths, [source_path] * len(paths),
                               [timeout] * len(paths)))
    totals["floor"] = time.perf_counter() - started
    for (student, kind), timings in zip(roster, floors):
        rows.append(("floor", student, kind, timings))

    autograde_s, feedback_s = run_stock(course, chapter, out / "submissions", timeout, out)
    totals["stock"] = autograde_s + feedback_s
    stock_each = {"execution": autograde_s / students, "feedback": feedback_s / students}
    rows += [("stock", s, k, stock_each) for s, k in roster]

    write_csv(rows, out / "bench.csv")
    return report(chapter, students, workers, timeout, totals, rows), out / "bench.csv"


def write_csv(rows, path):
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["pipeline", "student", "kind", *PHASES, "total"])
        for pipeline, student, kind, timings in rows:
            values = [timings.get(p, 0.0) for p in PHASES]
            writer.writerow([pipeline, student, kind, *(f"{v:.3f}" for v in values),
                             f"{sum(values):.3f}"])


def report(chapter, students, workers, timeout, totals, rows):
    lines = [("pipeline", "wall s", "s / notebook", *(f"{p} s" for p in PHASES))]
    for pipeline in ("stock", "ours", "floor"):
        mine = [t for p, _, _, t in rows if p == pipeline]
        means = [sum(t.get(phase, 0.0) for t in mine) / len(mine) for phase in PHASES]
        lines.append((pipeline, f"{totals[pipeline]:.1f}", f"{totals[pipeline] / students:.2f}",
                      *("—" if pipeline == "stock" and phase not in ("feedback",) and not m
                        else f"{m:.2f}" for phase, m in zip(PHASES, means))))
    text = [f"Benchmark: {students} submissions of {chapter.name}, {workers} worker(s) for "
            f"ours and the floor, stock nbgrader sequential; per-cell limit {timeout} s.", ""]
    text += format_table(lines)
    text += ["", "phases are per notebook, summed over a notebook's processes (workers run "
             "side by side, so wall s / notebook is smaller than their sum); stock is timed "
             "from outside, as a whole (its 'execution' is autograde).",
             f"ours / floor = {totals['ours'] / totals['floor']:.2f}   (goal ≤ 1.3)",
             f"stock / ours = {totals['stock'] / totals['ours']:.2f}   (goal ≥ 3)"]
    return "\n".join(text)
