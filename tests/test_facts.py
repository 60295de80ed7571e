"""Grading passes data, not sentences: the status type, the facts the executor stores in a
notebook, how they classify a submission, and the banner they put on the feedback page."""

import ast
import csv
import io
import json
from pathlib import Path

import nbformat
import pytest
from nbconvert.preprocessors import ClearMetadataPreprocessor

from autograder.collect import collect
from autograder.course import load_config
from autograder.execute import GradingExecute
from autograder.export import summary_table
from autograder.facts import METADATA_KEY, Facts, classify
from autograder.feedback import plain_page
from autograder.outcome import NO_PROTECTION_RECORD, Outcome, Status
from autograder.preprocessors import PROTECTION_CELL_ID, STATUS_CELL_ID, StatusBanner

READ = {"kind": "read", "target": "/curso/gradebook.db"}
REPLACED = {"kind": "replaced", "target": "torch.allclose"}


def test_statuses_are_spelled_once():
    """Everywhere else on the grader side says ``Status.X``: a typo is then an error, not a
    silent mismatch. (Chapter folders compare with the plain value, which ``Status`` equals.)"""
    root = Path(__file__).resolve().parent.parent
    allowed = {root / "autograder" / "outcome.py", Path(__file__).resolve()}
    values = {status.value for status in Status}
    spelled = [f"{path.relative_to(root)}:{node.lineno} {node.value!r}"
               for folder in ("autograder", "tests") for path in (root / folder).rglob("*.py")
               if path not in allowed and "chapters" not in path.relative_to(root).parts
               for node in ast.walk(ast.parse(path.read_text()))
               if isinstance(node, ast.Constant) and node.value in values]
    assert spelled == []


def test_a_status_is_written_as_its_value_and_told_in_spanish():
    assert f"{Status.TAMPERING}" == str(Status.TAMPERING) == "tampering detected"
    assert Status("timed out") is Status.TIMED_OUT and Status.GRADED == "graded"
    assert all(status.text and status.text != status.value for status in Status)
    buffer = io.StringIO()
    csv.writer(buffer).writerow([Status.KERNEL_DIED])
    assert buffer.getvalue().strip() == "kernel died"
    table = summary_table([Outcome("x", "a", Status.CRASHED, "celda 3"),
                           Outcome("y", "a", Status.GRADER_ERROR, "Traceback: ...")])
    assert "crashed (celda 3)" in table and "Traceback" not in table


@pytest.mark.parametrize("facts,status,detail", [
    (Facts(), Status.GRADED, ""),
    (Facts(timed_out_cells=[9, 7]), Status.TIMED_OUT, "celda 7"),
    (Facts(killed_cells=[12], timed_out_cells=[7]), Status.CRASHED, "celda 12"),
    (Facts(tampering={"a": [READ], "b": [REPLACED, READ]}, killed_cells=[3]),
     Status.TAMPERING, "intento de leer /curso/gradebook.db; "
                       "torch.allclose reemplazado; intento de leer /curso/gradebook.db"),
    (Facts(kernel_death={"cell": 4, "error": "DeadKernelError"}, tampering={"a": [READ]}),
     Status.KERNEL_DIED, "celda 4"),
    (Facts(kernel_death={"cell": None, "error": "RuntimeError"}), Status.KERNEL_DIED,
     "al iniciar el kernel"),
])
def test_the_status_comes_from_the_facts(facts, status, detail):
    assert classify(facts) == (status, detail)


def test_hidden_test_parts_are_plain_data_with_the_points_puntuar_gives():
    from autograder.hidden.runner import part_results
    from autograder.student.compare import Caso, Parte, puntuar

    def wrong(caso):
        raise ValueError("mal")

    parts = [Parte("valor", 2.0, wrong), Parte("otra", 1.0, lambda caso: None),
             Parte("intactas", 0.5, lambda caso: None, requisito=True)]
    case = Caso(resultado=1, error=None, datos={})
    result = puntuar(parts, [case])
    stored = part_results(result)
    assert sum(p["earned"] for p in stored) == result.puntos == 1.5
    facts = stored[0].pop("facts")
    assert stored[0] == {"part": "valor", "points": 2.0, "earned": 0.0,
                         "diagnosis": result.diagnostico} and result.diagnostico
    assert set(facts) == set(result.fallos[0][1].hechos)
    assert facts["detalle"].endswith("ValueError: mal") and len(facts["detalle"]) <= 200
    assert [p["diagnosis"] for p in stored[1:]] == [None, None]
    assert [p["facts"] for p in stored[1:]] == [None, None]
    nothing = part_results(puntuar(parts[::2], [case]))  # a requirement alone earns nothing
    assert [p["earned"] for p in nothing] == [0.0, 0.0]
    json.dumps(stored)


