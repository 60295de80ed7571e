"""The OS sandbox of grading kernels, and the fallback when it is not available."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import sandbox
from autograder.course import ROOT
from autograder.outcome import Status


def test_isolation_can_be_turned_off_and_says_so(monkeypatch):
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "off")
    found = sandbox.isolation()
    assert not found.active and "NO activo" in found.words()
    assert "NO activo" in sandbox.protections()[0]


def test_without_bubblewrap_the_summary_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    found = sandbox.isolation()
    assert not found.active and "apt install bubblewrap" in found.detail
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "required")  # then grading refuses to start
    with pytest.raises(RuntimeError, match="required"):
        sandbox.require_isolation()


@pytest.mark.parametrize("mode", [None, "auto", "required"])
def test_the_library_refuses_unsandboxed_grading_unless_told(monkeypatch, tmp_path, mode):
    """``pipeline.grade`` (and a Dask worker, through ``require_isolation``) in every mode but
    ``off``: the CLI's refusal is not the only one."""
    from autograder.pipeline import grade

    if mode is None:
        monkeypatch.delenv(sandbox.SANDBOX_ENV, raising=False)
    else:
        monkeypatch.setenv(sandbox.SANDBOX_ENV, mode)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="apt install bubblewrap"):
        grade(tmp_path / "entregas", tmp_path / "notas", course_dir=tmp_path / "curso")
    assert not (tmp_path / "notas").exists() and not (tmp_path / "curso").exists()
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "off")
    assert not sandbox.require_isolation().active


def test_grade_refuses_to_start_unsandboxed_unless_told(monkeypatch, tmp_path, capsys):
    from autograder.__main__ import main

    monkeypatch.delenv(sandbox.SANDBOX_ENV, raising=False)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert main(["grade", "--submissions", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    said = capsys.readouterr().err
    assert "apt install bubblewrap" in said and "--no-sandbox" in said
    assert not (tmp_path / "o").exists()  # nothing started
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "off")  # the instructor's explicit choice
    assert main(["grade", "--submissions", str(tmp_path / "ninguna"), "--out",
                 str(tmp_path / "o"), "--student", "x"]) == 2  # past the check: no such student
    assert "No submissions" in capsys.readouterr().err
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "auto")  # restored after the test
    assert main(["grade", "--submissions", str(tmp_path / "ninguna"), "--out",
                 str(tmp_path / "o"), "--student", "x", "--no-sandbox"]) == 2
    assert os.environ[sandbox.SANDBOX_ENV] == "off"  # what the workers inherit


def test_an_environment_under_tmp_is_mounted_over_the_private_tmp(tmp_path, monkeypatch):
    venv = Path("/tmp/clone/.venv")  # CI or a user may keep the clone and its venv in /tmp
    monkeypatch.setattr(sandbox, "_python_dirs", lambda: [venv])
    argv = sandbox.bwrap_argv("bwrap", tmp_path, tmp_path / "k")
    binds = [i for i, a in enumerate(argv) if a == "--ro-bind" and argv[i + 1] == str(venv)]
    assert binds and binds[0] > argv.index("--tmpfs")


def test_the_command_line_isolates_everything(tmp_path):
    argv = sandbox.bwrap_argv("bwrap", tmp_path, tmp_path / "k")
    for option in ("--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
                   "--new-session", "--clearenv"):
        assert option in argv
    assert argv[argv.index("--tmpfs") - 2:argv.index("--tmpfs")] == [
        "--size", str(sandbox.TMP_BYTES)]
    mounted = [argv[i + 2] for i, a in enumerate(argv) if a in ("--ro-bind", "--bind")]
    assert str(tmp_path) in mounted and "/home" not in mounted and "/root" not in mounted
    package = sandbox.PACKAGE_DIR
    assert not [m for m in mounted if m.startswith(str(package))]  # only the kernel side...
    inside = {m.removeprefix(sandbox.KERNEL_PACKAGE_ROOT + "/autograder/") for m in mounted
              if m.startswith(sandbox.KERNEL_PACKAGE_ROOT)}
    assert {"kernel.py", "harness.py", "student", "chapters/ch01/student.py"} <= inside
    assert not [m for m in inside if "hidden" in m or "variants" in m or "corpus" in m]


