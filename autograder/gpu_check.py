"""The Python side of the GPU check (``ci/gpu_check.sh``, ``make gpu-check``): instructor-facing.

- ``nbval NOTEBOOK...``: nbval (``--nbval-lax --nbval-current-env``) on instructor notebooks,
  keeping what every cell printed; where CUDA is present it fails if a GPU cell took its
  CPU path (printed "Sin GPU") or a chapter's CUDA output is missing, and prints the
  chapters' own GPU lines (autocast table, speed-ups, memory, the GradScaler demo).
- ``probe``: CUDA in this process, in a child forked after ``torch.cuda.is_available()`` (as
  grading workers are forked from a seed that asked), and in the kernels' sandbox with and
  without the kernels' resource limits: where grading on a GPU can break, one line each.
- ``class PHASE DIR``: a small class of chapter 6 written to DIR as ``python -m autograder
  grade --submissions DIR`` reads it. ``class``: the reference (ana), the stubs (bruno),
  chapter 6's sample mistakes (carla, diego) and a student who patches ``torch.allclose``;
  ``hog``: a student who takes all of the GPU's memory and holds it, graded beside a
  reference submission.
- ``verdict PHASE --grades CSV``: each of them scored as expected (a sample mistake:
  partly, whatever its CPU points), the grader survived the hog, and, with ``--cuda``, every
  grading kernel saw the GPU (the helper cell names the device it runs on).
"""

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from autograder.outcome import UNGRADED, Status
from autograder.submissions import SampleStudent

ASSIGNMENT = "06_precision_mixta"
CPU_PATH = "Sin GPU"  # how every GPU cell of chapters 6 and 7 starts its CPU path's message
CUDA_MARKERS = {"06_precision_mixta": ("GPU: ", "autocast en cuda con float16:",
                                       "aceleración de autocast fp16"),
                "07_funciones_propias": ("tramos=2: memoria pico",)}
GPU_LINES = ("GPU", "aceleración", "autocast en cuda", "tramos=", "GradScaler por defecto",
             "Entorno:")
KERNEL_ON_GPU = "dispositivo: GPU ("  # the helper cell's line (autograder.student.notebook)

TAMPER = '''torch.allclose = lambda *a, **k: True


def {name}(log):
    return "sano"
'''  # {name}: the chapter's first exercise, whose grade id the chapter folder alone names
HOG = '''import time

_acaparado = []  # the GPU's memory, held until this kernel ends
if torch.cuda.is_available():
    for _trozo in (2**30, 2**26, 2**20):
        try:
            while True:
                _acaparado.append(torch.empty(_trozo, dtype=torch.uint8, device="cuda"))
        except RuntimeError:  # out of memory: go on with smaller pieces
            pass
    time.sleep(10)  # the classmate graded beside it meets the GPU full
'''
HOG_ID = "acapara_gpu"


def _first_exercise():
    from autograder.course import chapter_named

    return next(iter(chapter_named("ch06").module("student").EJERCICIOS))


def students(phase, reference=None):
    """The SampleStudents of ``phase``; ``reference``: grade id -> reference code."""
    first = _first_exercise()
    if phase == "hog":
        code = HOG + "\n\n" + (reference or {}).get(first, "")
        return [SampleStudent(HOG_ID, "toma toda la memoria de la GPU y la retiene",
                              {first: code}),
                SampleStudent("ana_junto", "solución de referencia, junto a acapara_gpu")]
    from autograder.sample_class import SAMPLE_CLASS

    return [*SAMPLE_CLASS[ASSIGNMENT],
            SampleStudent("parchea_allclose", "torch.allclose siempre True y una respuesta mal",
                          {first: TAMPER.format(name=first)}, lost=("*",),
                          expected_status=Status.TAMPERING)]


def write_class(phase, destination, course_dir):
    """Write ``phase``'s submissions to destination/<student>/<assignment>/<assignment>.ipynb."""
    from autograder.sample_class import submission
    from autograder.submissions import solution_code

    source_nb, release_nb = (nbformat.read(course_dir / kind / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
                                           as_version=4) for kind in ("source", "release"))
    for student in students(phase, solution_code(source_nb)):
        path = destination / student.student_id / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(submission(student, source_nb, release_nb), path)
        print(f"wrote {student.student_id}: {student.description}")


