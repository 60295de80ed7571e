"""The floor of ``bench``: the cheapest possible *isolated* grading of a submission.

A warm parent process imports torch and what the notebooks import, once. For each
submission it forks one child, which runs the submission's non-demonstration code cells and
observes the student's functions on the hidden cases (``autograder.harness``, as the real
grader asks the kernel to), then exits; the parent scores the observations against the
reference (``autograder.hidden.runner.score``), as the grader does. No Jupyter kernel, no
nbgrader, no gradebook, no feedback page, no OS sandbox or guard: the isolation is only a
fresh process per submission, so nothing one student's code changes reaches the next.

What the real grader does too, so that the floor pays for it: a cell that runs past the
limit is interrupted and the rest runs; a cell that kills its process is skipped and the
submission runs again in a fresh child without it (at most ``MAX_DEATHS`` times).

The parent is single-threaded (``torch.set_num_threads(1)`` before any work, and no parallel
region runs in it): libgomp's thread pool does not survive ``fork``, and a child of a parent
that has used it deadlocks. So ``warm_floor`` always starts a fresh parent (``spawn``), even
when the caller has already imported torch.
"""

import ast
import contextlib
import io
import multiprocessing
import os
import signal
import sys
import tempfile
import time
import types
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.execute import TIMING_KEYS, CellClock
from autograder.markers import TEST_SUFFIX
from autograder.preprocessors import is_demo, is_test_cell

MAX_DEATHS = 3  # as ``autograder.execute.GradingExecute.max_kernel_deaths``
POLL_S = 0.002


@dataclass
class Step:
    """One thing a child runs: a code cell, or the observation of one hidden exercise."""

    source: str  # the cell's code; for an observation, a label (CellClock reads it)
    exercise: str = None  # the hidden exercise observed (None: a code cell)


@dataclass
class Job:
    """One submission to grade: what to run, and what happened."""

    student: str
    steps: list
    killers: set = field(default_factory=set)
    timings: dict = field(default_factory=lambda: dict.fromkeys(TIMING_KEYS, 0.0))
    points: float = 0.0
    deaths: int = 0


def steps_of(submitted, hidden, tests=None):
    """What grading ``submitted`` runs: its code cells but demonstrations, in order; at each
    graded test cell of an exercise with hidden tests, their observation (what the real
    grader runs there, whatever the cell holds), else the instructor's cell from ``tests``
    (grade id → source; as nbgrader overwrites it), or the cell if it has none."""
    tests = tests or {}
    steps = []
    for cell in submitted.cells:
        if cell.cell_type != "code" or is_demo(cell):
            continue
        if is_test_cell(cell):
            grade_id = cell.metadata["nbgrader"]["grade_id"]
            exercise = grade_id.removesuffix(TEST_SUFFIX)
            if exercise in hidden:
                steps.append(Step(f"observe {exercise}", exercise))
            else:
                steps.append(Step(tests.get(grade_id, cell.source)))
            continue
        steps.append(Step(cell.source))
    return steps


def imported_modules(notebooks):
    """The top-level modules the notebooks' non-demonstration cells import (what the warm
    parent imports for every child)."""
    names = set()
    for nb in notebooks:
        for cell in nb.cells:
            if cell.cell_type != "code" or is_demo(cell):
                continue
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names.add(node.module)
    return sorted(names)


class CellTimeout(BaseException):
    """A cell past the limit (a BaseException, as the KeyboardInterrupt a kernel gets: the
    checks' ``except Exception`` must not swallow it)."""


def _on_alarm(signum, frame):
    raise CellTimeout()


def _child(job, chapter_key, hidden, cases, folder, timeout, forked_at, report):
    """In the forked child: run ``job``'s steps, saying on ``report`` which one starts."""
    from autograder import harness

    sys.stdout = sys.stderr = io.StringIO()  # captured, as a kernel's output is
    sys.modules["__main__"] = types.ModuleType("__main__")  # the notebook's namespace
    namespace = sys.modules["__main__"].__dict__
    signal.signal(signal.SIGALRM, _on_alarm)
    timings = dict.fromkeys(TIMING_KEYS, 0.0)
    clock = CellClock(timings)
    clock.last = forked_at  # its "kernel start" is the fork
    for index, step in enumerate(job.steps):
        if index in job.killers:
            continue
        os.write(report, f"{index}\n".encode())
        with clock.cell(nbformat.v4.new_code_cell(step.source)):
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                if step.exercise is None:
                    exec(compile(step.source, f"<celda {index}>", "exec"), namespace)
                else:
                    harness.observe(chapter_key, step.exercise, hidden[step.exercise].exercise
                                    .funcion, cases[step.exercise],
                                    str(folder / f"{step.exercise}.datos"))
            except BaseException:  # noqa: BLE001, S110 - a student's error ends only the cell
                pass
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    os.write(report, b"done " + repr(timings).encode() + b"\n")


