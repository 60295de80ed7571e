"""The hardened kernel's guard, exercised in process (its hook is called, not installed)."""

import builtins

import pytest
import torch

from autograder.kernel import Guard, protected_paths


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
    guard.hook("autograder.manipulaciones", (report,))
    assert any("gradebook.db" in r for r in report) and any("submitted" in r for r in report)


def test_own_folder_and_libraries_stay_readable(guard):
    guard.hook("open", (str(guard.cwd / "datos.csv"), "r", 0))
    guard.hook("open", (torch.__file__, "r", 0))
    guard.hook("open", (3, "r", 0))  # file descriptors are not paths


def test_references_and_hidden_tests_are_protected(guard):
    names = {p.name for p in protected_paths(guard.cwd)}
    assert {"reference", "checks", "solutions", "gradebook.db", "course_secret.txt"} <= names


def test_processes_are_refused(guard):
    with pytest.raises(PermissionError):
        guard.hook("subprocess.Popen", ("ls", ["ls"], None, None))


def test_changed_attributes_are_named(guard, monkeypatch):
    assert guard.changed() == []
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(builtins, "abs", lambda x: 0)
    monkeypatch.setattr(torch.Tensor, "__eq__", lambda self, other: True, raising=False)
    changed = " ".join(guard.changed())
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