def _kernel_device(nb):
    from autograder.preprocessors import is_helper_cell

    text = "".join(o.get("text", "") for c in nb.cells if is_helper_cell(c)
                   for o in c.get("outputs", []))
    return next((line.split("dispositivo: ")[1].split(" · ")[0] for line in text.splitlines()
                 if "dispositivo: " in line), "?")


def _problems(student, row, maxima, device, cuda):
    """Why ``student``'s graded row is not what it should be (empty: as expected)."""
    found = []
    if student.student_id == HOG_ID:  # its own points are its business; the grader survives
        if row["status"] in UNGRADED:
            found.append(f"status {row['status']!r}: the grader did not survive it")
    elif row["status"] != student.expected_status:
        found.append(f"status {row['status']!r}, expected {str(student.expected_status)!r}")
    for cell, maximum in maxima.items():
        got = float(row.get(cell) or 0.0)
        if student.student_id == HOG_ID:
            continue
        if "*" in student.lost or cell in student.lost:
            wanted, ok = "0", got == 0
        elif cell in student.partial:
            wanted, ok = f"partial (CPU: {student.partial[cell]:g})", 0 < got < maximum
        else:
            wanted, ok = f"{maximum:g}", got == maximum
        if not ok:
            found.append(f"{cell} scored {got:g} / {maximum:g}, expected {wanted}")
    if cuda and not device.startswith("GPU"):
        found.append(f"the grading kernel ran on {device}, not on the GPU")
    return found


def verdict(phase, grades_csv, course_dir, cuda):
    """Print one line per student of ``phase``; 1 if any is not as expected."""
    from autograder.canary import cell_points

    with Path(grades_csv).open(newline="") as handle:
        rows = {r["student"]: r for r in csv.DictReader(handle) if r["assignment"] == ASSIGNMENT}
    failed = 0
    for student in students(phase):
        row = rows.get(student.student_id)
        path = course_dir / "autograded" / student.student_id / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        if row is None or not path.exists():
            print(f"FAIL {student.student_id}: not graded (no row in grades.csv or no notebook)")
            failed = 1
            continue
        nb = nbformat.read(path, 4)
        maxima, device = cell_points(nb), _kernel_device(nb)
        problems = _problems(student, row, maxima, device, cuda)
        scores = ", ".join(f"{c} {float(row.get(c) or 0):g}/{m:g}" for c, m in maxima.items())
        print(f"{'FAIL' if problems else 'PASS'} {student.student_id} ({student.description}): "
              f"{row['status']} {row.get('detail', '')}; {scores}; kernel: {device}")
        print("".join(f"    {p}\n" for p in problems), end="")
        failed |= bool(problems)
    print(f"{phase}: {'FAIL' if failed else 'PASS'}")
    return failed


class _KeepOutputs:
    """pytest plugin: the text every nbval cell printed, by notebook name."""

    def __init__(self):
        self.text = {}

    def pytest_runtest_teardown(self, item):
        for out in getattr(item, "test_outputs", None) or []:
            text = out.get("text", "") + out.get("data", {}).get("text/plain", "")
            text += f"{out.get('ename', '')}: {out.get('evalue', '')}" if "ename" in out else ""
            self.text.setdefault(Path(str(item.fspath)).stem, []).append(text)


def run_nbval(notebooks, cuda):
    """nbval on ``notebooks``; with ``cuda``, also fail on a skipped GPU cell."""
    import pytest

    kept = _KeepOutputs()
    code = int(pytest.main(["-q", "--nbval-lax", "--nbval-current-env", "-p", "no:cacheprovider",
                            *map(str, notebooks)], plugins=[kept]))
    print("\nThe chapters' own GPU lines:" if cuda else "\nNo CUDA: GPU cells took the CPU path.")
    for name, texts in kept.text.items():
        lines = [line for text in texts for line in text.splitlines()]
        print("".join(f"  {name}: {line}\n" for line in lines if line.startswith(GPU_LINES)
                      or CPU_PATH in line or line.startswith("paso ") and "escala " in line),
              end="")
        if not cuda:
            continue
        problems = [f"a GPU cell took its CPU path: {line}" for line in lines if CPU_PATH in line]
        problems += [f"missing the CUDA output {m!r}" for m in CUDA_MARKERS.get(name, ())
                     if not any(m in line for line in lines)]
        print("".join(f"FAIL {name}: {p}\n" for p in problems), end="")
        code = code or int(bool(problems))
    missing = set(CUDA_MARKERS) - set(kept.text) if cuda else set()
    print("".join(f"FAIL {name}: not run\n" for name in sorted(missing)), end="")
    return code or int(bool(missing))


