"""A process pool that outlives its workers: what one task does to its process (a kernel
that signals it, memory exhaustion, a grader bug that kills it) costs that task, never the
others. ``concurrent.futures.ProcessPoolExecutor`` breaks as a whole when one worker dies
(``BrokenProcessPool``); this pool replaces the dead worker, runs the task once more in a
fresh one, and reports it as lost if that dies too.

Workers are started with ``spawn`` (the parent may hold threads that a fork would copy), or
with ``preload`` forked from multiprocessing's fork server, a single-threaded process that
has imported those modules once (``start_seed`` starts it ahead of time); either way they
run ``function(*args, task)`` for each task, with the parent's environment and working
folder as they are when they start. Results and tasks travel pickled over pipes.
"""

import multiprocessing
import os
import pickle
import signal
import time
import traceback
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import wait

ATTEMPTS = 2  # a task whose worker dies is tried once more in a fresh worker
STOP_S = 5  # how long workers asked to stop may take to leave before they are killed


@dataclass
class Lost:
    """A task that no worker could finish: why, in plain data (the caller words it)."""

    task: object
    attempts: int
    exitcode: int | None  # negative: the signal that killed the last worker
    overran: bool = False  # killed by the pool after ``task_seconds``

    @property
    def signal_name(self):
        if self.exitcode is not None and self.exitcode < 0:
            try:
                return signal.Signals(-self.exitcode).name
            except ValueError:
                return f"señal {-self.exitcode}"
        return None


@dataclass
class Failed:
    """A task whose function raised in the worker (the worker itself is fine)."""

    task: object
    error: str


def _serve(connection, work, starter, environment, folder):
    """A worker's life: ``starter()``, then take a task, send back what ``function`` made
    of it, until None. ``work`` is (function, args) pickled: unpickling imports the
    function's module, which may take seconds that ``starter`` can use meanwhile."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # A fork server's are the parent's when the server started: take today's.
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(folder)
    if starter is not None:
        starter()
    function, args = pickle.loads(work)
    while True:
        try:
            task = connection.recv()
        except EOFError:
            return
        if task is None:
            return
        _, task = task  # (index, task): the index is the parent's bookkeeping
        try:
            result = function(*args, task)
        except Exception:  # noqa: BLE001 - reported to the parent as data, not raised
            result = Failed(task, traceback.format_exc())
        connection.send(result)


class _Worker:
    def __init__(self, context, function, args, starter):
        self.connection, child = context.Pipe()
        self.process = context.Process(
            target=_serve, args=(child, pickle.dumps((function, args)), starter,
                                 dict(os.environ), os.getcwd()), daemon=True)
        self.process.start()
        child.close()
        self.task, self.started = None, None

    def give(self, task):
        self.task, self.started = task, time.monotonic()
        self.connection.send(task)

    def ask_to_stop(self):
        try:
            self.connection.send(None)
        except OSError:
            pass

    def stop(self, deadline):
        """After ``ask_to_stop``: wait until ``deadline`` (monotonic) for it to leave."""
        self.process.join(max(0.0, deadline - time.monotonic()))
        if self.process.is_alive():
            self.process.kill()
            self.process.join()

    def kill(self):
        self.process.kill()
        self.process.join()


def _context(preload):
    if not preload or "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(preload))  # used when the server (re)starts
    return context


def start_seed(preload):
    """Start the fork server that ``run(..., preload=preload)`` forks workers from, without
    waiting for its imports: they go on while the caller works."""
    if _context(preload).get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


def seed_folder(preload):
    """The folder of the fork server's socket, once ``start_seed(preload)`` has started
    it (None with ``spawn``): anyone who can connect there can have code run in a fork of
    the seed, so kernels must not reach it."""
    if _context(preload).get_start_method() != "forkserver":
        return None
    from multiprocessing import forkserver

    forkserver.ensure_running()
    address = forkserver._forkserver._forkserver_address  # noqa: SLF001 - no public name
    return os.path.dirname(address) if isinstance(address, str) else None


def run(tasks, function, args=(), workers=1, done=None, task_seconds=None, starter=None,
        preload=()):
    """``function(*args, task)`` for every task, in ``workers`` processes; ``done(result)``
    as each finishes (a result, ``Failed`` or ``Lost``). Returns the results in task order.
    ``task_seconds``: a worker busy longer than that with one task is killed (the task is
    then retried once, like any task whose worker died). ``starter``: called first in each
    worker, before ``function``'s module is imported (a function of a light module).
    ``preload``: modules the fork server imports once; workers are forked from it."""
    context = _context(preload)
    queue = deque(enumerate(tasks))
    attempts, results = {}, {}
    pool = [_Worker(context, function, args, starter)
            for _ in range(max(1, min(workers, len(queue))))]
    try:
        while queue or any(w.task is not None for w in pool):
            for worker in pool:
                if worker.task is None and queue:
                    index, task = queue.popleft()
                    attempts[index] = attempts.get(index, 0) + 1
                    worker.give((index, task))
            busy = [w for w in pool if w.task is not None]
            waits = [w.connection for w in busy] + [w.process.sentinel for w in busy]
            wait(waits, timeout=_time_left(busy, task_seconds))
            for position, worker in enumerate(pool):
                if worker.task is None:
                    continue
                index, task = worker.task
                result = _collect(worker, task_seconds)
                if result is _BUSY:
                    continue
                if result is _DIED or result is _OVERRAN:
                    worker.kill()
                    pool[position] = _Worker(context, function, args, starter)
                    if attempts[index] < ATTEMPTS:
                        queue.appendleft((index, task))
                        continue
                    result = Lost(task, attempts[index], worker.process.exitcode,
                                  overran=result is _OVERRAN)
                else:
                    worker.task = None
                results[index] = done(result) if done else result
    finally:
        # All at once: each worker's exit (its interpreter's teardown) takes a while.
        for worker in pool:
            worker.ask_to_stop()
        deadline = time.monotonic() + STOP_S
        for worker in pool:
            worker.stop(deadline)
    return [results[i] for i in range(len(results))]


_BUSY, _DIED, _OVERRAN = object(), object(), object()


def _collect(worker, task_seconds):
    """The worker's result if it sent one, else whether it is still busy, dead or overdue."""
    if worker.connection.poll():
        try:
            return worker.connection.recv()
        except (EOFError, OSError):
            return _DIED
    if not worker.process.is_alive():
        return _DIED
    if task_seconds is not None and time.monotonic() - worker.started > task_seconds:
        return _OVERRAN
    return _BUSY


def _time_left(busy, task_seconds):
    if task_seconds is None or not busy:
        return None
    now = time.monotonic()
    return max(0.0, min(w.started + task_seconds - now for w in busy)) + 0.05
