"""The injected helper cell runs on a machine without the autograder package (Colab)."""

import subprocess
import sys

import pytest

from autograder.course import chapters
from autograder.inject import helper_source, shadowed_names


def test_helper_cell_runs_without_the_package(tmp_path):
    script = tmp_path / "helpers.py"
    script.write_text(helper_source("ch01") + "\nassert callable(comprobar_manual_backward)\n")
    # -I: isolated mode, so neither the repository nor an editable install is importable.
    blocker = "import sys; sys.modules['autograder'] = None\n"
    result = subprocess.run([sys.executable, "-I", "-c", blocker + script.read_text()],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Entorno:" in result.stdout
    assert result.stderr == ""


def test_helper_cell_has_no_package_imports():
    source = helper_source("ch01")
    assert "from autograder" not in source and "import autograder" not in source
    assert source.startswith("#@title")


def test_notebook_names_cannot_break_the_helpers():
    from autograder.hidden.reference import load_reference

    reference = load_reference("ch01")

    namespace = {}
    exec(helper_source("ch01"), namespace)
    # A demo or a student defining names the helpers use internally changes nothing.
    for name in ("gradientes_autograd", "comparar", "torch", "fallar", "Parte", "caso_red"):
        namespace[name] = None
    namespace["comprobar_manual_backward"](reference.manual_backward)



def test_only_gpu_chapters_ask_for_runtime_advice():
    assert helper_source("ch06").endswith("info_entorno(consejo_gpu=True)\n")
    assert helper_source("ch01").endswith("info_entorno()\n")


def _runtime_report(monkeypatch, capsys, gpu=None):
    """What the chapter 6 helper cell prints on a machine with ``gpu`` = (name, capability)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu is not None)
    if gpu:
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda *_: gpu[0])
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *_: gpu[1])
    exec(helper_source("ch06"), {})
    return capsys.readouterr().out


def test_gpu_chapter_says_which_runtime_to_pick_without_a_gpu(monkeypatch, capsys):
    lines = _runtime_report(monkeypatch, capsys).strip().splitlines()
    assert lines[0].startswith("Entorno:") and 2 <= len(lines) - 1 <= 3
    advice = " ".join(lines[1:])
    assert "Cambiar tipo de entorno de ejecución → GPU T4" in advice
    assert "CPU con bfloat16" in advice and "se saltan" in advice


def test_gpu_chapter_names_the_gpu_and_its_bf16(monkeypatch, capsys):
    t4 = " ".join(_runtime_report(monkeypatch, capsys, ("Tesla T4", (7, 5))).split())
    assert "Tesla T4 (capacidad 7.5)" in t4 and "no tiene bfloat16 nativo" in t4
    assert "float16 y GradScaler" in t4
    a100 = " ".join(_runtime_report(monkeypatch, capsys, ("NVIDIA A100", (8, 0))).split())
    assert "NVIDIA A100 (capacidad 8.0)" in a100 and "tiene bfloat16 nativo" in a100
    assert "no tiene" not in a100


def test_a_chapter_name_that_shadows_a_shared_helper_is_a_build_error():
    shared = "def comparar(nombre, obtenido, esperado):\n    pass\nLIMITE = 1\n"
    own = ("def comparar(obtenido, esperado, nombre):\n    pass\n"
           "def propia():\n    pass\n__all__ = []\nLIMITE += 1\n")
    assert shadowed_names([("compare.py", shared), ("ch03/student.py", own)]) == [
        ("comparar", "ch03/student.py", "compare.py"), ("LIMITE", "ch03/student.py", "compare.py")]
    assert shadowed_names([("compare.py", shared), ("ch03/student.py", "x = 1\n")]) == []


@pytest.mark.parametrize("chapter", [c.key for c in chapters()])
def test_no_chapter_shadows_a_shared_helper(chapter):
    helper_source(chapter)  # raises on a clash


def test_a_student_exception_shows_the_students_frames_not_the_helper_cells():
    # In a notebook the checks are the helper cell: its frames (a check's wrapper around the
    # student's call) are internals, as the package's files are.
    namespace = {}
    exec(compile(helper_source("ch02"), "<celda de utilidades>", "exec"), namespace)
    student = ("def distillation_loss(student, teacher, x, temperature):\n"
               "    raise ValueError('la forma no cuadra')\n")
    exec(compile(student, "<celda del estudiante>", "exec"), namespace)
    with pytest.raises(Exception) as failure:
        namespace["comprobar_distillation_loss"](namespace["distillation_loss"])
    message = str(failure.value)
    assert "<celda del estudiante>" in message and "la forma no cuadra" in message
    assert "<celda de utilidades>" not in message
