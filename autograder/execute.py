"""nbgrader's Execute, made safe for hostile notebooks.

Two changes to how a submission is executed:

- **Hidden tests run in the grader, not in the student's kernel.** At a graded test
  cell, whatever its source (students can edit or fake it), the grader asks the kernel
  to observe the student's function on the hidden cases (``autograder.harness``),
  parses the plain-data observations (``autograder.student.plain``: JSON and raw tensor
  bytes, never pickle), and scores
  them here against the reference. Monkeypatching torch, numpy, builtins or the
  course's helpers inside the notebook cannot change a comparison that happens in
  another process; the reference and the course secret never enter the kernel.
- **A kernel that dies does not lose the submission.** The cell that killed it
  (``os._exit``, a segfault, a memory limit) is marked, the notebook runs again in a
  fresh kernel without it, and everything else is graded. A kernel that cannot be
  brought back is recorded too, and nothing is graded.

What happened is written into the notebook's metadata as plain data
(``autograder.facts``): the grader classifies the submission from it, never from text.
"""

import asyncio
import contextlib
import math
import secrets
import time
from pathlib import Path

import nbformat
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import run_sync
from nbgrader.preprocessors import Execute
from traitlets import Integer

from autograder.facts import FORGED_REPORT, TAMPERING_WORDS, Facts, describe_tampering
from autograder.hidden.runner import hidden_record, plan, score
from autograder.hidden.seeds import course_secret
from autograder.kernel import KERNEL_NAME
from autograder.markers import TEST_SUFFIX
from autograder.outcome import Status
from autograder.preprocessors import is_test_cell
from autograder.sandbox import SandboxedKernelManager, read_untrusted
from autograder.student import plain
from autograder.student.compare import ComprobacionFallida
from autograder.student.diagnosis import Diagnostico
from autograder.titles import hidden_tests_heading

KERNEL_WATCH_S = 0.05  # how often a running cell's kernel is checked to be alive
NOTEBOOK_TIMEOUT = "TiempoDelCuadernoAgotado"  # a cell not run: the notebook's time ran out
KERNEL_DIED = "KernelMuerto"  # the error output of a cell that was skipped or never run
# Guard records that are attempts count once, for the exercise being run when they happened;
# the others (attributes changed) for as long as they last.
ATTEMPTS = ("read", "import", "signal")
KERNEL_DIED_TEXT = ("Esta celda terminó el proceso de Python o lo dejó sin responder (os._exit, "
                    "un fallo de segmentación, falta de memoria, builtins rotos). Se omitió y "
                    "se calificó el resto.")
KERNEL_LOST_TEXT = "No se calificó: " + Status.KERNEL_DIED.text + "."


def _stream(text):
    return nbformat.v4.new_output("stream", name="stdout", text=text + "\n")


def _error(ename, evalue):
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue,
                                  traceback=[f"{ename}: {evalue}"])


def hidden_table(assignment):
    """(chapter key, hidden exercises) of the chapter an assignment is; no exercises for an
    unknown one."""
    from autograder.course import chapter_named

    try:
        chapter = chapter_named(assignment)
        return chapter.key, chapter.module("hidden").HIDDEN
    except (KeyError, ModuleNotFoundError):
        return None, {}


TIMING_KEYS = ("kernel start", "imports", "execution")


class CellClock:
    """Seconds spent starting the kernel (until the first cell), in the first cell that
    imports torch, and in every other cell, added into ``totals``."""

    def __init__(self, totals):
        self.totals, self.last, self.imported = totals, time.perf_counter(), False

    @contextlib.contextmanager
    def cell(self, cell):
        started = time.perf_counter()
        if self.last is not None:  # the first cell: what came before was the kernel start
            self.totals["kernel start"] += started - self.last
            self.last = None
        try:
            yield
        finally:
            key = "execution"
            if not self.imported and cell.cell_type == "code" and "import torch" in cell.source:
                key, self.imported = "imports", True
            self.totals[key] += time.perf_counter() - started


