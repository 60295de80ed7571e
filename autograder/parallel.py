"""Grade submissions in worker processes, each in a working folder of its own.

A worker grades in a private copy of the course (source, release, configuration, secret)
so that nbgrader's folders and, with the default sqlite file, its gradebook are never
shared between processes. What a worker produces goes back to the course: the autograded
notebook and the feedback are moved into place, and its grades are recorded in the course
gradebook by replaying nbgrader's own ``SaveAutoGrades`` on the autograded notebook. With a
server gradebook (``db_url``, PostgreSQL) every worker writes to it directly.

Workers run under ``autograder.workers``: a worker that dies (whatever killed it) is
replaced, its submission is graded once more in a fresh worker, and recorded as
``grader crashed`` if that dies too; the rest of the class is graded either way.
"""

import os
import shutil
import tempfile
from pathlib import Path

import nbformat

from autograder import workers as pool
from autograder.course import gradebook_url, nbgrader_api
from autograder.grading import grade_one, plain_feedback, read_scores
from autograder.hidden.seeds import SECRET_FILE
from autograder.kernel import PRIVATE_PATHS_ENV
from autograder.outcome import Outcome

_worker = {}  # per worker process: its folder and NbGraderAPI
# A submission's worker is killed after this long: every cell at its limit, the kernel
# restarted after each of the cells that may kill it, and a margin for nbgrader itself.
KERNEL_RESTARTS = 4
MARGIN_S = 300


def _folder(course_dir, root, timeout, db_url, private=()):
    """This process's private course folder (made on its first submission)."""
    if "folder" not in _worker:
        # Kernels started without the OS sandbox inherit this: their guard refuses to
        # read the course, every worker's folder, the submissions and the grades.
        os.environ[PRIVATE_PATHS_ENV] = os.pathsep.join(
            str(p) for p in (course_dir, root, *private))
        folder = Path(root) / f"worker-{os.getpid()}"
        for name in ("source", "release"):
            shutil.copytree(course_dir / name, folder / name)
        for name in ("nbgrader_config.py", SECRET_FILE):
            shutil.copy2(course_dir / name, folder / name)
        if db_url is None:
            shutil.copy2(course_dir / "gradebook.db", folder / "gradebook.db")
        _worker.update(folder=folder, api=nbgrader_api(folder, timeout=timeout, db_url=db_url))
    return _worker["folder"], _worker["api"]


def _replace(produced, target):
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(produced), str(target))


def _grade_task(course_dir, root, out_dir, timeout, db_url, private, outcome):
    """In a worker: grade one submission, then hand its folders back to the course."""
    import warnings

    warnings.filterwarnings("ignore", message=".*not in session.*")
    folder, api = _folder(course_dir, root, timeout, db_url, private)
    student, assignment = outcome.student, outcome.assignment
    submitted = course_dir / "submitted" / student / assignment
    if submitted.exists():
        mine = folder / "submitted" / student / assignment
        if mine.exists():
            shutil.rmtree(mine)
        shutil.copytree(submitted, mine)
    grade_one(api, folder, outcome, out_dir, db_url)
    for kind in ("autograded", "feedback"):
        produced = folder / kind / student / assignment
        if produced.exists():
            _replace(produced, course_dir / kind / student / assignment)
    return outcome


def record_grades(course_dir, outcome):
    """Record an autograded submission in the course's sqlite gradebook, as autograde would."""
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import SaveAutoGrades

    student, assignment = outcome.student, outcome.assignment
    path = course_dir / "autograded" / student / assignment / f"{assignment}.ipynb"
    if not path.exists():
        return
    url = gradebook_url(course_dir)
    stamp = course_dir / "submitted" / student / assignment / "timestamp.txt"
    with Gradebook(url) as gradebook:
        gradebook.update_or_create_student(student)
        extra = {"timestamp": stamp.read_text().strip()} if stamp.exists() else {}
        gradebook.update_or_create_submission(assignment, student, **extra)
    resources = {"nbgrader": {"db_url": url, "assignment": assignment, "notebook": assignment,
                              "student": student}}
    SaveAutoGrades().preprocess(nbformat.read(path, as_version=4), resources)


def _lost(result, course_dir, out_dir, db_url):
    """The Outcome of a submission no worker could grade: 0 points, and why."""
    if isinstance(result, pool.Lost):
        outcome, how = result.task[1], (
            f"se superó el tiempo máximo por entrega ({result.attempts} intentos)"
            if result.overran else
            f"{result.attempts} intentos; " + (f"terminado por {result.signal_name}"
                                              if result.signal_name else
                                              f"código de salida {result.exitcode}"))
        status = "grader crashed"
    else:
        outcome, how = result.task[1], result.error.strip().splitlines()[-1]
        status = "grader error"
    outcome = Outcome(outcome.student, outcome.assignment, status=status, detail=how,
                      notes=outcome.notes)
    read_scores(course_dir, outcome, db_url)
    plain_feedback(outcome, out_dir / "feedback" / outcome.student / f"{outcome.assignment}.html")
    return outcome


def task_seconds(course_dir, outcomes, timeout):
    """The longest a worker may take over one submission (see ``MARGIN_S``)."""
    from autograder.course import load_config

    per_cell = timeout or load_config().Execute.timeout
    cells = 0
    for assignment in {o.assignment for o in outcomes}:
        release = course_dir / "release" / assignment / f"{assignment}.ipynb"
        if release.exists():
            cells = max(cells, len(nbformat.read(release, as_version=4).cells))
    return cells * per_cell * KERNEL_RESTARTS + MARGIN_S


def grade_in_workers(outcomes, course_dir, out_dir, timeout, db_url, workers, done,
                     private=()):
    """Grade ``outcomes`` in ``workers`` processes; ``done(outcome)`` as each finishes.
    Returns them in the order given. ``private``: more folders kernels must not read
    (e.g. where the submissions came from)."""
    course_dir, out_dir = Path(course_dir).resolve(), Path(out_dir).resolve()
    readable = [o for o in outcomes if o.status != "unreadable"]
    finished = {id(o): done(_unreadable(o, course_dir, out_dir, db_url))
                for o in outcomes if o.status == "unreadable"}

    def finish(result):
        if isinstance(result, (pool.Lost, pool.Failed)):
            outcome = _lost(result, course_dir, out_dir, db_url)
            key = id(result.task[1])
        else:
            key, outcome = result
            if db_url is None:
                record_grades(course_dir, outcome)
        finished[key] = done(outcome)

    with tempfile.TemporaryDirectory(prefix="autograder-workers-") as root:
        pool.run([(id(o), o) for o in readable], _keyed_grade_task,
                 args=(course_dir, root, out_dir, timeout, db_url, tuple(map(str, private))),
                 workers=workers,
                 done=finish, task_seconds=task_seconds(course_dir, readable, timeout))
    return [finished[id(o)] for o in outcomes]


def _keyed_grade_task(course_dir, root, out_dir, timeout, db_url, private, task):
    key, outcome = task
    return key, _grade_task(course_dir, root, out_dir, timeout, db_url, private, outcome)


def _unreadable(outcome, course_dir, out_dir, db_url):
    """Nothing to run: zero points and a plain page, here, without a worker."""
    read_scores(course_dir, outcome, db_url)
    plain_feedback(outcome, out_dir / "feedback" / outcome.student / f"{outcome.assignment}.html")
    return outcome
