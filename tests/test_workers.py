"""The supervised pool: a task that kills its worker costs that task only."""

import os
import signal
import time

import pytest

from autograder import grading_seed, workers

# The local grading pool's own way: workers forked from its seed (the fork server).
SEEDED = [grading_seed.PRELOAD]


def _task(marks, task):
    """Behaves as ``task`` says; ``marks``: a folder where each attempt leaves a file."""
    name, action = task
    attempt = len([p for p in os.listdir(marks) if p.startswith(name + ".")]) + 1
    open(os.path.join(marks, f"{name}.{attempt}"), "w").close()
    if action == "kill" or (action == "kill-once" and attempt == 1):
        os.kill(os.getpid(), signal.SIGKILL)
    if action == "exit":
        os._exit(3)
    if action == "raise":
        raise ValueError("roto")
    if action == "hang":
        time.sleep(60)
    return f"{name} ok ({attempt})"


@pytest.mark.parametrize("preload", [(), SEEDED], ids=["spawned", "forked from the seed"])
def test_every_task_finishes_whatever_its_neighbours_do(tmp_path, preload):
    tasks = [("a", "ok"), ("b", "kill"), ("c", "ok"), ("d", "kill-once"), ("e", "raise"),
             ("f", "exit"), ("g", "ok")]
    seen = []
    results = workers.run(tasks, _task, args=(str(tmp_path),), workers=2,
                           done=lambda result: seen.append(result) or result, preload=preload)
    assert results[0] == "a ok (1)" and results[2] == "c ok (1)" and results[6] == "g ok (1)"
    assert results[3] == "d ok (2)"  # retried once in a fresh worker
    lost = results[1]
    assert isinstance(lost, workers.Lost) and lost.attempts == 2
    assert lost.signal_name == "SIGKILL" and lost.task == ("b", "kill")
    assert isinstance(results[4], workers.Failed) and "ValueError: roto" in results[4].error
    assert isinstance(results[5], workers.Lost) and results[5].exitcode == 3
    assert len(seen) == len(tasks)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("b.")) == ["b.1", "b.2"]


def test_one_worker_survives_the_same(tmp_path):
    results = workers.run([("a", "kill"), ("b", "ok")], _task, args=(str(tmp_path),),
                          workers=1)
    assert isinstance(results[0], workers.Lost) and results[1] == "b ok (1)"


def test_a_task_over_its_time_is_killed_and_reported(tmp_path):
    started = time.monotonic()
    results = workers.run([("a", "hang"), ("b", "ok")], _task, args=(str(tmp_path),),
                          workers=2, task_seconds=2)
    assert isinstance(results[0], workers.Lost) and results[0].overran
    assert results[1] == "b ok (1)"
    assert time.monotonic() - started < 30


def _surroundings(task):
    return (os.environ.get("AG_MARCA"), os.getcwd(), os.getpid(), os.getppid(),
            len(os.listdir("/proc/self/task")))


def test_forked_workers_start_as_the_parent_is_now(tmp_path, monkeypatch):
    """The seed started before this test changed anything: its workers still get today's
    environment and working folder, and start single-threaded, from the seed."""
    workers.start_seed(SEEDED)
    monkeypatch.setenv("AG_MARCA", "hoy")
    monkeypatch.chdir(tmp_path)
    results = workers.run(["a", "b", "c"], _surroundings, workers=2, preload=SEEDED)
    assert {(mark, folder) for mark, folder, *_ in results} == {("hoy", str(tmp_path))}
    assert len({pid for _, _, pid, _, _ in results}) == 2
    assert {parent for *_, parent, _ in results} != {os.getpid()}  # the seed's children
    assert {threads for *_, threads in results} == {1}


def _threads(task):
    import torch

    return os.environ.get("OMP_NUM_THREADS"), torch.get_num_threads()


def test_workers_side_by_side_share_the_cores(monkeypatch):
    """Each of several grading workers, and its kernels, gets a share of the cores (more
    threads than cores slowed every kernel down); a set OMP_NUM_THREADS is left alone."""
    import functools

    from autograder.sandbox import shared_kernel_threads

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    assert [shared_kernel_threads(n) for n in (1, 2, 3, 8, 16)] == [None, 4, 2, 1, 1]
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert shared_kernel_threads(2) is None
    monkeypatch.delenv("OMP_NUM_THREADS")
    results = workers.run(["a", "b"], _threads, workers=2, preload=SEEDED,
                          starter=functools.partial(grading_seed.start_worker, 1))
    assert results == [("1", 1), ("1", 1)]
