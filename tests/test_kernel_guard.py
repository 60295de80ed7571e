"""The hardened kernel's guard, exercised in process (its hook is called, not installed)."""

import builtins
from pathlib import Path

import nbformat
import pytest
import torch

from autograder.kernel import Guard, protected_paths

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


@pytest.fixture
def guard(tmp_path):
    work = tmp_path / "course" / "autograded" / "alumna" / "01_grafo_dinamico"
    work.mkdir(parents=True)
    return Guard(work)


def test_private_course_files_are_refused_and_recorded(guard):
    course = guard.cwd.parents[2]
    with pytest.raises(PermissionError):
        guard.hook("open", (str(course / "gradebook.db"), "rb", 0))
    with pytest.raises(PermissionError):
        guard.hook("open", (str(course / "submitted" / "ana" / "x.ipynb"), "r", 0))
    report = []
    guard.hook("autograder.tampering", (report,))
    targets = [r["target"] for r in report if r["kind"] == "read"]
    assert any("gradebook.db" in t for t in targets) and any("submitted" in t for t in targets)


def test_own_folder_and_libraries_stay_readable(guard):
    guard.hook("open", (str(guard.cwd / "datos.csv"), "r", 0))
    guard.hook("open", (torch.__file__, "r", 0))
    guard.hook("open", (3, "r", 0))  # file descriptors are not paths


def test_references_and_hidden_tests_are_protected(guard):
    names = {p.name for p in protected_paths(guard.cwd)}
    assert {"hidden", "hidden.py", "variants.py", "solutions", "gradebook.db",
            "course_secret.txt"} <= names


def test_processes_are_refused(guard):
    with pytest.raises(PermissionError):
        guard.hook("subprocess.Popen", ("ls", ["ls"], None, None))


def test_changed_attributes_are_named(guard, monkeypatch):
    assert guard.changed() == []
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(builtins, "abs", lambda x: 0)
    monkeypatch.setattr(torch.Tensor, "__eq__", lambda self, other: True, raising=False)
    changed = " ".join(r["target"] for r in guard.changed())
    assert "torch.allclose" in changed and "builtins.abs" in changed
    assert "torch.Tensor.__eq__" in changed


def test_limits_are_reported():
    import subprocess
    import sys

    # In a child process: limits cannot be undone in this one.
    code = "from autograder.kernel import apply_limits; print(apply_limits())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120).stdout
    assert "RLIMIT_AS" in out and "RLIMIT_FSIZE" in out


def test_hidden_modules_cannot_be_imported_and_the_attempt_is_recorded(guard):
    with pytest.raises(PermissionError):
        guard.hook("import", ("autograder.hidden.reference", None, [], [], []))
    guard.hook("import", ("autograder.chapters.ch01.student", None, [], [], []))  # kernel side
    with pytest.raises(PermissionError):
        guard.hook("import", ("autograder.chapters.ch01.hidden", None, [], [], []))
    guard.hook("import", ("autograder.harness", None, [], [], []))
    report = []
    guard.hook("autograder.tampering", (report,))
    assert report == [{"kind": "import", "target": "autograder.hidden.reference"},
                      {"kind": "import", "target": "autograder.chapters.ch01.hidden"}]


def test_signals_reach_only_the_kernel_itself(guard):
    import os
    import signal

    guard.hook("os.kill", (os.getpid(), signal.SIGINT))
    for target in (os.getppid(), 1, -1, 0):
        with pytest.raises(PermissionError):
            guard.hook("os.kill", (target, signal.SIGKILL))


def test_inside_the_sandbox_attempts_are_noticed_by_the_path_as_written(tmp_path):
    work = tmp_path / "course" / "autograded" / "alumna" / "01_grafo_dinamico"
    work.mkdir(parents=True)
    guard = Guard(work, sandboxed=True)
    with pytest.raises(PermissionError):  # it does not exist there: noticed all the same
        guard.hook("open", (str(work / ".." / ".." / ".." / "gradebook.db"), "rb", 0))
    guard.hook("os.scandir", (str(work.parent),))  # the folders leading to its own
    guard.hook("open", (str(work / "notas.txt"), "r", 0))



EDGE_CELLS = ["\n\nx = 1\ny = 2", "\n\npwd", "pwd", "x = 1\n%time y = 2", "a = 1\nb?",
              "a = 1\n!ls", "def f():\n    return '?'\n# ¿qué?\n", "x = 1\r\ny = 2",
              "  x = 1\n  y = 2", "x = '\'\'\n%magic\n\'\'\'\n", "x = 1 \\\n  + 2\n",
              "%%time\nx = 1", ">>> x = 1\n>>> y = 2", "In [1]: x = 1\n", "await x\ny = 1",
              "x = 1\ny;", "a = %who_ls\nb = 2", "files = !ls\nn = 1"]


