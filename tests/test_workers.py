"""The supervised pool: a task that kills its worker costs that task only."""

import os
import signal
import time

from autograder import workers


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


def test_every_task_finishes_whatever_its_neighbours_do(tmp_path):
    tasks = [("a", "ok"), ("b", "kill"), ("c", "ok"), ("d", "kill-once"), ("e", "raise"),
             ("f", "exit"), ("g", "ok")]
    seen = []
    results = workers.run(tasks, _task, args=(str(tmp_path),), workers=2,
                           done=lambda result: seen.append(result) or result)
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
