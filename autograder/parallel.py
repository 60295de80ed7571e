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

``LocalPool`` is the executor ``autograder.pipeline.grade`` uses unless handed another;
``autograder.dask_pool.DaskPool`` runs ``grade_task`` on a Dask cluster's workers instead.
"""

import dataclasses
import functools
import os
import shutil
import tempfile
from pathlib import Path

import nbformat

from autograder import grading_seed
from autograder import workers as pool
from autograder.course import nbgrader_api, sqlite_gradebook
from autograder.grading import grade_one, plain_feedback, read_scores
from autograder.hidden.seeds import SECRET_FILE
from autograder.kernel import PRIVATE_PATHS_ENV
from autograder.outcome import Outcome, Status
from autograder.sandbox import prestart_warm_kernels, shared_kernel_threads

_worker = {}  # per worker process: its folder, NbGraderAPI and gradebook
# A submission's worker is killed after this long: every cell at its limit, the kernel
# restarted after each of the cells that may kill it, and a margin for nbgrader itself.
KERNEL_RESTARTS = 4
MARGIN_S = 300


class LocalPool:
    """Grade a run's submissions in ``workers`` supervised processes on this machine."""

    def __init__(self, workers=1):
        self.workers = workers

    def start(self):
        """Start the seed the workers are forked from (``autograder.grading_seed``): it
        imports while the caller prepares the course and collects the submissions."""
        pool.start_seed([grading_seed.PRELOAD])

    def grade(self, run, outcomes, done):
        """Grade the collected ``outcomes`` of ``run`` (a ``grading.GradeRun``);
        ``done(outcome)`` as each finishes. Returns them in the order given."""
        readable = [o for o in outcomes if o.status != Status.UNREADABLE]
        finished = {id(o): done(ungraded(o, run))
                    for o in outcomes if o.status == Status.UNREADABLE}

        def finish(result):
            # The key, not the outcome: a task that comes back from a worker holds a copy.
            if isinstance(result, (pool.Lost, pool.Failed)):
                key, outcome = result.task[0], _lost(result, run)
            else:
                key, outcome = result
                if own_gradebook(run):
                    try:
                        record_grades(run, outcome)
                    except Exception as error:  # this student's grades only: go on
                        outcome = not_graded(outcome, run, Status.GRADER_ERROR,
                                             f"{NOT_RECORDED}: {_error_text(error)}")
            finished[key] = done(outcome)

        with tempfile.TemporaryDirectory(prefix="autograder-workers-") as root:
            # Workers are forked from the seed, which has imported nbgrader, torch and the
            # rest and started the machine's warm-kernel template.
            pool.run([(id(o), o) for o in readable], _keyed_grade_task,
                     args=(with_seed_private(run), root),
                     starter=functools.partial(grading_seed.start_worker,
                                               shared_kernel_threads(self.workers)),
                     preload=[grading_seed.PRELOAD],
                     workers=self.workers, done=finish,
                     task_seconds=task_seconds(run.course_dir, readable, run.timeout))
        return [finished[id(o)] for o in outcomes]


def with_seed_private(run):
    """``run`` with the folder of the seed's socket among the folders kernels must not
    read: without the sandbox, a kernel could otherwise connect to it from /tmp."""
    seed = pool.seed_folder([grading_seed.PRELOAD])
    if seed is None:
        return run
    return dataclasses.replace(run, private=(*run.private, Path(seed)))


def own_gradebook(run):
    """Whether the run's gradebook is the course's own sqlite file: workers then grade
    against private copies of it (one sqlite file takes no writers side by side), and
    their grades are recorded in it afterwards. A server gradebook they write directly."""
    return run.db_url == sqlite_gradebook(run.course_dir)


def _folder(run, root):
    """This process's private course folder under ``root`` (made on its first submission
    there: a process that outlives a run, like a Dask worker, starts afresh for the next),
    its NbGraderAPI and the gradebook that API writes to."""
    if _worker.get("root") != root:
        # Kernels started without the OS sandbox inherit this: their guard refuses to
        # read the course, every worker's folder, the submissions and the grades.
        os.environ[PRIVATE_PATHS_ENV] = os.pathsep.join(
            str(p) for p in (run.course_dir, root, *run.private))
        prestart_warm_kernels()  # the template imports torch while this copies the course
        folder = Path(root) / f"worker-{os.getpid()}"
        for name in ("source", "release"):
            shutil.copytree(run.course_dir / name, folder / name)
        for name in ("nbgrader_config.py", SECRET_FILE):
            shutil.copy2(run.course_dir / name, folder / name)
        db_url = run.db_url
        if own_gradebook(run):
            shutil.copy2(run.course_dir / "gradebook.db", folder / "gradebook.db")
            db_url = sqlite_gradebook(folder)
        _worker.update(root=root, folder=folder, db_url=db_url,
                       api=nbgrader_api(folder, timeout=run.timeout, db_url=db_url,
                                        notebook_timeout=run.notebook_timeout))
    return _worker["folder"], _worker["api"], _worker["db_url"]