def test_facts_survive_the_notebook_file_and_clear_metadata():
    nb = nbformat.v4.new_notebook(metadata={"otra": 1})
    facts = Facts(notes=["convertido desde nbformat 3"], tampering={"a": [READ]},
                  timings={"execution": 1.5}, hidden_tests={"a": {
                      "points": 0.0, "max_points": 1.0, "zeroed": "tampering",
                      "parts": [{"part": "p", "points": 1.0, "earned": 1.0,
                                 "diagnosis": None}]}})
    facts.write(nb)
    # ClearMetadataPreprocessor is off in the configuration; turned on, it keeps the facts.
    clear = ClearMetadataPreprocessor(config=load_config(), enabled=True)
    nb, _ = clear.preprocess(nbformat.reads(nbformat.writes(nb), as_version=4), {})
    assert Facts.read(nb) == facts and "otra" not in nb.metadata
    json.dumps(nb.metadata[METADATA_KEY])  # plain data


def _notebook(facts):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
    return facts.write(nb)


def test_the_banner_says_the_status_and_the_notes_first_escaped():
    nb = _notebook(Facts(notes=["se calificó «<b>x</b>.ipynb»"],
                         tampering={"a": [{"kind": "read", "target": "<script>"}]}))
    nb, _ = StatusBanner().preprocess(nb, {})
    banner = nb.cells[0]
    assert banner.cell_type == "markdown" and banner.id == STATUS_CELL_ID
    assert banner.source.startswith("<div class='alert alert-info' lang='es'><p>Estado: ")
    assert Status.TAMPERING.text in banner.source and "\n\n" not in banner.source
    assert "&lt;script&gt;" in banner.source and "&lt;b&gt;x&lt;/b&gt;" in banner.source
    assert "<script>" not in banner.source and "Al recibir tu entrega:" in banner.source
    nbformat.validate(nb)


def test_no_banner_for_a_submission_graded_as_handed_in():
    nb, _ = StatusBanner().preprocess(_notebook(Facts()), {})
    assert [c.id for c in nb.cells if c.cell_type == "markdown"] == [PROTECTION_CELL_ID]


def test_every_page_ends_with_the_protections_the_grader_recorded():
    full = Facts(protection=["bubblewrap", "seccomp", "guard"])
    nb, _ = StatusBanner().preprocess(_notebook(full), {})
    assert nb.cells[-1].id == PROTECTION_CELL_ID
    assert nb.cells[-1].source == (
        "<p lang='es'><small>Calificado con: aislamiento del sistema operativo (bubblewrap), "
        "filtro de llamadas al sistema (seccomp) y guardián dentro del kernel.</small></p>")
    nb, _ = StatusBanner().preprocess(_notebook(Facts(protection=["guard"])), {})
    assert "guardián dentro del kernel (SIN aislamiento del sistema operativo)" in (
        nb.cells[-1].source)
    nb, _ = StatusBanner().preprocess(_notebook(Facts()), {})
    assert NO_PROTECTION_RECORD in nb.cells[-1].source
    page = plain_page(Outcome("ana", "01_x", Status.UNREADABLE, "vacío"))
    assert f"Calificado con: {NO_PROTECTION_RECORD}." in page


def test_the_plain_page_says_why_in_spanish():
    page = plain_page(Outcome("ana", "01_x", Status.UNREADABLE, "el archivo está vacío",
                              notes=["<nota>"]))
    assert "el cuaderno entregado no se pudo leer: el archivo está vacío." in page
    assert "&lt;nota&gt;" in page


