"""The hardened grading kernel: ``python -m autograder.kernel -f {connection_file}``.

Before any student code runs, the launcher
1. sets resource limits (address space, file size, CPU time) and ignores SIGXFSZ, so a
   50 GB allocation or a huge file fails inside the cell instead of the machine;
2. imports what the harness needs and photographs what checks and students share
   (torch functions, ``torch.Tensor``, numpy, builtins, ``autograder.student``);
3. installs an audit hook (it cannot be removed) that refuses to open the course's
   private files (gradebook, secret, sources, other students' work, the references and
   hidden tests), to list their folders, and to start processes or load native libraries;
4. where the grader asks for it (``autograder.seccomp_filter``), loads a system-call filter
   that Linux enforces: no programs, no processes but threads, no tracing; each attempt is
   reported to the grader, not to anything in this process;
5. starts ipykernel.

The hidden tests themselves are scored in the grader's process (``autograder.execute``);
this kernel adds defence in depth and reports what it saw: refused reads and changed
attributes (its tampering records), which zero the exercise being graded.
"""

import functools
import os
import re
import resource
import signal
import sys
from pathlib import Path

KERNEL_NAME = "autograder-hardened"
PACKAGE_DIR = Path(__file__).resolve().parent
REPO_DIR = PACKAGE_DIR.parent
LIMITS = {"memoria_mb": 6144, "archivo_mb": 64, "cpu_s": 900}
# Builtins that IPython and ipykernel themselves set or swap while running cells.
IGNORED_BUILTINS = {"exit", "quit", "help", "copyright", "credits", "license", "display",
                    "get_ipython", "_", "__", "___", "__IPYTHON__", "__builtins__", "input",
                    "raw_input", "getpass"}
# Processes, native calls (ctypes), and links (a link left in the working folder could
# make the grader, which writes there afterwards, write somewhere else).
BLOCKED_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                  "os.fork", "os.forkpty", "pty.spawn", "ctypes.", "os.symlink", "os.link")


PRIVATE_PATHS_ENV = "AUTOGRADER_PRIVATE_PATHS"  # set by the grader (os.pathsep-separated)
SANDBOXED_ENV = "AUTOGRADER_SANDBOXED"  # "1": started by autograder.sandbox


def protected_paths(cwd, package_dir=PACKAGE_DIR, build_dir=None):
    """What student code may not read while it is graded in ``cwd``. ``package_dir``:
    where this package is as the kernel sees it (a warm kernel was imported elsewhere)."""
    from autograder.course import BUILD_DIR

    repo_dir = package_dir.parent
    build_dir = BUILD_DIR if build_dir is None else build_dir
    paths = [repo_dir / "solutions", package_dir / "hidden", package_dir / "corpus.py",
             *[package_dir / "chapters" / chapter / name for chapter in chapter_folders()
               for name in ("hidden.py", "variants.py")], build_dir / "sample_class",
             repo_dir / "build" / "sample_class", build_dir / "grades"]
    # The grader's own folders (the course, every worker's copy of it, the submissions):
    # without the OS sandbox this list is all that keeps them out of reach.
    paths += [Path(p) for p in os.environ.get(PRIVATE_PATHS_ENV, "").split(os.pathsep) if p]
    if cwd.parent.parent.name == "autograded":  # autograded/<student>/<assignment>
        course = cwd.parents[2]
        paths += [course / name for name in ("gradebook.db", "course_secret.txt", "source",
                                             "submitted", "autograded", "feedback",
                                             "nbgrader_config.py")]
    return [p.resolve() for p in paths]


@functools.cache
def chapter_folders():
    """The chapters' folder names (read once: a warm kernel no longer sees where it was
    imported from, so its template reads them first)."""
    return tuple(sorted(p.name for p in (PACKAGE_DIR / "chapters").glob("ch*") if p.is_dir()))


