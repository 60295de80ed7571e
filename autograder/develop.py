"""``python -m autograder chapter NN``: the loop of someone writing one chapter.

Builds that chapter alone (in a temporary nbgrader course, so several chapters can be
worked on at once), writes its student notebook, runs the instructor notebook top to
bottom as nbval does (reporting errors, stderr in graded cells and the slowest cells),
and prints the fairness report of the chapter's variant corpus.
"""

import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbgrader import utils

from autograder.build import build_chapter, install_config
from autograder.course import chapter_named


def _seconds(cell):
    timing = cell.metadata.get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return 0.0
    from datetime import datetime

    return (datetime.fromisoformat(end.replace("Z", "+00:00"))
            - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()


def run_notebook(path, timeout):
    """Execute ``path``; return (seconds, problems, cells by time)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            record_timing=True, resources={"metadata": {"path": str(path.parent)}})
    started = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - started
    problems = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                problems.append(f"cell {index}: {output.ename}: {output.evalue}")
            elif (output.output_type == "stream" and output.name == "stderr"
                  and utils.is_grade(cell)):
                problems.append(f"cell {index} (graded) writes to stderr: {output.text[:200]}")
    slowest = sorted(((round(_seconds(c), 2), i, c.source.splitlines()[0][:60] if c.source else "")
                      for i, c in enumerate(nb.cells) if c.cell_type == "code"), reverse=True)
    return elapsed, problems, slowest[:6]


def check_chapter(name, timeout=300):
    chapter = chapter_named(name)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        course = Path(tmp) / "course"
        install_config(course)
        chapter.student_notebook.parent.mkdir(exist_ok=True)
        chapter.student_notebook.write_text(build_chapter(chapter, course))
        print(f"wrote {chapter.student_notebook}")
        source = course / "source" / chapter.name / f"{chapter.name}.ipynb"
        elapsed, problems, slowest = run_notebook(source, timeout)
    print(f"instructor notebook ran in {elapsed:.1f} s; slowest cells:")
    for seconds, index, first_line in slowest:
        print(f"  {seconds:6.2f} s  cell {index}: {first_line}")
    for problem in problems:
        print("PROBLEM " + problem)
    ok &= not problems
    try:
        from autograder.fairness import fairness_rows, report, summary

        rows = fairness_rows([chapter.key])
    except ModuleNotFoundError as missing:
        print(f"no fairness report yet ({missing})")
        return 1
    print(report(rows))
    return 0 if ok and summary(rows)["passed"] else 1
