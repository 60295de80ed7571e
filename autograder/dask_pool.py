"""Grade a run's submissions on a Dask cluster (``dask.distributed``): ``DaskPool(address)``
is an executor for ``autograder.pipeline.grade``, like ``parallel.LocalPool``, and what
``python -m autograder grade --scheduler ADDRESS`` uses.

Each submission is one task; a worker grades it exactly as a ``LocalPool`` worker does
(``parallel.grade_task``: a private copy of the course in the worker's own temporary
folder, ``grade_one``, then autograded/ and feedback/ moved back into the course), so the
outcomes, feedback pages and gradebook rows are the same. The scheduler balances the tasks
(work stealing) and shows them on its dashboard.

What the cluster's workers need:
- this project installed at the same version (tasks travel as references to its functions);
- the course folder, the submissions and the grades folder at the same paths as on the
  machine that runs ``grade`` (a shared filesystem): workers read the course and write the
  autograded notebooks and feedback pages there;
- a server gradebook (PostgreSQL) that every worker reaches: they write grades to it
  directly (``grade`` refuses a sqlite one: one file takes no writers on many machines);
- bubblewrap, as on one machine (the sandbox of each kernel); with
  ``AUTOGRADER_SANDBOX=required`` in a worker's environment it grades nothing without it;
- one thread per worker process (``dask worker --nthreads 1``): a process grades one
  submission at a time (more threads only wait for each other).
The course secret (hidden inputs derive from it) travels with each task, so every worker
uses the secret of the machine that runs ``grade``: off a trusted network, use ``tls://``.

A worker that dies while grading (a kernel that kills it, the machine lost) costs nothing:
the scheduler runs its task again on another worker, up to the scheduler's
``distributed.scheduler.allowed-failures`` (default 3) deaths; a submission that killed
that many workers is ``grader crashed`` and the rest of the class is graded. A task
cancelled on the cluster (from the dashboard, another client) is a ``grader error`` that
says so, and the rest of the class is graded too. Unlike
``LocalPool`` there is no limit on one submission's total time, only the per-cell one.
"""

import os
import tempfile
import threading
import traceback
import uuid
from pathlib import Path

from autograder import parallel
from autograder.hidden.seeds import SECRET_ENV, course_secret
from autograder.outcome import Status

# One private course folder per worker process: a worker's threads grade in turn.
_one_at_a_time = threading.Lock()


class SchedulerUnreachable(RuntimeError):
    """No Dask scheduler answered at the address given."""


class TaskCancelled(RuntimeError):
    """A task was cancelled on the cluster before it finished."""


class DaskPool:
    """Grade a run's submissions on the Dask cluster whose scheduler is at ``address``
    (e.g. ``tcp://host:8786``)."""

    isolates_itself = True  # each worker requires its own sandbox (``_grade_on_worker``)

    def __init__(self, address, connect_timeout=30):
        self.address, self.connect_timeout = address, connect_timeout

    def grade(self, run, outcomes, done):
        """Grade the collected ``outcomes`` of ``run`` (a ``grading.GradeRun``);
        ``done(outcome)`` as each finishes. Returns them in the order given."""
        if parallel.own_gradebook(run):
            raise ValueError("Calificar en un clúster de Dask requiere un libro de "
                             "calificaciones en un servidor (--db-url postgresql://…).")
        readable = [o for o in outcomes if o.status != Status.UNREADABLE]
        finished = {id(o): done(parallel.ungraded(o, run))
                    for o in outcomes if o.status == Status.UNREADABLE}
        token = uuid.uuid4().hex[:12]
        root = f"autograder-dask-{token}"  # in each worker's own temporary folder
        secret = course_secret(run.course_dir)
        with self._client() as client:
            try:
                keys = [f"calificar-{o.student}-{o.assignment}-{token}" for o in readable]
                calls = [(run, root, secret, o) for o in readable]
                for index, result, error in run_tasks(client, _grade_on_worker, calls, keys):
                    outcome = readable[index]
                    if error is not None:
                        result = parallel.not_graded(outcome, run, *_why(error))
                    finished[id(outcome)] = done(result)
            finally:
                client.run(_forget_on_worker, root, on_error="ignore")
        return [finished[id(o)] for o in outcomes]

    def _client(self):
        from distributed import Client

        try:
            return Client(self.address, timeout=self.connect_timeout, set_as_default=False)
        except (OSError, TimeoutError) as error:
            raise SchedulerUnreachable(
                f"No responde ningún planificador de Dask en {self.address}: {error}") from error


def run_tasks(client, function, calls, keys=None):
    """``function(*call)`` for every call, as tasks on ``client``'s cluster; yields
    ``(index, result, None)`` or ``(index, None, error)`` as each finishes (``error``: the
    exception it raised, or ``distributed.KilledWorker`` when every worker that ran it died).
    """
    from distributed import as_completed

    futures = {client.submit(function, *call, key=key, pure=False): index
               for index, (call, key) in enumerate(zip(calls, keys or [None] * len(calls)))}
    for future in as_completed(futures, loop=client.loop):
        index = futures.pop(future)
        if future.status == "finished":
            yield index, future.result(), None
        elif future.status == "cancelled":  # from the dashboard, another client, a restart
            yield index, None, TaskCancelled(future.key)
        else:
            yield index, None, future.exception()
        future.release()


def _why(error):
    """(status, detail) of a submission whose task ended in ``error``."""
    from distributed import KilledWorker

    if isinstance(error, KilledWorker):
        return Status.GRADER_CRASHED, (f"{error.allowed_failures + 1} intentos; murió el "
                                       "trabajador de Dask que la calificaba en cada uno")
    if isinstance(error, TaskCancelled):
        return Status.GRADER_ERROR, ("su tarea se canceló en el clúster de Dask antes de "
                                     "terminar; califícala de nuevo (grade --student ID)")
    return Status.GRADER_ERROR, traceback.format_exception_only(error)[-1].strip()


def _grade_on_worker(run, root, secret, outcome):
    """On a Dask worker: grade one submission as a ``LocalPool`` worker does."""
    from autograder.sandbox import require_isolation

    require_isolation()  # this machine's AUTOGRADER_SANDBOX, not the one that runs grade's
    with _one_at_a_time:
        os.environ[SECRET_ENV] = secret
        return parallel.grade_task(run, str(Path(tempfile.gettempdir()) / root), outcome)


def _forget_on_worker(root):
    with _one_at_a_time:
        parallel.forget_folder(str(Path(tempfile.gettempdir()) / root))