def test_a_gpu_is_bound_into_the_sandbox_only_where_its_devices_exist(tmp_path, monkeypatch):
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "null").touch()
    (dev / "dri").mkdir()  # DRM alone (an integrated GPU) is no reason to bind anything
    assert sandbox._gpu_args(dev) == []
    gpu = ("nvidia0", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-caps", "dri")
    for name in gpu[:-2]:
        (dev / name).touch()
    (dev / "nvidia-caps").mkdir()
    args = sandbox._gpu_args(dev)
    bound = {args[i + 2]: args[i + 1] for i, a in enumerate(args) if a == "--dev-bind"}
    assert bound == {f"/dev/{name}": str(dev / name) for name in gpu}
    assert args[-3:] == ["--ro-bind", "/sys", "/sys"] and "--bind" not in args
    # In the kernel's command line: after the minimal /dev they are bound into.
    monkeypatch.setattr(sandbox, "_gpu_args", lambda: args)
    argv = sandbox.bwrap_argv("bwrap", tmp_path, tmp_path / "k")
    assert argv.index("--dev") < argv.index("--dev-bind") < argv.index("--tmpfs")
    monkeypatch.setattr(sandbox, "_gpu_args", lambda: [])
    assert "--dev-bind" not in sandbox.bwrap_argv("bwrap", tmp_path, tmp_path / "k")


@pytest.mark.skipif(not sandbox.isolation().active, reason="bubblewrap is not available here")
def test_a_sandboxed_process_sees_only_what_it_should(tmp_path):
    work, kernel_dir = tmp_path / "trabajo", tmp_path / "kernel"
    work.mkdir()
    kernel_dir.mkdir()
    sandbox._prepare_kernel_dir(kernel_dir)
    probe = ("import os, json, socket\n"
             "found = {'pid': os.getpid(), 'procs': sorted(p for p in os.listdir('/proc')"
             " if p.isdigit()), 'root': sorted(os.listdir('/')),"
             " 'home': os.path.exists('/root') and os.listdir('/root'),"
             " 'user': __import__('getpass').getuser(),"
             f" 'repository': os.path.isdir({str(ROOT)!r})"
             f" and os.listdir({str(ROOT)!r}) or None}}\n"
             "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2); net = True\n"
             "except OSError:\n    net = False\n"
             "found['net'] = net\n"
             "import autograder.student, autograder.kernel\n"
             "try:\n    import autograder.chapters.ch01.hidden\n    found['checks'] = True\n"
             "except ImportError:\n    found['checks'] = False\n"
             "print(json.dumps(found))\n")
    argv = sandbox.bwrap_argv(shutil.which("bwrap"), work, kernel_dir)
    out = subprocess.run(argv + [sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120, cwd=work)
    assert out.returncode == 0, out.stderr
    import json

    found = json.loads(out.stdout)
    assert found["procs"] == ["1", "2"] and found["pid"] == 2  # its own PID namespace
    assert not found["net"] and not found["checks"] and found["user"] == sandbox.USER
    assert found["home"] in (False, [".pyenv"])  # at most the way to the interpreter
    python_tops = {p.parts[1] for p in sandbox._python_dirs()}
    assert set(found["root"]) <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "opt",
                                  "proc", "sbin", "tmp", "usr", *python_tops}
    assert found["repository"] in (None, [".venv"])  # at most a virtualenv kept inside it


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="not run from a virtualenv")
def test_a_virtualenv_reached_through_a_link_is_still_sandboxed(tmp_path):
    """``.venv`` as a link to a shared venv: the kernel is started by the linked name, so the
    sandbox must have that name too (it once failed there and fell back to the guard)."""
    linked = tmp_path / "venv-enlazado"
    linked.symlink_to(Path(sys.prefix).resolve(), target_is_directory=True)
    python = linked / "bin" / Path(sys.executable).name
    probe = ("from autograder.sandbox import isolation\n"
             "found = isolation(); print(found.active, found.detail)\n")
    env = {k: v for k, v in os.environ.items() if k != sandbox.SANDBOX_ENV}
    out = subprocess.run([str(python), "-c", probe], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("True "), out.stdout


@pytest.mark.slow
def test_without_the_sandbox_grading_still_holds_with_the_guard(tmp_path, monkeypatch):
    """Fallback: kernels start unsandboxed, the summary says so, the guard refuses the
    workers' folders and signals, and the class is graded."""
    from autograder.adversarial import ASSIGNMENT, HOSTILE_CASES, SEED_CASE, write_corpus
    from autograder.pipeline import grade, prepare_course
    from autograder.sample_class import SAMPLE_CLASS, submission

    monkeypatch.setenv(sandbox.SANDBOX_ENV, "off")
    course = tmp_path / "course"
    prepare_course(course)
    cases = [c for c in HOSTILE_CASES if c.student_id in ("copia_de_otro", "mata_padre")]
    cases.append(SEED_CASE)
    submissions = write_corpus(course, tmp_path / "submissions", cases)
    honest = SAMPLE_CLASS[ASSIGNMENT][0]
    source = nbformat.read(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    folder = submissions / honest.student_id / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(submission(honest, source, release), folder / f"{ASSIGNMENT}.ipynb")
    said = []
    graded = {o.student: o for o in grade(submissions, tmp_path / "out", course_dir=course,
                                          timeout=20, progress=said.append, workers=1)}
    assert any("NO activo" in line for line in said)
    assert graded[honest.student_id].score == 8
    copier = graded["copia_de_otro"]
    assert copier.scores["manual_backward_test"] == 0
    killer = graded["mata_padre"]
    assert killer.status == Status.TAMPERING and "señal" in killer.detail
    assert killer.scores["manual_backward_test"] == 0
    caller = graded[SEED_CASE.student_id]  # the right answer, then the seed's socket
    assert caller.status == SEED_CASE.status and SEED_CASE.reason in caller.detail
    assert caller.scores["manual_backward_test"] == 0 and caller.scores["two_loss_grads_test"]
    assert os.getpid()  # this process, the grader's caller, is alive
