"""Every student notebook runs on a stock Colab runtime, reference solutions filled in.

Colab has no nbgrader, jupytext or autograder package. A virtual environment built from
``ci/colab-requirements.txt`` alone stands in for it (Colab's IPython, ipykernel, ipywidgets,
matplotlib, numpy; see that file for the two differences that cannot be avoided here). Its
kernel executes every cell of every student notebook, demos included, driven from the main
environment by nbclient. The environment is built once and reused while the requirements
file (and the Python it was built with) stay the same.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import nbformat
import pytest
from jupyter_client import AsyncKernelManager
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from autograder.build import BADGE, source_notebook
from autograder.course import BUILD_DIR, ROOT, chapters
from autograder.submissions import fill_solutions, solution_code

pytestmark = pytest.mark.slow

REQUIREMENTS = ROOT / "ci" / "colab-requirements.txt"
VENV = BUILD_DIR / "colab-venv"
STAMP = VENV / ".requirements-sha256"
KERNEL_NAME = "colab-simulado"
CELL_TIMEOUT = 300
# What the kernel must be: Colab's widget and IPython versions, none of the course tooling.
EXPECTED_VERSIONS = {"ipywidgets": "7.7.1", "IPython": "7.34.0", "ipykernel": "6.17.1"}
NOT_ON_COLAB = ("nbgrader", "jupytext", "autograder")
# Installing from a cell: shell escapes and magics of package managers, or `... install`.
INSTALLS_RE = re.compile(
    r"^\s*[!%]\s*(pip3?|conda|mamba|apt|apt-get)\b"
    r"|\b(pip3?|conda|mamba|apt|apt-get)\s+install\b"
    r"|[\"']-m[\"']\s*,\s*[\"']pip[\"']",
    re.MULTILINE)
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
PROBE_MARK = "SONDA-COLAB "
PROBE = f"""\
import importlib.util as _u, json as _j, sys as _s
import IPython as _i, ipykernel as _k, ipywidgets as _w
print({PROBE_MARK!r} + _j.dumps({{
    "python": _s.executable,
    "versions": {{"ipywidgets": _w.__version__, "IPython": _i.__version__,
                 "ipykernel": _k.__version__}},
    "importable": [m for m in {NOT_ON_COLAB!r} if _u.find_spec(m) is not None],
}}))
"""


def report(request, line):
    """Print past pytest's capture, so CI logs show the durations ("[timing]" lines)."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if capture is None:  # pytest -p no:capture
        print(line, flush=True)
        return
    with capture.global_and_fixture_disabled():
        print(line, flush=True)


def requirements_hash():
    digest = hashlib.sha256(REQUIREMENTS.read_bytes())
    digest.update(sys.version.encode())  # a new base Python needs a new environment
    return digest.hexdigest()


def colab_python():
    return VENV / "bin" / "python"


def build_colab_venv():
    """Create VENV from the requirements file unless its stamp says it is current.

    Returns True if it was (re)built. The stamp is written last, so an interrupted build is
    redone from scratch next time.
    """
    wanted = requirements_hash()
    if colab_python().exists() and STAMP.exists() and STAMP.read_text() == wanted:
        return False
    shutil.rmtree(VENV, ignore_errors=True)
    # `-m venv` from the main venv bases the new one on the same base interpreter.
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    # torch==2.13.0 resolves to the local +cpu wheel (pip's find-links, as for the main venv).
    # --no-compile: byte-compiling every installed file costs ~30 s; the kernels compile
    # only what they import, once.
    subprocess.run([str(colab_python()), "-m", "pip", "install", "--quiet", "--no-compile",
                    "--disable-pip-version-check", "-r", str(REQUIREMENTS)], check=True)
    installed = subprocess.run([str(colab_python()), "-m", "pip", "list", "--format=json"],
                               check=True, capture_output=True, text=True).stdout
    cuda = [p["name"] for p in json.loads(installed) if p["name"].startswith("nvidia-")]
    assert not cuda, f"a CUDA torch was installed (pulled {cuda}); the pin must hit the CPU wheel"
    STAMP.write_text(wanted)
    return True


