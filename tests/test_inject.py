"""The injected helper cell runs on a machine without the autograder package (Colab)."""

import subprocess
import sys

from autograder.inject import helper_source


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
    from autograder.reference import ch01 as reference

    namespace = {}
    exec(helper_source("ch01"), namespace)
    # A demo or a student defining names the helpers use internally changes nothing.
    for name in ("gradientes_autograd", "comparar", "torch", "fallar", "Parte", "caso_red"):
        namespace[name] = None
    namespace["comprobar_manual_backward"](reference.manual_backward)

