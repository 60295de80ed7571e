"""The system-call filter (``autograder.seccomp_filter``, ``autograder.seccomp_watch``):
Linux refuses what grading never needs, and the grader, not the kernel, records it."""

import asyncio
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from autograder import sandbox, seccomp_filter
from autograder.execute import GradingExecute
from autograder.seccomp_watch import SeccompWatch, filter_in_place

# A process under the filter tries everything on the list a hostile cell would, and says
# what each attempt gave; nothing of it may succeed.
ATTEMPTS = r'''
import ctypes, json, os, subprocess, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
found = {}
def attempt(name, call):
    try:
        value = call()
        found[name] = "ok" if value in (None, 0) or (isinstance(value, int) and value > 0) \
            else f"error {ctypes.get_errno()}"
    except OSError as error:
        found[name] = f"error {error.errno}"
thread = threading.Thread(target=lambda: found.__setitem__("hilo", "ok"))
thread.start(); thread.join()
attempt("subprocess", lambda: subprocess.run(["/bin/true"]).returncode)
attempt("fork", os.fork)
attempt("libc_fork", libc.fork)
attempt("ptrace", lambda: libc.ptrace(16, os.getppid(), 0, 0))
attempt("execv", lambda: os.execv("/bin/true", ["true"]))
attempt("unshare", lambda: libc.unshare(0x10000000))
def own_filter():  # stacked, it would win over the grader's notifications
    import pyseccomp
    mine = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    mine.add_rule(pyseccomp.NOTIFY, "execve")
    mine.load()
attempt("own_filter", own_filter)
attempt("prctl_seccomp", lambda: libc.prctl(22, 2, 0, 0, 0))
print(json.dumps(found), flush=True)
os._exit(0)
'''
MUST_FAIL = ("subprocess", "fork", "libc_fork", "ptrace", "execv", "unshare", "own_filter",
             "prctl_seccomp")


def _under_filter(tmp_path, code):
    """Run ``code`` in a child that installed the filter, served by a watch here."""
    watch = SeccompWatch(tmp_path)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        os.close(read)
        sys.stdout = os.fdopen(write, "w", buffering=1)  # not pytest's capture
        try:
            seccomp_filter.install(str(watch.path))
            exec(compile(code, "<intento>", "exec"), {})
        finally:
            os._exit(1)
    os.close(write)
    assert watch.armed(30), watch.problem
    with os.fdopen(read) as out:
        text = out.read()
    os.waitpid(child, 0)
    watch.close()
    return watch, text


def test_blocked_calls_fail_and_the_grader_records_them(tmp_path):
    watch, text = _under_filter(tmp_path, ATTEMPTS)
    found = json.loads(text.strip().splitlines()[-1])
    assert found["hilo"] == "ok", "threads must keep working"
    for name in MUST_FAIL:
        assert found[name].startswith("error"), (name, found[name])
    assert {"vfork", "clone", "ptrace", "execve", "unshare", "seccomp",
            "prctl"} <= set(watch.blocked), watch.blocked
    assert watch.refusals >= len(MUST_FAIL)


def test_the_listener_never_stays_in_the_filtered_process(tmp_path):
    code = ("import os, sys\n"
            "kinds = [os.readlink(f'/proc/self/fd/{fd}') for fd in os.listdir('/proc/self/fd')"
            " if os.path.exists(f'/proc/self/fd/{fd}') or os.path.islink("
            "f'/proc/self/fd/{fd}')]\n"
            "print([k for k in kinds if 'seccomp' in k])\n")
    _, text = _under_filter(tmp_path, code)
    assert text.strip().splitlines()[-1] == "[]", text


def test_no_listener_means_not_armed(tmp_path):
    watch = SeccompWatch(tmp_path)
    try:
        assert not watch.armed(0.2)
    finally:
        watch.close()
    assert not filter_in_place(os.getpid())


