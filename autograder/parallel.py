"""Grade submissions in worker processes, each in a working folder of its own.

A worker grades exactly as ``pipeline.grade_one`` does sequentially, in a private copy
of the course (source, release, configuration, secret) so that nbgrader's folders and,
with the default sqlite file, its gradebook are never shared between processes. What a
worker produces goes back to the course: the autograded notebook and the feedback are
moved into place, and its grades are recorded in the course gradebook by replaying
nbgrader's own ``SaveAutoGrades`` on the autograded notebook. With a server gradebook
(``db_url``, PostgreSQL) every worker writes to it directly and nothing is replayed.
"""

import concurrent.futures
import multiprocessing
import os
import shutil
import tempfile
from pathlib import Path

import nbformat

from autograder.checks.seeds import SECRET_FILE
from autograder.course import gradebook_url, nbgrader_api

_worker = {}  # per worker process: its folder and NbGraderAPI


def _folder(course_dir, root, timeout, db_url):
    """This process's private course folder (made on its first submission)."""
    if "folder" not in _worker:
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


def _grade_task(course_dir, root, outcome, out_dir, timeout, db_url):
    """In a worker: grade one submission, then hand its folders back to the course."""
    import warnings

    from autograder.pipeline import grade_one

    warnings.filterwarnings("ignore", message=".*not in session.*")
    folder, api = _folder(course_dir, root, timeout, db_url)
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


def grade_in_workers(outcomes, course_dir, out_dir, timeout, db_url, workers, done):
    """Grade ``outcomes`` in ``workers`` processes; ``done(outcome)`` as each finishes.
    Returns them in the order given (the order sequential grading uses)."""
    course_dir, out_dir = Path(course_dir).resolve(), Path(out_dir).resolve()
    finished = {}
    # spawn, not fork: the parent may hold threads (torch, zmq) that a fork would copy.
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="autograder-workers-") as root, \
            concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = {pool.submit(_grade_task, course_dir, root, o, out_dir, timeout, db_url): i
                   for i, o in enumerate(outcomes)}
        for future in concurrent.futures.as_completed(futures):
            outcome = future.result()
            if db_url is None:
                record_grades(course_dir, outcome)
            finished[futures[future]] = done(outcome)
    return [finished[i] for i in range(len(outcomes))]