def apply_limits(limits=LIMITS):
    """Set the resource limits this platform allows; return a description of each."""
    active = []
    for name, kind, scale in (("memoria_mb", "RLIMIT_AS", 2**20),
                              ("archivo_mb", "RLIMIT_FSIZE", 2**20),
                              ("cpu_s", "RLIMIT_CPU", 1)):
        try:
            value = limits[name] * scale
            resource.setrlimit(getattr(resource, kind), (value, value))
            active.append(f"{kind}={limits[name]}")
        except (ValueError, OSError, AttributeError):
            pass
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too-big write raises, not kills
    return active


def watched_namespaces():
    """The namespaces whose attributes grading relies on, by label."""
    import builtins

    import numpy
    import torch
    import torch._dynamo  # noqa: F401 - see the comment below
    import torch.nn.functional
    import torch.optim  # noqa: F401

    # The first optimizer a process builds imports torch._dynamo, which rebinds
    # torch.manual_seed (and others) to wrappers: imported before the snapshot, or an
    # honest notebook that trains would look tampered with.
    import autograder.harness
    import autograder.student.compare
    import autograder.student.diagnosis
    import autograder.student.messages

    spaces = {"builtins": vars(builtins), "torch": vars(torch), "torch.Tensor": vars(torch.Tensor),
              "torch.nn.functional": vars(torch.nn.functional),
              "torch.autograd": vars(torch.autograd), "torch.testing": vars(torch.testing),
              "torch.nn.Module": vars(torch.nn.Module), "numpy": vars(numpy),
              "autograder.harness": vars(autograder.harness)}
    for module in (autograder.student.compare, autograder.student.diagnosis,
                   autograder.student.messages):
        spaces[module.__name__] = vars(module)
    for chapter in sorted((PACKAGE_DIR / "chapters").glob("ch*/student.py")):
        module = __import__(f"autograder.chapters.{chapter.parent.name}.student", fromlist=["_"])
        spaces[module.__name__] = vars(module)
    return spaces


KERNEL_SIDE_MODULES = ("autograder", "autograder.kernel", "autograder.harness",
                       "autograder.course", "autograder.student", "autograder.warm_kernel",
                       "autograder.seccomp_filter",
                       "autograder.chapters")


def pristine_state():
    """The watched namespaces and a copy of each, as they are now (before student code)."""
    spaces = watched_namespaces()
    return spaces, {label: dict(space) for label, space in spaces.items()}


