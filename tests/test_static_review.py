"""Code that reaches into the interpreter's machinery is flagged for an instructor, on the
notebook's text, in the grader (``autograder.static_review``); the course's own cells and
ordinary solutions are not."""

import nbformat
import pytest

from autograder.intake import read_submission
from autograder.static_review import findings, review_note

WAYS_IN = {
    "import ctypes": "import ctypes",
    "import gc\ngc.get_objects()": "import gc",
    "from ctypes import CDLL": "from ctypes import …",
    "import sys\nsys.modules['autograder.kernel'].x = 1": "sys.modules",
    "import torch\ntorch._C._set_grad_enabled(True)": "torch._C",
    "from torch._C import _set_grad_enabled": "from torch._C import …",
    "import os\nos.posix_spawn('/bin/sh', [], {})": "os.posix_spawn",
    "from os import fork": "os.fork",
    "m = __import__('ct' + 'ypes')": "__import__(…)",
    "import importlib\nimportlib.import_module('gc')": "importlib.import_module(…)",
    "f = (lambda: 0).__globals__": ".__globals__",
    "x = ().__class__.__base__.__subclasses__()": ".__subclasses__",
    "import _posixsubprocess": "import _posixsubprocess",
    "import autograder.kernel": "import autograder.kernel",
    "!ls /": "!orden (una orden del sistema)",  # IPython's get_ipython().system(...)
    "import os\nos.system('ls')": "os.system",
}
ORDINARY = ["import torch\nx = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()",
            "import math, os\nos.environ.get('HOME')\nmath.exp(1)",
            "%timeit sum(range(10))", "def f(:\n  pass"]


@pytest.mark.parametrize("source,found", WAYS_IN.items(), ids=list(WAYS_IN))
def test_each_way_in_is_found(source, found):
    assert found in findings(source)


@pytest.mark.parametrize("source", ORDINARY)
def test_ordinary_code_is_not_flagged(source):
    assert findings(source) == []


def test_only_the_students_cells_are_read_and_the_note_goes_with_the_submission(tmp_path):
    demo = nbformat.v4.new_code_cell("import gc  # a demonstration of the course")
    release = nbformat.v4.new_notebook(cells=[demo, nbformat.v4.new_code_cell("# stub")])
    honest = nbformat.v4.new_notebook(cells=[demo, nbformat.v4.new_code_cell("y = 1")])
    assert review_note(honest, release) is None
    hostile = nbformat.v4.new_notebook(cells=[demo, nbformat.v4.new_code_cell(
        "import sys\nsys.modules['autograder.kernel'].Guard = None")])
    note = review_note(hostile, release)
    assert note.startswith("revisar a mano") and "sys.modules" in note and "gc" not in note
    folder = tmp_path / "tarea"
    folder.mkdir()
    nbformat.write(hostile, folder / "tarea.ipynb")
    assert note in read_submission(folder, "tarea", release).notes