@pytest.fixture(scope="module")
def colab_kernels(request, tmp_path_factory):
    """A kernel spec dir (outside every global Jupyter path) whose kernel is the Colab venv."""
    started = time.perf_counter()
    built = build_colab_venv()
    seconds = time.perf_counter() - started
    report(request, f"[timing] colab venv: {seconds:.0f} s "
                    f"({'built' if built else 'reused'}, {VENV})")
    kernels = tmp_path_factory.mktemp("kernels")
    spec_dir = kernels / KERNEL_NAME
    spec_dir.mkdir()
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [str(colab_python()), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Colab (simulado)", "language": "python"}))
    return KernelSpecManager(kernel_dirs=[str(kernels)])


def kernel_environment():
    """The main environment's variables minus anything that could leak its packages."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "JUPYTER_PATH")}
    env["PYTHONNOUSERSITE"] = "1"
    env["PATH"] = str(VENV / "bin") + os.pathsep + env.get("PATH", "")
    return env


def student_run(chapter):
    """The student notebook with the reference solutions filled in, plus the probe cell."""
    release = nbformat.read(chapter.student_notebook, as_version=4)
    nb = fill_solutions(release, solution_code(source_notebook(chapter)))
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    return nb


def cell_text(cell, stream="stdout"):
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.output_type == "stream" and o.name == stream)


def errors(nb):
    """One block per failing cell: its index, first source line and the plain traceback."""
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                first_line = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
                traceback = ANSI_RE.sub("", "\n".join(output.traceback))
                found.append(f"celda {index} ({first_line[:70]}):\n{traceback}")
    return found


def slowest_cells(nb, count=3):
    """The cells that took longest (nbclient's recorded timing), to name in the timing line."""
    timed = []
    for index, cell in enumerate(nb.cells):
        execution = cell.get("metadata", {}).get("execution", {})
        start, end = execution.get("iopub.execute_input"), execution.get("shell.execute_reply")
        if start and end:
            seconds = (datetime.fromisoformat(end.replace("Z", "+00:00"))
                       - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()
            first = cell.source.strip().splitlines()[0][:40] if cell.source.strip() else ""
            timed.append((seconds, index, first))
    return ", ".join(f"celda {i} {s:.0f} s ({first})"
                     for s, i, first in sorted(timed, reverse=True)[:count])


def probe_result(nb):
    for line in cell_text(nb.cells[-1]).splitlines():
        if line.startswith(PROBE_MARK):
            return json.loads(line.removeprefix(PROBE_MARK))
    raise AssertionError(f"the probe cell printed nothing:\n{nb.cells[-1].get('outputs')}")


@pytest.mark.parametrize("chapter", chapters(), ids=lambda c: c.name)
def test_student_notebook_runs_on_colab(chapter, colab_kernels, request, tmp_path):
    release = nbformat.read(chapter.student_notebook, as_version=4)
    first = release.cells[0]
    assert first.cell_type == "markdown"
    assert BADGE.format(url=chapter.colab_url) in first.source, "no 'Open in Colab' badge"
    installs = [c.source for c in release.cells
                if c.cell_type == "code" and INSTALLS_RE.search(c.source)]
    assert not installs, f"cells install packages (Colab must need nothing):\n{installs}"

    nb = student_run(chapter)
    km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=colab_kernels)
    # cwd: an empty folder, like Colab's /content (the repository must not be importable).
    client = NotebookClient(nb, km=km, timeout=CELL_TIMEOUT, allow_errors=True,
                            shutdown_kernel="immediate",
                            resources={"metadata": {"path": str(tmp_path)}})
    started = time.perf_counter()
    try:
        # cleanup_kc: nbclient leaves alone a kernel whose manager it was given; stop it here.
        client.execute(env=kernel_environment(), cleanup_kc=True)
    except (CellTimeoutError, DeadKernelError) as error:
        pytest.fail(f"{chapter.name}: {type(error).__name__}: {error}\n" + "\n".join(errors(nb)))
    report(request, f"[timing] colab run {chapter.name}: {time.perf_counter() - started:.0f} s; "
                    f"slowest: {slowest_cells(nb)}")

    failures = errors(nb)
    assert not failures, f"{len(failures)} cell(s) failed on Colab:\n\n" + "\n\n".join(failures)
    helper = next(c for c in nb.cells
                  if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("_utilidades"))
    assert "Entorno:" in cell_text(helper), "the helper cell did not report the runtime"
    probe = probe_result(nb)
    assert Path(probe["python"]).parent == VENV / "bin", probe["python"]
    assert probe["versions"] == EXPECTED_VERSIONS
    assert probe["importable"] == [], f"not on Colab, yet importable: {probe['importable']}"