FORKED = '''import os, torch
assert torch.cuda.is_available()
pid = os.fork()
if pid == 0:
    try:
        print(torch.cuda.get_device_name(), torch.ones(1, device="cuda").sum().item())
    except Exception as error:
        print(f"{type(error).__name__}: {error}")
        os._exit(1)
    os._exit(0)
raise SystemExit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
'''
PLAIN = ('import torch; print(torch.cuda.get_device_name(), '
         'torch.ones(1, device="cuda").sum().item())')
LIMITED = "from autograder.kernel import apply_limits; print(apply_limits()); " + PLAIN


def _sandboxed(code):
    """The command line that runs ``code`` in a grading kernel's sandbox, or None."""
    from autograder import sandbox

    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    folder = Path(tempfile.mkdtemp(prefix="ag-gpu-probe-"))
    for name in ("work", "kernel"):
        (folder / name).mkdir()
    sandbox._prepare_kernel_dir(folder / "kernel")
    return sandbox.bwrap_argv(bwrap, folder / "work", folder / "kernel") + [
        sys.executable, "-c", code]


def probe(cuda=True):
    """One line per place CUDA must work for grading on a GPU; 1 if one that grading needs
    does not (the NVML check is a workaround, reported only). Without ``cuda``: reported
    only (the plumbing on a CPU)."""
    env = dict(os.environ, PYTORCH_NVML_BASED_CUDA_CHECK="1")
    cases = [("CUDA in a process", [sys.executable, "-c", PLAIN], None, True),
             ("in a child forked after torch.cuda.is_available()", [sys.executable, "-c", FORKED],
              None, True),
             ("the same with PYTORCH_NVML_BASED_CUDA_CHECK=1", [sys.executable, "-c", FORKED],
              env, False),
             ("in the kernels' sandbox", _sandboxed(PLAIN), None, True),
             ("in the sandbox under the kernels' resource limits", _sandboxed(LIMITED), None, True)]
    failed = 0
    for label, argv, environment, needed in cases:
        if argv is None:
            print(f"FAIL {label}: no bubblewrap here")
            failed = 1
            continue
        try:
            run = subprocess.run(argv, capture_output=True, text=True, timeout=90, env=environment)
            ok, said = run.returncode == 0, (run.stdout + run.stderr).strip().splitlines()
        except subprocess.TimeoutExpired:
            ok, said = False, ["timed out after 90 s"]
        print(f"{'ok  ' if ok else 'FAIL'} {label}: {said[-1] if said else ''}")
        failed |= needed and not ok
    return failed if cuda else 0


def main(argv=None):
    from autograder.course import COURSE_DIR

    parser = argparse.ArgumentParser(prog="python -m autograder.gpu_check",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    nbval = sub.add_parser("nbval", help="nbval, and no GPU cell on its CPU path")
    nbval.add_argument("notebooks", type=Path, nargs="+")
    where = sub.add_parser("probe", help="where CUDA works: process, forked child, sandbox")
    write = sub.add_parser("class", help="write a small chapter 6 class")
    write.add_argument("phase", choices=("class", "hog"))
    write.add_argument("folder", type=Path)
    check = sub.add_parser("verdict", help="was that class graded as expected")
    check.add_argument("phase", choices=("class", "hog"))
    check.add_argument("--grades", type=Path, required=True, help="its grades.csv")
    for command in (nbval, where, check):
        command.add_argument("--cuda", action="store_true",
                             help="CUDA is present: fail where it was not used")
    args = parser.parse_args(argv)
    if args.command == "nbval":
        return run_nbval(args.notebooks, args.cuda)
    if args.command == "probe":
        return probe(args.cuda)
    if args.command == "class":
        write_class(args.phase, args.folder, COURSE_DIR)
        return 0
    return verdict(args.phase, args.grades, COURSE_DIR, args.cuda)


if __name__ == "__main__":
    sys.exit(main())