class Guard:
    """The audit hook and the record of what it refused or found changed.

    Records are plain data for the grader (``autograder.execute`` words them): an attempt
    that was refused, ``{"kind": "read" | "import" | "signal", "target": ...}``, belongs to
    the exercise being run when it happened; a watched attribute found replaced or added,
    ``{"kind": "replaced" | "added", "target": ...}``, counts for as long as it lasts.
    """

    def __init__(self, cwd, sandboxed=False, pristine=None, also_protected=()):
        """``pristine``: (namespaces, snapshot) taken earlier by ``pristine_state`` (a warm
        kernel's template, before any student code); default: taken now."""
        self.cwd = cwd.resolve()
        self.protected = protected_paths(self.cwd) + [Path(p) for p in also_protected]
        self.sandboxed = sandboxed
        if sandboxed:
            # Inside the OS sandbox none of these is mounted (only the empty folders that
            # lead to the working folder exist): the check only notices the attempt, by the
            # path as written, which costs no system call per file access.
            self.protected = [str(p) for p in self.protected if p not in self.cwd.parents]
        self.refused = []
        self.spaces, self.snapshot = pristine or pristine_state()
        from autograder.harness import TAMPERING_EVENT  # imported by watched_namespaces

        self.report_event = TAMPERING_EVENT  # the harness asks for the records with it

    def _is_protected(self, path):
        try:
            path = os.fsdecode(path)
            if self.sandboxed:
                written = os.path.abspath(path)
                own = str(self.cwd)
                if written == own or written.startswith(own + os.sep):
                    return False
                return any(written == p or written.startswith(p + os.sep)
                           for p in self.protected)
            resolved = Path(path).resolve()
        except (TypeError, ValueError, OSError):
            return False
        if resolved == self.cwd or self.cwd in resolved.parents:
            return False
        return any(resolved == p or p in resolved.parents for p in self.protected)

    def changed(self):
        """Attributes of the watched namespaces that are not what they were at launch."""
        found = []
        for label, before in self.snapshot.items():
            now = self.spaces[label]
            for name, value in before.items():
                if label == "builtins" and name in IGNORED_BUILTINS:
                    continue
                if now.get(name, value) is not value or name not in now:
                    found.append({"kind": "replaced", "target": f"{label}.{name}"})
            if label == "torch.Tensor":  # copyreg caches __slotnames__ when pickling
                found += [{"kind": "added", "target": f"torch.Tensor.{n}"}
                          for n in sorted(set(now) - set(before)) if n != "__slotnames__"]
        return found

    def _refuse(self, kind, target, event):
        record = {"kind": kind, "target": str(target)}
        if record not in self.refused:
            self.refused.append(record)
        raise PermissionError(f"Bloqueado al calificar: {event} {target}")

    def hook(self, event, args):
        if event == self.report_event:
            args[0].extend(self.refused)
            args[0].extend(self.changed())
        elif event in ("open", "os.listdir", "os.scandir", "sqlite3.connect") and args:
            if args[0] is not None and not isinstance(args[0], int) and self._is_protected(
                    args[0]):
                self._refuse("read", os.fsdecode(args[0]), event)
        elif event == "socket.connect" and len(args) > 1 and isinstance(
                args[1], (str, bytes)) and self._is_protected(args[1]):
            # A Unix socket of the grader's (the workers' seed listens on one): whoever
            # connects could have code run outside this guard.
            self._refuse("read", os.fsdecode(args[1]), event)
        elif event == "import" and args and _hidden_module(args[0]):
            self._refuse("import", args[0], event)
        elif event in ("os.kill", "os.killpg") and args and not self._own(event, args[0]):
            self._refuse("signal", args[0], event)
        elif event.startswith(BLOCKED_EVENTS):
            raise PermissionError(f"Bloqueado al calificar: {event}")

    @staticmethod
    def _own(event, target):
        """Whether a signal goes to this process (or its own group: ipykernel interrupts
        itself that way); never to the grader, a worker or anything else."""
        if not isinstance(target, int):
            return False
        if event == "os.kill":
            return target == os.getpid()
        return target in (0, os.getpgid(0))


def _hidden_module(name):
    """A module of this package that never belongs in a kernel (references, hidden draws,
    variants, the pipeline): importing it is an attempt whatever the sandbox shows."""
    if not isinstance(name, str) or not name.startswith("autograder."):
        return False
    if re.fullmatch(r"autograder\.chapters\.ch\d\d\.student", name) or (
            re.fullmatch(r"autograder\.chapters(\.ch\d\d)?", name)):
        return False  # a chapter's notebook side (and the packages that lead to it)
    return not any(name == m or name.startswith(m + ".") for m in KERNEL_SIDE_MODULES[1:-1])


def install_kernelspec(prefix=sys.prefix):
    """Register this launcher as the Jupyter kernel ``autograder-hardened`` in ``prefix``."""
    import json

    folder = Path(prefix) / "share" / "jupyter" / "kernels" / KERNEL_NAME
    folder.mkdir(parents=True, exist_ok=True)
    # No IPython history: kernels grading side by side would share (and lock) one sqlite
    # file, and its "disk I/O error" message would land in the student's feedback.
    spec = {"argv": [sys.executable, "-m", "autograder.kernel", "-f", "{connection_file}",
                     "--HistoryManager.enabled=False"],
            "display_name": "Python 3 (calificación protegida)", "language": "python",
            # Interrupts travel as messages: a sandboxed kernel is in a session (and PID
            # namespace) of its own, where the grader's signals do not reach.
            "interrupt_mode": "message"}
    (folder / "kernel.json").write_text(json.dumps(spec, indent=1) + "\n")
    return folder