def forget_folder(root):
    """Remove this process's private course folder under ``root``, if it has one."""
    if _worker.get("root") == root:
        shutil.rmtree(_worker["folder"], ignore_errors=True)
        _worker.clear()
        try:
            Path(root).rmdir()  # the last of this machine's workers removes the run's folder
        except OSError:
            pass


def _replace(produced, target):
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(produced), str(target))


def grade_task(run, root, outcome):
    """In a worker: grade one submission, then hand its folders back to the course."""
    import warnings

    warnings.filterwarnings("ignore", message=".*not in session.*")
    folder, api, db_url = _folder(run, root)
    student, assignment = outcome.student, outcome.assignment
    submitted = run.course_dir / "submitted" / student / assignment
    if submitted.exists():
        mine = folder / "submitted" / student / assignment
        if mine.exists():
            shutil.rmtree(mine)
        shutil.copytree(submitted, mine)
    grade_one(api, folder, outcome, run.feedback_page(outcome), db_url)
    for kind in ("autograded", "feedback"):
        produced = folder / kind / student / assignment
        if produced.exists():
            _replace(produced, run.course_dir / kind / student / assignment)
    return outcome


def _keyed_grade_task(run, root, task):
    key, outcome = task
    return key, grade_task(run, root, outcome)


def record_grades(run, outcome):
    """Record an autograded submission in the run's gradebook, as autograde would: its
    grades, its submission time and its late penalty."""
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import AssignLatePenalties, SaveAutoGrades

    from autograder.course import load_config

    student, assignment = outcome.student, outcome.assignment
    path = run.course_dir / "autograded" / student / assignment / f"{assignment}.ipynb"
    if not path.exists():
        return
    stamp = run.course_dir / "submitted" / student / assignment / "timestamp.txt"
    with Gradebook(run.db_url) as gradebook:
        gradebook.update_or_create_student(student)
        extra = {"timestamp": stamp.read_text().strip()} if stamp.exists() else {}
        gradebook.update_or_create_submission(assignment, student, **extra)
    resources = {"nbgrader": {"db_url": run.db_url, "assignment": assignment,
                              "notebook": assignment, "student": student}}
    nb = nbformat.read(path, as_version=4)
    SaveAutoGrades().preprocess(nb, resources)
    AssignLatePenalties(config=load_config()).preprocess(nb, resources)


def _lost(result, run):
    """The Outcome of a submission no worker could grade: 0 points, and why."""
    if isinstance(result, pool.Lost):
        outcome, how = result.task[1], (
            f"se superó el tiempo máximo por entrega ({result.attempts} intentos)"
            if result.overran else
            f"{result.attempts} intentos; " + (f"terminado por {result.signal_name}"
                                              if result.signal_name else
                                              f"código de salida {result.exitcode}"))
        status = Status.GRADER_CRASHED
    else:
        outcome, how = result.task[1], result.error.strip().splitlines()[-1]
        status = Status.GRADER_ERROR
    return not_graded(outcome, run, status, how)


def not_graded(outcome, run, status, detail):
    """The Outcome of a submission that a worker could not grade: 0 points, and why."""
    outcome = Outcome(outcome.student, outcome.assignment, status=status, detail=detail,
                      notes=outcome.notes)
    return ungraded(outcome, run)


def ungraded(outcome, run):
    """Nothing graded: zero points and a plain page, here, without a worker. A gradebook
    that cannot be read or a page that cannot be written is said in the outcome's detail:
    it stays this student's problem, the run goes on."""
    for step, why in ((lambda: read_scores(outcome, run.db_url), NOT_READ),
                      (lambda: plain_feedback(outcome, run.feedback_page(outcome)),
                       NO_PAGE)):
        try:
            step()
        except Exception as error:
            outcome.detail = f"{outcome.detail}; {why}: {_error_text(error)}".lstrip("; ")
    return outcome


NOT_RECORDED = "no se pudo registrar la nota en el libro de calificaciones"
NOT_READ = "no se pudo leer el libro de calificaciones"
NO_PAGE = "no se pudo escribir la página de comentarios"


def _error_text(error):
    return f"{type(error).__name__}: {error}"


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