def test_a_forged_listener_is_refused(tmp_path):
    """Whoever connects first must be a process Linux shows under a filter: a plain
    descriptor from an unfiltered process does not arm the watch."""
    import socket

    watch = SeccompWatch(tmp_path)
    with socket.socket(socket.AF_UNIX) as channel, open(os.devnull) as fake:
        channel.connect(str(watch.path))
        socket.send_fds(channel, [b"seccomp"], [fake.fileno()])
    assert not watch.armed(5)
    assert "no muestra el filtro" in watch.problem
    watch.close()
    assert not Path(watch.path).exists()


def test_without_a_socket_named_no_filter_is_loaded(monkeypatch):
    monkeypatch.delenv(seccomp_filter.SOCKET_ENV, raising=False)
    assert seccomp_filter.install() is False


@pytest.mark.slow
@pytest.mark.skipif(not sandbox.isolation().active, reason="bubblewrap is not available here")
@pytest.mark.parametrize("warm", ["1", "0"], ids=["warm", "cold"])
def test_a_grading_kernel_runs_under_the_filter(tmp_path, monkeypatch, warm):
    """With the in-kernel guard's table emptied (student code owns the interpreter), a
    process still cannot start: Linux refuses, and the grader's watch saw it."""
    monkeypatch.setenv("AUTOGRADER_WARM_KERNELS", warm)
    sys.path.insert(0, str(Path(__file__).parent))
    from test_warm_kernels import _started

    code = ("import gc, subprocess\n"
            "for o in gc.get_objects():\n"
            "    if type(o).__name__ == 'Guard' and hasattr(o, 'hook'):\n"
            "        o.hook.__func__.__globals__['BLOCKED_EVENTS'] = ('nada',)\n"
            "try:\n    subprocess.run(['/bin/true'])\n    print('EJECUTADO')\n"
            "except OSError as error:\n    print('bloqueado', error.errno)\n")

    async def go():
        manager, client = await _started(tmp_path)
        outputs = []
        try:
            assert manager.seccomp.armed(30), manager.seccomp.problem
            await client.execute_interactive(code, timeout=60, output_hook=outputs.append)
            return manager.seccomp.blocked, "".join(
                m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream")
        finally:
            client.stop_channels()
            await manager.shutdown_kernel(now=True)

    blocked, printed = asyncio.run(go())
    assert "bloqueado 1" in printed and "EJECUTADO" not in printed, printed
    assert blocked and set(blocked) <= {"vfork", "clone"}, blocked


@pytest.mark.slow
@pytest.mark.skipif(not sandbox.isolation().active, reason="bubblewrap is not available here")
def test_a_kernel_without_its_filter_grades_nothing(tmp_path, monkeypatch):
    """The executor asks the watch before the first cell: a kernel whose filter Linux does
    not show is a kernel that did not start, and no test cell scores."""
    import nbformat

    from autograder.execute import GradingExecute
    from autograder.facts import Facts

    monkeypatch.setattr(SeccompWatch, "armed", lambda self, timeout=0: False)
    cell = nbformat.v4.new_code_cell("x = 1")
    test = nbformat.v4.new_code_cell("assert x == 1")
    test.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True,
                                 "grade_id": "bien", "points": 1, "schema_version": 3}
    nb = nbformat.v4.new_notebook(cells=[cell, test])
    nb, _ = GradingExecute(kernel_name="autograder-hardened").preprocess(
        nb, {"metadata": {"path": str(tmp_path)}})
    assert Facts.read(nb).kernel_death == {"cell": None, "error": "RuntimeError"}
    assert [o.ename for o in nb.cells[1].outputs] == ["KernelMuerto"]


def test_every_refusal_is_attributed_however_many_came_before():
    """A kernel that loops on a blocked call in one exercise still has its next attempt,
    in the next exercise, attributed there (nothing is capped)."""
    counts = {}
    execute = GradingExecute()
    execute.km = SimpleNamespace(seccomp=SimpleNamespace(counts=lambda: dict(counts)))
    execute._syscalls_seen = {}
    counts.update(fork=5000, execve=1)
    assert execute._blocked_syscalls() == [{"kind": "syscall", "target": "fork"},
                                           {"kind": "syscall", "target": "execve"}]
    assert execute._blocked_syscalls() == []
    counts["fork"] += 1
    assert execute._blocked_syscalls() == [{"kind": "syscall", "target": "fork"}]