def _start(job, chapter_key, hidden, cases, timeout):
    """Fork the child that runs ``job``; (pid, its report pipe, its folder, when forked)."""
    folder = Path(tempfile.mkdtemp(prefix="floor-"))
    read, write = os.pipe()
    forked_at = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: whatever happens, it never returns into the parent's code
        status = 1
        try:
            os.close(read)
            os.chdir(folder)
            _child(job, chapter_key, hidden, cases, folder, timeout, forked_at, write)
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    return pid, read, folder


def _read_all(fd):
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode()


def _finish(job, report, folder, hidden, cases):
    """After a child ended: its timings and the scores, or the cell that killed it.
    True when the job is done (False: run it again without that cell)."""
    import shutil

    from autograder.hidden.runner import score
    from autograder.student import plain

    lines = report.splitlines()
    if not lines or not lines[-1].startswith("done "):
        job.deaths += 1
        if lines and len(job.killers) < MAX_DEATHS:
            job.killers.add(int(lines[-1]))
            shutil.rmtree(folder, ignore_errors=True)
            return False
        shutil.rmtree(folder, ignore_errors=True)
        return True  # nothing graded, as a kernel that cannot be brought back
    for key, seconds in ast.literal_eval(lines[-1].removeprefix("done ")).items():
        job.timings[key] += seconds
    started = time.perf_counter()
    for exercise, exercise_cases in cases.items():
        path = folder / f"{exercise}.datos"
        if path.is_file() and not path.is_symlink():
            data = plain.loads(path.read_bytes())
            job.points += float(score(hidden[exercise], exercise_cases,
                                      data["observations"]).puntos)
    job.timings["execution"] += time.perf_counter() - started
    shutil.rmtree(folder, ignore_errors=True)
    return True


def _serve(jobs, chapter_key, hidden, secret, timeout, workers):
    """In the warm parent: grade ``jobs`` in forked children, ``workers`` at a time."""
    from autograder.hidden.runner import plan

    pending, running = list(jobs), {}
    limit = max(1, int(timeout))
    while pending or running:
        while pending and len(running) < workers:
            job = pending.pop(0)
            cases = {e: plan(e, hidden, student=job.student, secret=secret)
                     for e in {s.exercise for s in job.steps if s.exercise}}
            pid, report, folder = _start(job, chapter_key, hidden, cases, limit)
            deadline = time.monotonic() + (len(job.steps) + 1) * limit
            running[pid] = (job, report, folder, cases, deadline)
        pid, _ = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            for other, (_, _, _, _, deadline) in running.items():
                if time.monotonic() > deadline:  # a child that ignores its alarms
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(other, signal.SIGKILL)
            time.sleep(POLL_S)
            continue
        job, report, folder, cases, _ = running.pop(pid)
        if not _finish(job, _read_all(report), folder, hidden, cases):
            pending.insert(0, job)
    return jobs


def _warm_parent(chapter_name, paths, source_path, secret, timeout, workers, answer):
    """The spawned warm parent: import, then serve; send back [(timings, points)], the
    seconds its imports took and the seconds the grading took."""
    started = time.perf_counter()
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ.setdefault("MPLBACKEND", "Agg")
    import importlib

    import torch

    torch.set_num_threads(1)  # before any work: no thread pool for a child to inherit
    from autograder import harness  # noqa: F401 - warm for every child
    from autograder.course import chapter_named
    from autograder.hidden.runner import public_answers

    chapter = chapter_named(chapter_name)
    hidden = chapter.module("hidden").HIDDEN
    notebooks = [nbformat.read(p, as_version=4) for p in paths]
    for name in imported_modules(notebooks):
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    for exercise in hidden.values():
        public_answers(exercise)  # computed once per process by the real grader too
    warm_s = time.perf_counter() - started
    tests = {}
    if source_path:
        tests = {c.metadata["nbgrader"]["grade_id"]: c.source
                 for c in nbformat.read(source_path, as_version=4).cells
                 if c.cell_type == "code" and is_test_cell(c)}
    jobs = [Job(Path(p).parent.parent.name, steps_of(nb, hidden, tests))
            for p, nb in zip(paths, notebooks)]
    started = time.perf_counter()
    _serve(jobs, chapter.key, hidden, secret, timeout, workers)
    answer.send(([(job.timings, job.points) for job in jobs], warm_s,
                 time.perf_counter() - started))


def warm_floor(chapter_name, paths, secret, timeout, workers, source_path=None):
    """Grade the submissions at ``paths`` (…/<student>/<assignment>/<assignment>.ipynb) the
    cheapest isolated way, ``workers`` children at a time, from a fresh warm parent;
    ``source_path``: the instructor's notebook (its test cells replace the submission's).

    Returns ([(seconds by phase, points)] in the order of ``paths``, the seconds the
    parent took to start and import, the wall seconds of the grading after that)."""
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    started = time.perf_counter()
    parent = context.Process(target=_warm_parent, args=(
        chapter_name, [str(p) for p in paths], source_path and str(source_path), secret,
        timeout, workers, send))
    parent.start()
    send.close()
    results, _, grading_s = receive.recv()
    parent.join()
    return results, time.perf_counter() - started - grading_s, grading_s
