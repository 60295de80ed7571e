"""nbgrader's Execute, made safe for hostile notebooks.

Two changes to how a submission is executed:

- **Hidden tests run in the grader, not in the student's kernel.** At a graded test
  cell, whatever its source (students can edit or fake it), the grader asks the kernel
  to observe the student's function on the hidden cases (``autograder.harness``),
  loads the plain-data observations with ``torch.load(weights_only=True)``, and scores
  them here against the reference. Monkeypatching torch, numpy, builtins or the
  course's helpers inside the notebook cannot change a comparison that happens in
  another process; the reference and the course secret never enter the kernel.
- **A kernel that dies does not lose the submission.** The cell that killed it
  (``os._exit``, a segfault, a memory limit) is marked, the notebook runs again in a
  fresh kernel without it, and everything else is graded.
"""

import contextlib
import io
import secrets
import time
from pathlib import Path

import nbformat
import torch
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbgrader.preprocessors import Execute
from traitlets import Integer

from autograder.hidden.runner import plan, score
from autograder.hidden.seeds import course_secret
from autograder.markers import TEST_SUFFIX
from autograder.preprocessors import is_test_cell
from autograder.sandbox import SandboxedKernelManager, read_untrusted
from autograder.student.compare import ComprobacionFallida
from autograder.student.diagnosis import Diagnostico

KERNEL_DIED = "KernelMuerto"
# The guard's records (autograder.kernel.Guard), in words; attempts count once, for the
# exercise being run when they happened.
TAMPERING_WORDS = {"read": "intento de leer {}", "import": "intento de importar {}",
                   "signal": "intento de enviar una señal al proceso {}",
                   "replaced": "{} reemplazado", "added": "{} añadido"}
ATTEMPTS = ("read", "import", "signal")
KERNEL_DIED_TEXT = ("Esta celda terminó el proceso de Python o lo dejó sin responder (os._exit, "
                    "un fallo de segmentación, falta de memoria, builtins rotos). Se omitió y "
                    "se calificó el resto.")


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
LAST_TIMINGS = {}  # of the notebook this process executed last (for the benchmark)


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

    def __init__(self, *args, **kwargs):
        # nbgrader's Execute passes its own manager as an argument, which beats configuration.
        kwargs.setdefault("kernel_manager_class", SandboxedKernelManager)
        super().__init__(*args, **kwargs)

    def preprocess(self, nb, resources=None, km=None):
        self._killers = set()
        self._index = None
        LAST_TIMINGS.clear()
        LAST_TIMINGS.update(dict.fromkeys(TIMING_KEYS, 0.0))
        while True:
            self._refusals_seen = 0  # a fresh kernel has refused nothing yet
            self._clock = CellClock(LAST_TIMINGS)
            try:
                return super().preprocess(nb, resources, km)
            except (DeadKernelError, CellTimeoutError):
                # A cell that kills the kernel, or breaks it so that it stops answering
                # (CellTimeoutError is only raised for that: ordinary time-outs interrupt).
                if self._index is None or self._index in self._killers or (
                        len(self._killers) >= self.max_kernel_deaths):
                    raise
                self.log.warning("Kernel died in cell %s: skipping it and running again",
                                 self._index)
                self._killers.add(self._index)

    def preprocess_cell(self, cell, resources, index):
        with self._clock.cell(cell):
            return self._preprocess_cell(cell, resources, index)

    def _preprocess_cell(self, cell, resources, index):
        self._index = index
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
        target = Path(self.km.kernel_dir) / f"observacion-{secrets.token_hex(8)}.pt"
        code = ("import autograder.harness as _arnes\n"
                f"_arnes.observar({chapter_key!r}, {exercise_id!r}, {function!r}, "
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
                return torch.load(io.BytesIO(raw), weights_only=True), None
            except Exception as error:  # noqa: BLE001 - a forged file is a failed test, not a crash
                return None, f"observaciones ilegibles ({type(error).__name__})"
        self._probe_errors = [o for o in probe.outputs if o.output_type == "error"]
        if self._probe_errors:
            last = self._probe_errors[-1]
            return None, f"{last.ename}: {last.evalue}".strip(": ")
        return None, "no produjo resultados"

    def _tampering(self, reported):
        """What counts against this exercise, in words: attributes changed now, and the
        attempts refused since the previous hidden test (an older attempt belongs to an
        earlier exercise). ``reported``: the guard's records (``autograder.kernel.Guard``)."""
        valid = [r for r in reported if isinstance(r, dict) and isinstance(r.get("target"), str)
                 and r.get("kind") in TAMPERING_WORDS]
        attempts = [r for r in valid if r["kind"] in ATTEMPTS]
        new_attempts = attempts[self._refusals_seen:]
        self._refusals_seen = len(attempts)
        words = [TAMPERING_WORDS[r["kind"]].format(r["target"])
                 for r in [r for r in valid if r["kind"] not in ATTEMPTS] + new_attempts]
        if len(valid) != len(reported):
            words.append("informe del guardián alterado")
        return "; ".join(words)

    def _hidden_test(self, cell, resources, index, chapter_key, exercise_id, hidden):
        path = Path(resources.get("metadata", {}).get("path") or ".")
        student = resources.get("nbgrader", {}).get("student")
        cases = plan(exercise_id, {exercise_id: hidden}, student=student,
                     secret=course_secret(cwd=path))
        self._probe_errors = []
        data, problem = self._observe(index, chapter_key, exercise_id, hidden.exercise.funcion,
                                      cases)
        title = f"Pruebas ocultas de {exercise_id}"
        if data is None:
            failure = ComprobacionFallida(Diagnostico("sin_observacion", {"motivo": problem}))
            cell.outputs = [_stream(f"{title}: 0 / {hidden.points:g} puntos\n  {failure}")]
            # A time-out stays visible as such (the summary reports it); 0 points either way.
            cell.outputs += [o for o in self._probe_errors if o.ename == "CellTimeoutError"]
            cell.outputs.append(nbformat.v4.new_output(
                "execute_result", data={"text/plain": "0.0"}, execution_count=None))
            return
        result = score(hidden, cases, data["observaciones"])
        report, points = result.informe(title), result.puntos
        tampering = self._tampering(data["manipulaciones"])
        if tampering:
            tampering = ComprobacionFallida(Diagnostico("manipulacion", {"que": tampering}))
            report = f"{title}: 0 / {hidden.points:g} puntos\n  {tampering}"
            points = 0.0
        cell.outputs = [_stream(report), nbformat.v4.new_output(
            "execute_result", data={"text/plain": repr(float(points))}, execution_count=None)]