def test_the_kernels_cell_transform_is_ipythons(tmp_path):
    """``kernel.plain_python_first`` gives exactly what IPython gives, on every code cell of
    the student notebooks and on cells with IPython's own syntax."""
    from IPython.core.interactiveshell import InteractiveShell

    from autograder.kernel import plain_python_first

    shell = InteractiveShell.instance()
    fast = plain_python_first(InteractiveShell.transform_cell)
    cells = [c.source for path in sorted(NOTEBOOKS.glob("*.ipynb"))
             for c in nbformat.read(path, 4).cells if c.cell_type == "code"]
    assert len(cells) > 100
    for cell in cells + EDGE_CELLS:
        assert fast(shell, cell) == shell.transform_cell(cell), cell[:200]
    def upper(lines):
        return [line.upper() for line in lines]

    for added in (shell.input_transformers_post, shell.input_transformers_cleanup):
        added.append(upper)  # a notebook may add its own: then IPython's way, always
        try:
            assert fast(shell, "x = 1\ny = 2") == "X = 1\nY = 2\n"
        finally:
            added.pop()


def test_the_kernels_coroutine_check_is_ipythons():
    """``kernel.no_await_no_compile`` answers as IPython's ``should_run_async`` does, on every
    code cell of the student notebooks and on cells that await (or look as if they did)."""
    from IPython.core.interactiveshell import InteractiveShell

    from autograder.kernel import no_await_no_compile

    shell = InteractiveShell.instance()
    fast = no_await_no_compile(InteractiveShell.should_run_async)
    cells = [c.source for path in sorted(NOTEBOOKS.glob("*.ipynb"))
             for c in nbformat.read(path, 4).cells if c.cell_type == "code"]
    awaiting = ["await f()", "import asyncio\nawait asyncio.sleep(0)",
                "async with a as b:\n    pass", "async for x in y:\n    pass",
                "x = 'ejecútala'\nawait f()", "ａｗａｉｔ f()", "ａｓｙｎｃ for x in y: pass",
                "async def f():\n    await g()", "x = 'await'", "%time await f()"]
    answers = set()
    for cell in cells + EDGE_CELLS + awaiting:
        for failed in (None, (SyntaxError, SyntaxError("x"), None)):
            kwargs = {"transformed_cell": shell.transform_cell(cell),
                      "preprocessing_exc_tuple": failed}
            expected = shell.should_run_async(cell, **kwargs)
            assert fast(shell, cell, **kwargs) == expected, cell[:200]
            answers.add(expected)
    assert answers == {True, False}


def test_the_kernels_cell_transform_remembers_only_the_last_cell():
    """ipykernel transforms each cell twice; the second answer is the first's, and the next
    cell is transformed anew."""
    from IPython.core.interactiveshell import InteractiveShell

    from autograder.kernel import plain_python_first

    shell = InteractiveShell.instance()
    fast = plain_python_first(InteractiveShell.transform_cell)
    for cell in ["\n\nx = 1\ny = 2", "x = 3\ny = 4\n", "\n\nx = 1\ny = 2", "pwd"]:
        assert fast(shell, cell) == fast(shell, cell) == shell.transform_cell(cell)


def test_the_workers_seed_cannot_be_reached_from_a_kernel(tmp_path):
    """Whoever connects to the fork server's socket can have code run in a fork of the seed,
    outside the guard: the pool makes its folder private (without the sandbox, a kernel
    could otherwise find it in /tmp), and the guard refuses connections there."""
    import socket

    from autograder import grading_seed, workers
    from autograder.grading import GradeRun
    from autograder.parallel import with_seed_private

    seed = workers.seed_folder([grading_seed.PRELOAD])
    listener = next(Path(seed).glob("listener-*"))
    run = GradeRun(tmp_path / "course", tmp_path / "notas", "sqlite://", private=(tmp_path,))
    assert with_seed_private(run).private == (tmp_path, Path(seed))
    guard = Guard(tmp_path, also_protected=[Path(seed)])
    with pytest.raises(PermissionError):
        guard.hook("socket.connect", (socket.socket(socket.AF_UNIX), str(listener)))
    guard.hook("socket.connect", (None, ("127.0.0.1", 80)))  # not a path: not this rule
    assert {"kind": "read", "target": str(listener)} in guard.refused