class GradingExecute(Execute):
    """Execute with hidden tests scored grader-side and recovery from dead kernels."""

    max_kernel_deaths = Integer(3, help="Cells that may kill the kernel before giving up.").tag(
        config=True)
    notebook_timeout = Integer(300, help=(
        "Seconds for the whole notebook, hidden tests and restarted kernels included (each "
        "cell also has Execute.timeout); 0: no limit. Past it, the running cell is "
        "interrupted and no further cell runs: N cells just under the per-cell limit "
        "cannot take N times it.")).tag(config=True)

    # nbgrader raises on a late iopub (an error output lost would let a test cell pass), and
    # we count that raise as a kernel that stopped answering. nbclient's 4 s were too few for
    # a cell that printed 100 MB on a loaded machine: its output arrives after its reply.
    iopub_timeout = Integer(30, help=(
        "Seconds to wait, after a cell's reply, for the rest of its output; past them the "
        "cell counts as having broken its kernel.")).tag(config=True)

    def __init__(self, *args, **kwargs):
        # nbgrader's Execute passes its own manager as an argument, which beats configuration.
        kwargs.setdefault("kernel_manager_class", SandboxedKernelManager)
        super().__init__(*args, **kwargs)

    async def async_start_new_kernel_client(self):
        """nbclient's kernel start, and then, before any cell: a sandboxed kernel's
        system-call filter in place, as Linux reports it (``autograder.seccomp_watch``)."""
        client = await super().async_start_new_kernel_client()
        watch = getattr(self.km, "seccomp", None)
        if watch is not None and not await asyncio.to_thread(watch.armed):
            await self._async_cleanup_kernel()
            raise RuntimeError(f"sin filtro de llamadas al sistema: {watch.problem}")
        self._facts.protection = [layer for layer, present in (
            ("bubblewrap", getattr(self.km, "sandboxed", False)), ("seccomp", watch is not None),
            ("guard", self.km.kernel_name == KERNEL_NAME)) if present]
        return client

    # nbclient binds its synchronous wrapper to its own coroutine: bind it to this one.
    start_new_kernel_client = run_sync(async_start_new_kernel_client)

    def _blocked_syscalls(self):
        """The calls Linux refused this kernel since the previous hidden test: attempts
        recorded in the grader's process, which student code cannot reach."""
        watch = getattr(self.km, "seccomp", None)
        if watch is None:
            return []
        counts, seen = watch.counts(), self._syscalls_seen
        self._syscalls_seen = counts
        return [{"kind": "syscall", "target": name} for name, count in counts.items()
                if count > seen.get(name, 0)]

    async def _async_poll_kernel_alive(self):
        """nbclient's watch over the kernel while a cell runs, every ``KERNEL_WATCH_S``
        instead of every second: a cell that kills its kernel (os._exit, a segfault) costs
        the time it ran, not up to a second more."""
        while True:
            await asyncio.sleep(KERNEL_WATCH_S)
            try:
                await self._async_check_alive()
            except DeadKernelError:
                self.task_poll_for_reply.cancel()
                return

    def preprocess(self, nb, resources=None, km=None):
        self._killers = set()
        timings = dict.fromkeys(TIMING_KEYS, 0.0)  # over every kernel this notebook needed
        # The notes were written at collect time (a notebook graded without our collect may
        # hold anything there); the rest is found here.
        notes = [n for n in Facts.read(nb).notes if isinstance(n, str)]
        self._deadline = (time.monotonic() + self.notebook_timeout
                          if self.notebook_timeout > 0 else None)
        while True:
            # A fresh kernel: no cell run, nothing refused or interrupted yet.
            self._index, self._refusals_seen, self._syscalls_seen = None, 0, {}
            self._facts = Facts(notes=notes, killed_cells=sorted(self._killers),
                                timings=timings)
            self._clock = CellClock(timings)
            try:
                nb, resources = super().preprocess(nb, resources, km)
                break
            except (DeadKernelError, CellTimeoutError, RuntimeError) as error:
                # A cell that kills the kernel, or breaks it so that it stops answering
                # (CellTimeoutError is only raised for that: ordinary time-outs interrupt);
                # or a kernel that does not start (jupyter_client's RuntimeError).
                starting = self._index is None
                if not starting and not isinstance(error, (DeadKernelError, CellTimeoutError)):
                    raise  # not the kernel: a grader bug, which nbgrader reports
                if starting or self._index in self._killers or (
                        len(self._killers) >= self.max_kernel_deaths):
                    self._give_up(nb, error)
                    break
                self.log.warning("Kernel died in cell %s: skipping it and running again",
                                 self._index)
                self._killers.add(self._index)
        self._facts.write(nb)
        return nb, resources

    def _give_up(self, nb, error):
        """The kernel cannot be brought back: record it, and let no test cell score (one
        that never ran has no error, which nbgrader would count as passed)."""
        self.log.error("Kernel died (%s) in cell %s: the submission cannot be graded",
                       type(error).__name__, self._index)
        self._facts.kernel_death = {"cell": self._index, "error": type(error).__name__}
        for cell in nb.cells:
            if cell.cell_type == "code" and is_test_cell(cell):
                cell.outputs, cell.execution_count = [_error(KERNEL_DIED, KERNEL_LOST_TEXT)], None

    async def _async_handle_timeout(self, timeout, cell=None):
        # nbclient's one place where a cell (or a hidden test's probe) reached the limit.
        if self._index is not None:  # not the kernel's first answer: that is a start failure
            self._facts.timed_out_cells.append(self._index)
        return await super()._async_handle_timeout(timeout, cell)

    def _get_timeout(self, cell):
        """The per-cell limit, or less: what is left of the notebook's (at least 1 s)."""
        per_cell = super()._get_timeout(cell)
        if self._deadline is None:
            return per_cell
        left = max(1, math.ceil(self._deadline - time.monotonic()))
        return left if per_cell is None else min(per_cell, left)

    def _out_of_time(self):
        return self._deadline is not None and time.monotonic() >= self._deadline

    def _not_run(self, cell, index):
        """A code cell reached after the notebook's time ran out: not run, with an error
        output, so that a test cell scores nothing (one without an error counts as passed).
        The first such cell is where the submission timed out, unless one was interrupted."""
        if not self._facts.timed_out_cells:
            self._facts.timed_out_cells.append(index)
        cell.outputs, cell.execution_count = [_error(NOTEBOOK_TIMEOUT, (
            f"No se ejecutó: se agotó el tiempo máximo del cuaderno entero "
            f"({self.notebook_timeout} s)."))], None

    def preprocess_cell(self, cell, resources, index):
        with self._clock.cell(cell):
            return self._preprocess_cell(cell, resources, index)

    def _preprocess_cell(self, cell, resources, index):
        self._index = index
        if cell.cell_type == "code" and self._out_of_time():
            self._not_run(cell, index)
            return cell, resources
        if index in self._killers:
            # The count depends on whether the kernel announced the cell before dying: a race.
            cell.outputs, cell.execution_count = [_error(KERNEL_DIED, KERNEL_DIED_TEXT)], None
            return cell, resources
        if cell.cell_type == "code" and is_test_cell(cell):
            exercise_id = cell.metadata["nbgrader"]["grade_id"].removesuffix(TEST_SUFFIX)
            key, table = hidden_table(resources.get("nbgrader", {}).get("assignment", ""))
            if exercise_id in table:
                self._hidden_test(cell, resources, index, key, exercise_id, table[exercise_id])
                return cell, resources
        return super().preprocess_cell(cell, resources, index)

    def _observe(self, index, chapter_key, exercise_id, function, cases):
        """Run the harness in the student's kernel; its observations, or why there are none.
        They are written into the kernel's own folder (never where nbgrader writes), and
        read without following links: the kernel may have replaced the file with anything."""
        target = Path(self.km.kernel_dir) / f"observacion-{secrets.token_hex(8)}.datos"
        code = ("import autograder.harness as _harness\n"
                f"_harness.observe({chapter_key!r}, {exercise_id!r}, {function!r}, "
                f"{cases!r}, {str(target)!r})\n")
        probe = nbformat.v4.new_code_cell(code)
        original = self.nb.cells[index]
        try:
            self.execute_cell(probe, index, store_history=False)
        finally:
            self.nb.cells[index] = original  # nbclient stores the executed cell at ``index``
        try:
            raw = read_untrusted(target)
        except FileNotFoundError:
            raw = None
        except OSError as error:
            return None, f"observaciones ilegibles ({type(error).__name__})"
        if raw is not None:
            try:
                return plain.loads(raw), None
            except Exception as error:  # noqa: BLE001 - a forged file is a failed test, not a crash
                return None, f"observaciones ilegibles ({type(error).__name__})"
        self._probe_errors = [o for o in probe.outputs if o.output_type == "error"]
        if self._probe_errors:
            last = self._probe_errors[-1]
            return None, f"{last.ename}: {last.evalue}".strip(": ")
        return None, "no produjo resultados"

    def _counted(self, reported):
        """The guard's records (``autograder.kernel.Guard``) that count against this
        exercise: attributes changed now, and the attempts refused since the previous hidden
        test (an older attempt belongs to an earlier exercise). Only their plain fields are
        kept: the report comes from the student's kernel."""
        valid = [r for r in reported if isinstance(r, dict) and isinstance(r.get("target"), str)
                 and r.get("kind") in TAMPERING_WORDS
                 and r.get("kind") not in (FORGED_REPORT["kind"], "syscall")]
        attempts = [r for r in valid if r["kind"] in ATTEMPTS]
        new_attempts = attempts[self._refusals_seen:]
        self._refusals_seen = len(attempts)
        counted = [{"kind": r["kind"], "target": r["target"]}
                   for r in [r for r in valid if r["kind"] not in ATTEMPTS] + new_attempts]
        if len(valid) != len(reported):
            counted.append(dict(FORGED_REPORT))
        return counted

    def _hidden_test(self, cell, resources, index, chapter_key, exercise_id, hidden):
        path = Path(resources.get("metadata", {}).get("path") or ".")
        student = resources.get("nbgrader", {}).get("student")
        cases = plan(exercise_id, {exercise_id: hidden}, student=student,
                     secret=course_secret(cwd=path))
        self._probe_errors = []
        data, problem = self._observe(index, chapter_key, exercise_id, hidden.exercise.funcion,
                                      cases)
        title = hidden_tests_heading(chapter_key, exercise_id)
        if data is None:
            failure = ComprobacionFallida(Diagnostico("sin_observacion", {"motivo": problem}))
            cell.outputs = [_stream(f"{title}: 0 / {hidden.points:g} puntos\n  {failure}")]
            # A time-out stays visible to the student as such; 0 points either way.
            cell.outputs += [o for o in self._probe_errors if o.ename == "CellTimeoutError"]
            cell.outputs.append(nbformat.v4.new_output(
                "execute_result", data={"text/plain": "0.0"}, execution_count=None))
            self._facts.hidden_tests[exercise_id] = {
                "points": 0.0, "max_points": hidden.points, "parts": [],
                "zeroed": "no observations"}
            return
        result = score(hidden, cases, data["observations"])
        report, points = result.informe(title), result.puntos
        counted = self._counted(data["tampering"]) + self._blocked_syscalls()
        if counted:
            self._facts.tampering[exercise_id] = counted
            tampering = ComprobacionFallida(Diagnostico(
                "manipulacion", {"que": describe_tampering(counted)}))
            report = f"{title}: 0 / {hidden.points:g} puntos\n  {tampering}"
            points = 0.0
        self._facts.hidden_tests[exercise_id] = hidden_record(
            hidden, result, "tampering" if counted else None)
        cell.outputs = [_stream(report), nbformat.v4.new_output(
            "execute_result", data={"text/plain": repr(float(points))}, execution_count=None)]