def test_the_executor_keeps_only_plain_records_and_notices_a_forged_report():
    execute = GradingExecute()
    execute._refusals_seen = 0
    reported = [dict(READ, extra=object()), REPLACED, {"kind": "forged report", "target": ""},
                {"kind": "nonsense"}, "texto"]
    assert execute._counted(reported) == [REPLACED, READ, {"kind": "forged report",
                                                           "target": ""}]
    assert execute._counted([READ, REPLACED]) == [REPLACED]  # an old attempt counts once


def test_collect_stores_the_notes_and_drops_facts_a_student_wrote(tmp_path):
    course = tmp_path / "course"
    release = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Tarea")])
    (course / "release" / "tarea").mkdir(parents=True)
    nbformat.write(release, course / "release" / "tarea" / "tarea.ipynb")
    forged = nbformat.v4.new_notebook(cells=release.cells, metadata={
        METADATA_KEY: {"notes": ["nota falsa"], "tampering": {"x": []}}})
    (tmp_path / "entregas" / "ana" / "tarea").mkdir(parents=True)
    nbformat.write(forged, tmp_path / "entregas" / "ana" / "tarea" / "otro_nombre.ipynb")
    [outcome] = collect(tmp_path / "entregas", course)
    graded = nbformat.read(course / "submitted" / "ana" / "tarea" / "tarea.ipynb", 4)
    assert outcome.notes and Facts.read(graded) == Facts(notes=outcome.notes)


def _test_cell(source, grade_id):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True,
                                 "points": 1, "grade_id": grade_id, "schema_version": 3}
    return cell


@pytest.mark.slow
@pytest.mark.parametrize("deaths_allowed", [3, 0])
def test_the_executor_records_time_outs_and_kernel_deaths_as_facts(tmp_path, deaths_allowed):
    from jupyter_client import AsyncKernelManager

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1"), _test_cell("import time\ntime.sleep(60)", "lenta"),
        _test_cell("import os\nos._exit(1)", "mata"), _test_cell("assert x == 1", "bien")])
    execute = GradingExecute(kernel_name="python3", kernel_manager_class=AsyncKernelManager,
                             timeout=2, max_kernel_deaths=deaths_allowed)
    nb, _ = execute.preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    facts = Facts.read(nb)
    assert facts.timed_out_cells == [1] and set(facts.timings) == {"kernel start", "imports",
                                                                   "execution"}
    errors = [[o.ename for o in c.outputs if o.output_type == "error"] for c in nb.cells[1:]]
    if deaths_allowed:  # skipped, run again in a fresh kernel: the rest is graded
        assert facts.killed_cells == [2] and facts.kernel_death is None
        assert classify(facts) == (Status.CRASHED, "celda 2")
        assert "CellTimeoutError" in errors[0] and errors[1:] == [["KernelMuerto"], []]
    else:  # nothing scores: a test cell that never ran would count as passed
        assert facts.kernel_death == {"cell": 2, "error": "DeadKernelError"}
        assert classify(facts) == (Status.KERNEL_DIED, "celda 2")
        assert errors == [["KernelMuerto"]] * 3


@pytest.mark.slow
def test_output_that_arrives_late_after_the_reply_is_waited_for(tmp_path):
    """A cell's output may reach the grader seconds after its reply (100 MB printed on a
    loaded machine): nbclient's 4 s counted that cell as one that broke its kernel."""
    from jupyter_client import AsyncKernelManager

    # The kernel announces it is idle, the end of a cell's output, 6 s after its reply.
    late = ("import time\nx = 1\nkernel = get_ipython().kernel\n"
            "announce = kernel._publish_status\n"
            "def late(status, *args, **kwargs):\n"
            "    if status == 'idle':  # after the reply, on the thread that sends output\n"
            "        kernel._publish_status = announce\n"
            "        kernel.iopub_socket.io_thread.schedule(lambda: time.sleep(6))\n"
            "    return announce(status, *args, **kwargs)\n"
            "kernel._publish_status = late\nprint('tarde')")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(late),
                                         _test_cell("assert x == 1", "bien")])
    execute = GradingExecute(kernel_name="python3", kernel_manager_class=AsyncKernelManager,
                             timeout=20)
    nb, _ = execute.preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    facts = Facts.read(nb)
    assert facts.killed_cells == [] and facts.kernel_death is None
    assert [o.text for o in nb.cells[0].outputs] == ["tarde\n"]
    assert classify(facts) == (Status.GRADED, "")
