"""Grading on a Dask cluster: a real scheduler and two worker processes (each under a
nanny, which restarts it) on localhost, and a real PostgreSQL server. The cluster gives the
grades, gradebook rows and feedback pages of one machine, also when one worker is killed
mid-run; a task that kills every worker it touches ends as that student's ``grader
crashed`` while the others finish."""

import os
import shutil
import signal
import subprocess
import sys
import time

import nbformat
import pytest
from debian import free_port  # tests/debian.py
from postgres import Server  # tests/postgres.py

from autograder import parallel
from autograder.__main__ import main
from autograder.course import DB_URL_ENV, ROOT, sqlite_gradebook
from autograder.dask_pool import DaskPool, SchedulerUnreachable, _why, run_tasks
from autograder.export import gradebook_outcomes
from autograder.outcome import Status
from autograder.pipeline import grade, prepare_course
from autograder.sample_class import SAMPLE_CLASS, submission

distributed = pytest.importorskip("distributed")
FIRST = "01_grafo_dinamico"
STUDENTS = ("ana", "fede")  # full marks; a kernel that dies (restarted), partial marks
SECRET = "secreto-del-cluster"


def _start(command, log, env):
    # A session of its own: teardown kills the whole group, kernels included.
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(scheduler address, client, the workers' temporary folder): a scheduler and two
    workers of one thread each, run with this Python and this checkout; a task may kill one
    worker and be run again, not two (``allowed-failures`` 1, to keep the test short)."""
    folder = tmp_path_factory.mktemp("dask")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")]), "TMPDIR": str(folder),
        "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1"}
    env.pop("COURSE_SECRET", None)  # the workers get the secret with each task
    dask = [sys.executable, "-m", "dask"]
    processes = []
    with open(folder / "cluster.log", "w") as log:
        try:
            processes.append(_start([*dask, "scheduler", "--host", "127.0.0.1", "--port",
                                     str(port), "--no-dashboard"], log, env))
            for name in ("w1", "w2"):
                processes.append(_start(
                    [*dask, "worker", address, "--name", name, "--nworkers", "1",
                     "--nthreads", "1", "--no-dashboard", "--memory-limit", "0",
                     "--local-directory", str(folder / name)], log, env))
            client = distributed.Client(address, timeout=60, set_as_default=False)
            client.wait_for_workers(2, timeout=60)
            yield address, client, folder
            client.close()
        finally:
            for process in processes:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait()


@pytest.fixture(scope="module")
def postgres(tmp_path_factory):
    server = Server(tmp_path_factory.mktemp("postgres")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module", autouse=True)
def chapter_one():
    """Chapter 1 alone (a course builds in seconds), the class's secret (the workers are
    started without it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AUTOGRADER_CHAPTERS", "01")
        patch.setenv("COURSE_SECRET", SECRET)
        yield


@pytest.fixture(scope="module")
def submissions(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    prepare_course(root / "course")
    source, release = (nbformat.read(root / "course" / kind / FIRST / f"{FIRST}.ipynb", 4)
                       for kind in ("source", "release"))
    for student in SAMPLE_CLASS[FIRST]:
        if student.student_id in STUDENTS:
            path = root / "small" / student.student_id / FIRST / f"{FIRST}.ipynb"
            path.parent.mkdir(parents=True)
            nbformat.write(submission(student, source, release), path)
    return root / "small"


@pytest.fixture(scope="module")
def one_machine(submissions, tmp_path_factory):
    """The grades folder of the same class graded here, by ``LocalPool``."""
    out = tmp_path_factory.mktemp("one") / "out"
    grade(submissions, out, course_dir=out.parent / "course", timeout=10, progress=None,
          workers=2)
    return out


def scores(outcomes):
    return {(o.student, o.assignment): o.scores for o in outcomes}


def kill_a_busy_worker(client, seconds_into_task=2.0, patience=120):
    """SIGKILL a worker process that has been grading for ``seconds_into_task``; its pid."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        busy = [address for address, keys in client.processing().items() if keys]
        if busy:
            time.sleep(seconds_into_task)
            if client.processing().get(busy[0]):
                pid = client.run(os.getpid, workers=busy[:1])[busy[0]]
                os.kill(pid, signal.SIGKILL)
                return pid
        time.sleep(0.2)
    raise AssertionError("no worker started grading")


@pytest.mark.slow
def test_a_cluster_with_a_worker_killed_mid_run_grades_as_one_machine(
        cluster, postgres, submissions, one_machine, tmp_path):
    address, client, workers_tmp = cluster
    url = postgres.create_database("curso_dask")
    out = tmp_path / "out"
    run = subprocess.Popen(
        [sys.executable, "-m", "autograder", "grade", "--submissions", str(submissions),
         "--scheduler", address, "--db-url", url, "--course-dir", str(tmp_path / "course"),
         "--out", str(out), "--timeout", "10", "--lines"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        killed = kill_a_busy_worker(client)
        log = run.communicate(timeout=300)[0]
    finally:
        run.kill()
    assert run.returncode == 0, log
    alive = client.run(os.getpid).values()
    assert killed not in alive
    # The workers alive removed their private copies of the course (the killed one could not).
    assert not {f"worker-{pid}" for pid in alive} & {
        p.name for p in workers_tmp.glob("autograder-dask-*/worker-*")}
    # Every student graded as on one machine: statuses, points, feedback pages.
    assert (out / "grades.csv").read_text() == (one_machine / "grades.csv").read_text()
    for student in STUDENTS:
        page = f"feedback/{student}/{FIRST}.html"
        assert (out / page).read_bytes() == (one_machine / page).read_bytes(), page
    assert scores(gradebook_outcomes(url)) == scores(
        gradebook_outcomes(sqlite_gradebook(one_machine.parent / "course")))


def test_a_student_whose_output_cannot_be_written_on_the_cluster_loses_only_that(
        cluster, postgres, submissions, tmp_path):
    """As on the local pool (tests/test_grader_faults.py): fede's feedback folder is a file,
    so the worker fails writing his page and so does the plain page written here."""
    address, client, _ = cluster
    client.wait_for_workers(2, timeout=60)
    out = tmp_path / "out"
    (out / "feedback").mkdir(parents=True)
    (out / "feedback" / "fede").write_text("en medio")
    graded = grade(submissions, out, course_dir=tmp_path / "course", timeout=10,
                   progress=None, db_url=postgres.create_database("curso_dask_fallo"),
                   executor=DaskPool(address))
    by_name = {o.student: o for o in graded}
    assert by_name["ana"].status == Status.GRADED and by_name["ana"].score > 0
    assert by_name["fede"].status == Status.GRADER_ERROR, by_name["fede"].detail
    assert parallel.NO_PAGE in by_name["fede"].detail
    assert "fede" in (out / "grades.csv").read_text()


@pytest.mark.slow
def test_a_task_that_kills_every_worker_it_touches_is_grader_crashed(cluster):
    _, client, _ = cluster
    client.wait_for_workers(2, timeout=60)  # the worker killed above is back
    results = sorted(run_tasks(client, eval, [("__import__('os')._exit(1)",), ("6 * 7",)]),
                     key=lambda result: result[0])
    (_, _, error), (_, answer, no_error) = results
    assert (answer, no_error) == (42, None)
    status, detail = _why(error)
    assert status == Status.GRADER_CRASHED and detail.startswith("2 intentos"), detail


@pytest.mark.slow
def test_a_task_cancelled_on_the_cluster_is_said_and_the_rest_finish(cluster):
    import threading
    import uuid

    from autograder.dask_pool import TaskCancelled

    _, client, _ = cluster
    client.wait_for_workers(2, timeout=60)
    key = f"lenta-{uuid.uuid4().hex}"

    def cancel_it():  # as the dashboard or another client would, while it runs
        time.sleep(2)
        client.cancel([distributed.Future(key, client)])

    threading.Thread(target=cancel_it, daemon=True).start()
    calls = [("__import__('time').sleep(30)",), ("6 * 7",)]
    results = sorted(run_tasks(client, eval, calls, keys=[key, f"rapida-{key}"]),
                     key=lambda result: result[0])
    (_, _, error), (_, answer, no_error) = results
    assert (answer, no_error) == (42, None)
    assert isinstance(error, TaskCancelled)
    status, detail = _why(error)
    assert status == Status.GRADER_ERROR and "se canceló" in detail, detail


@pytest.mark.parametrize("options, says", [
    ([], "--db-url postgresql://"),
    (["--db-url", "postgresql://x@127.0.0.1:1/curso", "--shard", "1/2"], "--shard"),
])
def test_the_cli_refuses_a_scheduler_without_a_server_gradebook_or_with_a_shard(
        options, says, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(DB_URL_ENV, raising=False)
    code = main(["grade", "--submissions", str(tmp_path), "--scheduler", "tcp://127.0.0.1:1",
                 "--course-dir", str(tmp_path / "course"), *options])
    assert code == 2 and says in capsys.readouterr().err
    assert not (tmp_path / "course").exists()  # refused before anything was written


def test_no_scheduler_at_the_address_is_said_in_spanish():
    with pytest.raises(SchedulerUnreachable, match="No responde ningún planificador"):
        DaskPool(f"tcp://127.0.0.1:{free_port()}", connect_timeout=1)._client()


def test_a_gradebook_outage_mid_run_on_the_cluster_costs_only_the_students_graded_during_it(
        cluster, postgres, submissions, tmp_path):
    """As on the local pool (tests/test_grader_faults.py): once the first student is graded
    the PostgreSQL gradebook refuses every connection until the run ends."""
    address, client, _ = cluster
    client.wait_for_workers(2, timeout=60)
    name = "curso_dask_caido"
    url = postgres.create_database(name)
    down = []
    # Four copies of ana: at most one other is being graded when the gradebook goes down.
    students = ("ana", "bea", "carla", "dani")
    for student in students:
        folder = tmp_path / "class" / student / FIRST
        folder.mkdir(parents=True)
        shutil.copy(submissions / "ana" / FIRST / f"{FIRST}.ipynb", folder)

    def progress(line):
        if not down and line.startswith("  "):  # the first student graded
            postgres._run("psql", "-h", "127.0.0.1", "-p", str(postgres.port), "-U",
                          "postgres", "-d", "postgres", "-c",
                          f"ALTER DATABASE {name} ALLOW_CONNECTIONS false", "-c",
                          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          f"WHERE datname = '{name}'")
            down.append(line)

    graded = grade(tmp_path / "class", tmp_path / "out", course_dir=tmp_path / "course",
                   timeout=10, progress=progress, db_url=url, executor=DaskPool(address))
    statuses = [o.status for o in graded]
    assert down and Status.GRADED in statuses and Status.GRADER_ERROR in statuses, statuses
    assert sorted(o.student for o in graded) == list(students)
    for outcome in graded:
        if outcome.status == Status.GRADER_ERROR:
            assert outcome.score == 0 and "connections" in outcome.detail, outcome.detail
    rows = (tmp_path / "out" / "grades.csv").read_text()
    assert all(student in rows for student in students)