def plain_python_first(transform_cell):
    """IPython's ``transform_cell``, skipped where it changes nothing and costs most.

    IPython tokenizes every cell (several times over) looking for its own syntax: magics,
    ``!`` commands, ``?`` help, prompts, indented pastes. Valid Python of several lines has
    none of it, and IPython returns it unchanged but for its leading blank lines; that
    scan is 0.1-0.25 s for the course's 94 KB utilities cell, once per graded notebook.
    A cell Python parses, of more than one line (single lines may be automagics such as
    ``pwd``), is returned as IPython would, unless transformers were added to IPython's;
    anything else goes through IPython (``tests/test_kernel_guard.py`` compares the two).
    ipykernel transforms each cell twice (once to ask ``should_run_async``, once to run
    it): the last plain cell's result is kept for the second time."""
    import ast

    from IPython.core.inputtransformer2 import TransformerManager, leading_empty_lines

    defaults = TransformerManager()
    last = {}

    def as_shipped(manager):
        return all(getattr(manager, kind, None) == getattr(defaults, kind) for kind in (
            "cleanup_transforms", "line_transforms", "token_transformers"))

    @functools.wraps(transform_cell)
    def transform(self, raw_cell):
        if self.input_transformers_post or not as_shipped(self.input_transformer_manager):
            return transform_cell(self, raw_cell)
        if last.get("raw") == raw_cell:
            return last["text"]
        cell = raw_cell if raw_cell.endswith("\n") else raw_cell + "\n"
        lines = leading_empty_lines(cell.splitlines(keepends=True))
        if len(lines) > 1:
            text = "".join(lines)
            try:
                ast.parse(text)
            except (SyntaxError, ValueError):
                pass
            else:
                last.update(raw=raw_cell, text=text)
                return text
        return transform_cell(self, raw_cell)

    return transform


def no_await_no_compile(should_run_async):
    """IPython's ``should_run_async`` without its compilation of the cell (25 ms for the
    utilities cell) where the answer is already known: a cell runs as a coroutine only if it
    has a top-level ``await``, ``async for`` or ``async with``, whose keywords no token can
    spell otherwise (a lookalike such as fullwidth ``ａｗａｉｔ`` is a syntax error, which
    IPython answers with False too), so a cell without those words is not one."""

    @functools.wraps(should_run_async)
    def should(self, raw_cell, *, transformed_cell=None, preprocessing_exc_tuple=None):
        if (isinstance(transformed_cell, str) and "await" not in transformed_cell
                and "async" not in transformed_cell):
            return False
        return should_run_async(self, raw_cell, transformed_cell=transformed_cell,
                                preprocessing_exc_tuple=preprocessing_exc_tuple)

    return should


def launch(guard, argv=None):
    """Load the system-call filter, install the guard's audit hook (both for good) and run
    ipykernel until it shuts down."""
    from autograder import seccomp_filter

    seccomp_filter.install()  # before the hook, which refuses the native calls it makes
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.transform_cell = plain_python_first(InteractiveShell.transform_cell)
    InteractiveShell.should_run_async = no_await_no_compile(InteractiveShell.should_run_async)
    sys.addaudithook(guard.hook)
    from ipykernel import kernelapp

    kernelapp.launch_new_instance(argv=argv)


def main():
    os.environ.pop("COURSE_SECRET", None)  # the kernel never needs it
    apply_limits()
    launch(Guard(Path.cwd(), sandboxed=os.environ.get(SANDBOXED_ENV) == "1"))


if __name__ == "__main__":
    main()
