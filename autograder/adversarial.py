"""The adversarial corpus: hostile and broken submissions, each with its expected outcome.

Every case starts from the reference solution of chapter 1 and changes one thing. The
end-to-end test grades them all in one batch, together with an honest student, through
the real pipeline, and checks: no undeserved points, no grader crash, the honest student
graded correctly, and every case reported with its reason.
"""

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader import utils

from autograder.hidden.seeds import SECRET_FILE
from autograder.outcome import Status
from autograder.submissions import fill_solutions, solution_code

ASSIGNMENT = "01_grafo_dinamico"
MB, TL, GP = "manual_backward", "two_loss_grads", "gradient_penalty"
ALL = (MB + "_test", TL + "_test", GP + "_test")

# A plausible wrong answer, to prove that a trick, not the answer, would earn the points.
WRONG_MB = '''def manual_backward(x, y, W1, b1, W2, b2):
    return {k: torch.zeros_like(v) for k, v in dict(W1=W1, b1=b1, W2=W2, b2=b2).items()}
'''


def patched(prefix, body=WRONG_MB):
    """A manual_backward cell that first runs ``prefix`` (the trick), then a wrong answer."""
    return prefix.strip() + "\n\n" + body


@dataclass(frozen=True)
class Case:
    student_id: str
    description: str
    cells: dict = field(default_factory=dict)  # grade_id -> replacement code
    transform: object = None  # callable(nb) -> nb or bytes, after the cells are filled
    filename: str = f"{ASSIGNMENT}.ipynb"
    # name in the submission folder -> what it links to, relative to the course folder
    # ("{a}": the assignment); a link named as the notebook replaces it
    links: dict = field(default_factory=dict)
    max_points: dict = field(default_factory=dict)  # grade id -> most points allowed
    status: Status = Status.GRADED
    reason: str = ""  # a fragment the detail or notes must contain


def _zero(*cells):
    return {cell: 0.0 for cell in cells}


def _strip_metadata(nb):
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
    return nb


def _duplicate_test(nb):
    index = next(i for i, c in enumerate(nb.cells)
                 if c.metadata.get("nbgrader", {}).get("grade_id") == MB + "_test")
    nb.cells.insert(index + 1, copy.deepcopy(nb.cells[index]))
    nb.cells[index + 1]["id"] = "duplicada"
    return nb


def _test_before_solution(nb):
    test = next(i for i, c in enumerate(nb.cells)
                if c.metadata.get("nbgrader", {}).get("grade_id") == TL + "_test")
    cell = nb.cells.pop(test)
    solution = next(i for i, c in enumerate(nb.cells)
                    if c.metadata.get("nbgrader", {}).get("grade_id") == TL)
    nb.cells.insert(solution, cell)
    return nb


def _edit_tests(nb, source="print('todo correcto')\n3.0"):
    for cell in nb.cells:
        if utils.is_grade(cell) and not utils.is_solution(cell):
            cell.source = source
    return nb


def _delete_locked(nb):
    nb.cells = [c for c in nb.cells if not c.metadata.get("nbgrader", {}).get("locked")]
    return nb


def _edit_points(nb):
    for cell in nb.cells:
        if utils.is_grade(cell):
            cell.metadata["nbgrader"]["points"] = 100
    return nb


def _as_nbformat3(nb):
    return nbformat.writes(nbformat.convert(nb, 3)).encode()


# --- The grader's own reach (issue 14): what a kernel could find, kill or inject.
# Each is an independent rebuild of an attack that once worked, run next to honest students
# with one worker and with two; the OS sandbox (``autograder.sandbox``) must hold.
SEARCH_REPORT = "INFORME "  # how "busca_todo" starts the line with what it found

COPY_FROM_OTHERS = '''import glob, json, os


def manual_backward(x, y, W1, b1, W2, b2):
    # Another notebook that defines this function without the stub: a classmate's, or the
    # instructor's source in some worker's copy of the course.
    for root in ("/tmp", "/root", "/home", "/work", "/var", "/srv", "/opt",
                 os.path.abspath("../../..")):
        for path in glob.glob(os.path.join(root, "**", "*.ipynb"), recursive=True):
            try:
                cells = json.load(open(path))["cells"]
            except Exception:
                continue
            for cell in cells:
                code = "".join(cell.get("source", ""))
                if "def manual_backward" in code and "NotImplementedError" not in code:
                    namespace = {"torch": torch}
                    exec(code, namespace)
                    return namespace["manual_backward"](x, y, W1, b1, W2, b2)
    raise NotImplementedError()
'''

READ_SECRET = '''import glob, os

# The course secret derives every student's hidden inputs: print it into the feedback.
for root in ("/tmp", "/root", "/home", "/work", "/var", os.path.abspath("../../..")):
    for path in glob.glob(os.path.join(root, "**", "course_secret*"), recursive=True):
        try:
            print("SECRETO", path, open(path).read())
        except OSError:
            pass
'''

SEARCH_EVERYTHING = '''import json, os, sys


def _busca_todo():
    """Every file outside the Python environment read whole; every notebook, secret,
    gradebook and course source looked for by name everywhere; what was read, printed."""
    python = tuple(os.path.realpath(p) + "/" for p in {sys.prefix, sys.base_prefix, "/usr"})
    informe = {"bytes_por_carpeta": {}, "nombres": [], "copiados": [], "visibles": 0}
    for raiz, carpetas, archivos in os.walk("/"):
        if raiz.startswith(("/proc", "/sys", "/dev")):
            carpetas[:] = []
            continue
        informe["visibles"] += len(archivos)
        for nombre in archivos:
            ruta = os.path.join(raiz, nombre)
            en_python = (ruta + "/").startswith(python)
            interesante = (nombre.endswith((".ipynb", ".db", ".sqlite")) or "secret" in nombre
                           or nombre.startswith("grade") or "/autograder/" in ruta
                           or "/solutions/" in ruta)
            if interesante and not en_python:
                informe["nombres"].append(ruta)
            if en_python and not interesante:
                continue
            try:
                with open(ruta, "rb") as archivo:
                    datos = archivo.read()
            except OSError:
                continue
            if not en_python:
                leidos = informe["bytes_por_carpeta"]
                leidos[raiz] = leidos.get(raiz, 0) + len(datos)
            texto = datos.decode("utf-8", "replace")
            if nombre.endswith(".ipynb") and "def manual_backward" in texto and (
                    "NotImplementedError" not in texto):
                informe["copiados"].append(ruta)
    print("INFORME " + json.dumps(informe))


_busca_todo()
'''

KILL_PARENT = '''import os, signal

os.kill(os.getppid(), signal.SIGKILL)
'''

KILL_EVERYTHING = '''import os, signal

for _entrada in os.listdir("/proc"):
    if _entrada.isdigit() and int(_entrada) != os.getpid():
        try:
            os.kill(int(_entrada), signal.SIGKILL)
        except OSError:
            pass
for _objetivo in (os.getppid(), -1):
    try:
        os.kill(_objetivo, signal.SIGKILL)
    except OSError:
        pass
'''

PLANT_LINK = '''import os

# The grader writes the graded notebook into this folder afterwards: a file or a link left
# here must not reach it.
open("marca.txt", "w").write("escrito por el kernel")
for _nombre in ("enlace", "01_grafo_dinamico.ipynb"):
    try:
        os.symlink("/etc/hostname", _nombre)
    except OSError:
        pass
'''

# Student code owns its interpreter: it empties the in-kernel guard's table of blocked
# events, then starts a process (which could read what the sandbox lets no kernel see,
# or outlive the kernel), or calls the C library directly. Linux refuses either way.
NEUTER_GUARD = """
import gc
for _o in gc.get_objects():
    if type(_o).__name__ == "Guard" and hasattr(_o, "hook"):
        _o.hook.__func__.__globals__["BLOCKED_EVENTS"] = ("nada",)
"""
SPAWN_PAST_GUARD = NEUTER_GUARD + """import subprocess
try:
    subprocess.run(["/bin/sh", "-c", "ls /"])
except OSError:
    pass
"""
RAW_SYSCALLS = NEUTER_GUARD + """import ctypes
_libc = ctypes.CDLL(None, use_errno=True)
for _call in (_libc.fork, lambda: _libc.ptrace(16, 1, 0, 0), lambda: _libc.unshare(0x10000000),
              lambda: _libc.prctl(22, 2, 0, 0, 0)):
    try:
        _call()
    except OSError:
        pass
"""

HOSTILE_MARKER = "hackeado"  # what every injected script would write into the page
HOSTILE_MARKDOWN = (
    "Mi respuesta: <img src=x onerror=\"window.hackeado=1;document.title='hackeado'\">"
    "<script>window.hackeado=1</script> [clic](javascript:window.hackeado=1) "
    "<svg onload=\"window.hackeado=1\"></svg> $\\href{javascript:window.hackeado=1}{x}$\n")
HOSTILE_OUTPUTS = '''from IPython.display import HTML, SVG, Javascript, Markdown, display

display(HTML("<b onmouseover='window.hackeado=1'>hola</b><script>window.hackeado=1</script>"
             "<iframe src='javascript:window.hackeado=1'></iframe>"))
display(Javascript("window.hackeado = 1; document.title = 'hackeado'"))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" onload="window.hackeado=1">'
            '<script>window.hackeado=1</script></svg>'))
display(Markdown("<img src=x onerror='window.hackeado=1'>"))
display({"image/png": "x\\" onerror=\\"window.hackeado=1", "text/plain": "imagen"}, raw=True)
display({"application/vnd.jupyter.widget-view+json": {"model_id": "x", "version_major": 2,
                                                      "version_minor": 0}}, raw=True)
'''


def _hostile_html(nb):
    """A markdown cell and a raw cell of HTML/JavaScript, after the first exercise."""
    index = next(i for i, c in enumerate(nb.cells)
                 if c.metadata.get("nbgrader", {}).get("grade_id") == MB)
    raw = nbformat.v4.new_raw_cell("<script>window.hackeado=1</script>")
    raw.metadata["raw_mimetype"] = "text/html"
    nb.cells[index + 1:index + 1] = [nbformat.v4.new_markdown_cell(HOSTILE_MARKDOWN), raw]
    for cell in nb.cells:
        cell.setdefault("id", None)
        if cell.id is None:
            cell.id = f"hostil-{nb.cells.index(cell)}"
    return nb


FORGED_LINE = "FORJADO"  # what a kernel writes into every descriptor it can reach
# The grader's stdout/stderr (its terminal, its log), had the kernel inherited them, and
# those of bubblewrap's init: a forged line and a screen clear written into each, and
# whatever can be read out of them printed into the feedback.
WRITE_INHERITED = f"""import os
for _ruta in ["/proc/self/fd/0", "/proc/self/fd/1", "/proc/self/fd/2",
              *(f"/proc/1/fd/{{n}}" for n in (os.listdir("/proc/1/fd")
                if os.path.isdir("/proc/1/fd") else []))]:
    try:
        _fd = os.open(_ruta, os.O_RDWR | os.O_NONBLOCK)
    except OSError:
        continue
    try:
        os.write(_fd, b"\\x1b[2J{FORGED_LINE} ana 0/9 (graded)\\n")
        print("LEIDO", _ruta, os.read(_fd, 4096)[:200])
    except OSError:
        pass
    finally:
        os.close(_fd)
"""
def _link_cases(prefix, tests):
    """A submission that is a link to the instructor's source notebook, and one whose
    sidecar file is a link to the course secret: both refused, never read."""
    return [
        Case(prefix + "enlace_a_la_fuente", "entrega un enlace simbólico al cuaderno fuente",
             links={"{a}.ipynb": "source/{a}/{a}.ipynb"}, status=Status.UNREADABLE,
             reason="enlace simbólico", max_points=_zero(*tests)),
        Case(prefix + "anexo_enlazado", "timestamp.txt es un enlace al secreto del curso",
             links={"timestamp.txt": SECRET_FILE}, status=Status.UNREADABLE,
             reason="enlace simbólico", max_points=_zero(*tests)),
    ]


HOSTILE_CASES = [
    Case("copia_de_otro", "busca en el disco otro cuaderno que resuelva el ejercicio y lo ejecuta",
         {MB: COPY_FROM_OTHERS}, max_points=_zero(MB + "_test")),
    Case("lee_secreto", "busca course_secret.txt y lo imprime en su retroalimentación",
         {MB: patched(READ_SECRET)}, max_points=_zero(MB + "_test")),
    Case("busca_todo", "lee todo el sistema de archivos que puede y anota lo que encuentra",
         {MB: patched(SEARCH_EVERYTHING)}, max_points=_zero(MB + "_test")),
    Case("mata_padre", "envía SIGKILL al proceso padre del kernel",
         {MB: patched(KILL_PARENT)}, max_points=_zero(MB + "_test"),
         status=Status.TAMPERING, reason="señal"),
    Case("mata_todo", "envía SIGKILL a cada proceso que ve, a su padre y a todos (-1)",
         {MB: patched(KILL_EVERYTHING)}, max_points=_zero(MB + "_test"),
         status=Status.TAMPERING, reason="señal"),
    Case("planta_enlace", "deja un archivo y enlaces simbólicos en su carpeta de trabajo",
         {MB: patched(PLANT_LINK)}, max_points=_zero(MB + "_test")),
    Case("proceso_sin_guardian", "vacía la tabla del guardián y lanza un proceso",
         max_points=_zero(MB + "_test"), status=Status.TAMPERING, reason="bloqueada por Linux"),
    Case("llamadas_crudas", "vacía la tabla del guardián y llama a fork, ptrace, unshare y "
         "seccomp con ctypes", max_points=_zero(MB + "_test"), status=Status.TAMPERING,
         reason="bloqueada por Linux"),
    Case("descriptores", "escribe una línea falsa en cada descriptor heredado y lee de "
         "ellos; una respuesta mal", {MB: patched(WRITE_INHERITED)},
         max_points=_zero(MB + "_test")),
    *_link_cases("", ALL),
    Case("html_hostil", "HTML y JavaScript en markdown, celdas raw y salidas",
         {MB: patched(HOSTILE_OUTPUTS)}, transform=_hostile_html,
         max_points=_zero(MB + "_test")),
]

CASES = [
    # --- monkeypatching what checks could rely on
    Case("mono_allclose", "torch.allclose siempre True y una respuesta mal",
         {MB: patched("torch.allclose = lambda *a, **k: True")},
         max_points=_zero(*ALL), status=Status.TAMPERING, reason="torch.allclose"),
    Case("mono_assert_close", "torch.testing.assert_close que no falla nunca",
         {MB: patched("torch.testing.assert_close = lambda *a, **k: None")},
         max_points=_zero(*ALL), status=Status.TAMPERING, reason="assert_close"),
    Case("mono_tensor_eq", "torch.Tensor.__eq__ siempre True",
         {MB: patched("torch.Tensor.__eq__ = lambda self, other: True")},
         max_points=_zero(*ALL), status=Status.TAMPERING, reason="torch.Tensor.__eq__"),
    Case("mono_numpy", "numpy.allclose siempre True",
         {MB: patched("import numpy\nnumpy.allclose = lambda *a, **k: True")},
         max_points=_zero(*ALL), status=Status.TAMPERING, reason="numpy.allclose"),
    Case("mono_ayudantes", "reemplaza la puntuación de las utilidades del curso",
         {MB: patched("import autograder.student.compare as c\n"
                      "c.puntuar = lambda partes, casos: None")},
         max_points=_zero(*ALL), status=Status.TAMPERING, reason="puntuar"),
    Case("mono_builtins", "isinstance siempre True (deja el kernel sin responder)",
         {MB: patched("import builtins\nbuiltins.isinstance = lambda *a: True")},
         max_points=_zero(MB + "_test"), status=Status.CRASHED),
    Case("mono_builtins_abs", "abs devuelve siempre 0",
         {MB: patched("import builtins\nbuiltins.abs = lambda x: 0")},
         max_points=_zero(*ALL), status=Status.TAMPERING, reason="builtins.abs"),
    # --- odd return values
    Case("eq_siempre_true", "devuelve objetos cuyo __eq__ siempre es True",
         {MB: "class Todo:\n    def __eq__(self, other):\n        return True\n\n\n"
              "def manual_backward(x, y, W1, b1, W2, b2):\n"
              "    return {k: Todo() for k in ('W1', 'b1', 'W2', 'b2')}\n"},
         max_points=_zero(MB + "_test")),
    Case("subclase_tensor", "una subclase de Tensor que dice ser igual a todo",
         {MB: "class Mentira(torch.Tensor):\n"
              "    @classmethod\n"
              "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
              "        return True\n\n\n"
              "def manual_backward(x, y, W1, b1, W2, b2):\n"
              "    falso = torch.zeros(1).as_subclass(Mentira)\n"
              "    return {k: falso for k in ('W1', 'b1', 'W2', 'b2')}\n"},
         max_points=_zero(MB + "_test")),
    Case("tipo_equivocado", "devuelve cadenas y listas",
         {MB: "def manual_backward(x, y, W1, b1, W2, b2):\n    return 'W1, b1, W2, b2'\n",
          TL: "def two_loss_grads(model, x, y):\n    return [[0.0], [0.0]]\n"},
         max_points=_zero(MB + "_test", TL + "_test")),
    Case("codificada", "respuesta copiada del ejemplo público",
         {MB: "_EJEMPLO = None\n\n\ndef manual_backward(x, y, W1, b1, W2, b2):\n"
              "    g = torch.Generator().manual_seed(1)\n"
              "    n = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)\n"
              "    x, y, W1, b1, W2, b2 = n(6, 4), n(6, 3), n(4, 5), n(5), n(5, 3), n(3)\n"
              "    b1[0] = -50.0\n"
              "    z = x @ W1 + b1\n    h = torch.relu(z)\n"
              "    d = 2 * (h @ W2 + b2 - y) / y.numel()\n"
              "    dz = (d @ W2.T) * (z > 0)\n"
              "    return {'W1': x.T @ dz, 'b1': dz.sum(0), 'W2': h.T @ d, 'b2': d.sum(0)}\n"},
         max_points=_zero(MB + "_test")),
    # --- calling the reference or reading what is not theirs
    Case("referencia_import", "importa la implementación de referencia",
         {MB: "def manual_backward(x, y, W1, b1, W2, b2):\n"
              "    from autograder.hidden.reference import load_reference\n"
              "    ref = load_reference('ch01').manual_backward\n"
              "    return ref(x, y, W1, b1, W2, b2)\n"},
         max_points=_zero(MB + "_test"), status=Status.TAMPERING, reason="reference"),
    Case("referencia_sys_modules", "busca la referencia en sys.modules",
         {MB: "import sys\n\n\ndef manual_backward(x, y, W1, b1, W2, b2):\n"
              "    hidden = sys.modules['autograder.chapters.ch01.hidden']\n"
              "    return hidden.reference.manual_backward(x, y, W1, b1, W2, b2)\n"},
         max_points=_zero(MB + "_test")),
    Case("referencia_gc", "busca la referencia con gc",
         {MB: "import gc\n\n\ndef manual_backward(x, y, W1, b1, W2, b2):\n"
              "    for f in gc.get_objects():\n"
              "        if 'reference' in getattr(f, '__module__', '') and \\\n"
              "                getattr(f, '__name__', '') == 'manual_backward':\n"
              "            return f(x, y, W1, b1, W2, b2)\n"
              "    return {}\n"},
         max_points=_zero(MB + "_test")),
    Case("lee_gradebook", "lee el gradebook (que guarda las pruebas ocultas)",
         {MB: patched("try:\n    open('../../../gradebook.db', 'rb').read()\n"
                      "except OSError:\n    pass")},
         max_points=_zero(MB + "_test"), status=Status.TAMPERING, reason="gradebook.db"),
    Case("lee_soluciones", "lee el fuente del capítulo con las soluciones",
         {MB: patched("import pathlib, autograder\n"
                      "raiz = pathlib.Path(autograder.__file__).parent.parent\n"
                      "try:\n    (raiz / 'solutions' / '01_grafo_dinamico.py').read_text()\n"
                      "except OSError:\n    pass")},
         max_points=_zero(MB + "_test"), status=Status.TAMPERING, reason="solutions"),
    Case("lee_otros", "lee la entrega de otra estudiante",
         {MB: patched("try:\n    open('../../../submitted/ana/01_grafo_dinamico/"
                      "01_grafo_dinamico.ipynb').read()\nexcept OSError:\n    pass")},
         max_points=_zero(MB + "_test"), status=Status.TAMPERING, reason="submitted"),
    # --- ending the process, exhausting resources
    Case("sys_exit", "sys.exit() después de definir la función"),
    Case("os_exit", "os._exit(1) en una celda",
         {GP: "import os\nos._exit(1)\n"}, max_points=_zero(GP + "_test"), status=Status.CRASHED),
    Case("segfault", "fallo de segmentación",
         {GP: "import faulthandler\nfaulthandler._sigsegv()\n"},
         max_points=_zero(GP + "_test"), status=Status.CRASHED),
    Case("mata_kernel", "se envía SIGKILL a sí mismo",
         {GP: "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"},
         max_points=_zero(GP + "_test"), status=Status.CRASHED),
    Case("bucle_en_la_funcion", "la función nunca termina",
         {TL: "def two_loss_grads(model, x, y):\n    while True:\n        pass\n"},
         max_points=_zero(TL + "_test"), status=Status.TIMED_OUT),
    Case("memoria_50gb", "pide 50 GB de memoria",
         {TL: "def two_loss_grads(model, x, y):\n"
              "    basura = torch.empty(50 * 2**30 // 4)\n    return basura\n"},
         max_points=_zero(TL + "_test")),
    Case("salida_100mb", "escribe 100 MB en la salida"),
    Case("archivo_enorme", "escribe un archivo de 200 MB"),
    # --- the notebook itself
    Case("celdas_duplicadas", "duplicó una celda de prueba", transform=_duplicate_test,
         reason="duplicadas"),
    Case("celdas_borradas", "borró las pruebas y la celda de utilidades",
         transform=_delete_locked, reason="se restauraron"),
    Case("celdas_reordenadas", "movió una prueba antes de su ejercicio",
         transform=_test_before_solution, reason="se movieron"),
    Case("pruebas_editadas", "cambió las celdas de prueba por '3.0' y una respuesta mal",
         {MB: WRONG_MB}, transform=_edit_tests, max_points=_zero(MB + "_test")),
    Case("puntos_editados", "puso 100 puntos a cada prueba", transform=_edit_points,
         max_points={c: p for c, p in zip(ALL, (3.0, 2.0, 3.0))}, reason="puntos"),
    Case("sin_metadatos", "un editor borró los metadatos de nbgrader",
         transform=_strip_metadata, reason="metadatos"),
    Case("nbformat_3", "guardado con nbformat 3", transform=_as_nbformat3, reason="nbformat 3"),
    Case("json_invalido", "JSON inválido", transform=lambda nb: b'{"cells": [',
         max_points=_zero(*ALL), status=Status.UNREADABLE, reason="JSON"),
    Case("vacio", "archivo vacío", transform=lambda nb: b"", max_points=_zero(*ALL),
         status=Status.UNREADABLE, reason="vacío"),
    Case("nombre_equivocado", "el archivo se llama mi_entrega.ipynb",
         filename="mi_entrega.ipynb", reason="mi_entrega.ipynb"),
    Case("sin_tocar", "entregó el cuaderno publicado tal cual", transform="release",
         max_points=_zero(*ALL)),
    *HOSTILE_CASES,
]

# --- Chapter 6 (mixed precision): the attacks that do not depend on chapter 1's answers,
# in the first exercise's cell (after the right answer, or with a wrong one when the trick
# itself would have to earn the points).
CH06 = "06_precision_mixta"


def _exercises_of(assignment):
    """Its exercises' grade ids, in the notebook's order (named only in the chapter's
    folder: ``tests/test_add_exercise.py``)."""
    from autograder.course import chapter_named

    return list(chapter_named(assignment).module("hidden").HIDDEN)


DL = _exercises_of(CH06)[0]  # the first exercise: the attacks go into its cell
CH06_ALL = tuple(name + "_test" for name in _exercises_of(CH06))
WRONG_DL = f"""def {DL}(log):
    return "ok"
"""
CH06_CASES = [
    Case("c6_mono_allclose", "torch.allclose siempre True (con la respuesta bien)",
         max_points=_zero(*CH06_ALL), status=Status.TAMPERING, reason="torch.allclose"),
    Case("c6_proceso_sin_guardian", "vacía la tabla del guardián y lanza un proceso",
         max_points=_zero(DL + "_test"), status=Status.TAMPERING, reason="bloqueada por Linux"),
    Case("c6_llamadas_crudas", "vacía la tabla del guardián y llama a fork, ptrace, unshare y "
         "seccomp con ctypes", max_points=_zero(DL + "_test"), status=Status.TAMPERING,
         reason="bloqueada por Linux"),
    Case("c6_lee_gradebook", "lee el gradebook (con la respuesta bien)",
         max_points=_zero(DL + "_test"), status=Status.TAMPERING, reason="gradebook.db"),
    Case("c6_lee_secreto", "busca course_secret.txt y lo imprime; una respuesta mal",
         {DL: patched(READ_SECRET, WRONG_DL)}, max_points=_zero(DL + "_test")),
    Case("c6_descriptores", "escribe una línea falsa en cada descriptor heredado y lee de "
         "ellos; una respuesta mal", {DL: patched(WRITE_INHERITED, WRONG_DL)},
         max_points=_zero(DL + "_test")),
    Case("c6_mata_todo", "envía SIGKILL a cada proceso que ve; una respuesta mal",
         {DL: patched(KILL_EVERYTHING, WRONG_DL)}, max_points=_zero(DL + "_test"),
         status=Status.TAMPERING, reason="señal"),
    *_link_cases("c6_", CH06_ALL),
]

# Without the sandbox only (with it, the kernel sees no socket of the grader's): the right
# answer, then a connection to the workers' seed, found in /proc/net/unix. Whoever connects
# there can have code run in a fork of the seed, outside the guard, which refuses it.
SEED_CASE = Case("llama_a_la_semilla", "se conecta al socket de la semilla de los trabajadores",
                 max_points=_zero(MB + "_test"), status=Status.TAMPERING, reason="listener-")

EXTRA_CODE = {
    "llama_a_la_semilla": (MB, """
import socket
for _linea in open("/proc/net/unix").read().splitlines()[1:]:
    _ruta = _linea.split()[-1]
    if "listener-" in _ruta:
        try:
            socket.socket(socket.AF_UNIX).connect(_ruta)
        except OSError:
            pass
"""),
    "proceso_sin_guardian": (MB, SPAWN_PAST_GUARD),
    "llamadas_crudas": (MB, RAW_SYSCALLS),
    "c6_mono_allclose": (DL, "\ntorch.allclose = lambda *a, **k: True\n"),
    "c6_proceso_sin_guardian": (DL, SPAWN_PAST_GUARD),
    "c6_llamadas_crudas": (DL, RAW_SYSCALLS),
    "c6_lee_gradebook": (DL, "\ntry:\n    open('../../../gradebook.db', 'rb').read()\n"
                             "except OSError:\n    pass\n"),
    "sys_exit": (MB, "\nimport sys\nsys.exit(0)\n"),
    "salida_100mb": (MB, "\nprint('x' * 100_000_000)\n"),
    "archivo_enorme": (MB, "\ntry:\n    with open('enorme.bin', 'wb') as f:\n"
                           "        f.write(b'0' * 200 * 2**20)\nexcept OSError:\n    pass\n"),
}


def submission_bytes(case, source_nb, release_nb):
    """The file ``case`` hands in."""
    reference = solution_code(source_nb)
    if case.student_id in EXTRA_CODE:
        grade_id, extra = EXTRA_CODE[case.student_id]
        reference[grade_id] += extra
    code = {**reference, **case.cells}
    nb = release_nb if case.transform == "release" else fill_solutions(release_nb, code)
    if callable(case.transform):
        nb = case.transform(copy.deepcopy(nb))
    if isinstance(nb, bytes):
        return nb
    return (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode()


def write_corpus(course_dir, destination, cases=CASES, assignment=ASSIGNMENT):
    """Write the corpus as a class: destination/<case>/<assignment>/<file>."""
    source_nb = nbformat.read(course_dir / "source" / assignment / f"{assignment}.ipynb", 4)
    release_nb = nbformat.read(course_dir / "release" / assignment / f"{assignment}.ipynb", 4)
    for case in cases:
        folder = destination / case.student_id / assignment
        folder.mkdir(parents=True, exist_ok=True)
        filename = case.filename.replace(f"{ASSIGNMENT}.ipynb", f"{assignment}.ipynb")
        links = {name.format(a=assignment): target.format(a=assignment)
                 for name, target in case.links.items()}
        if filename not in links:
            (folder / filename).write_bytes(submission_bytes(case, source_nb, release_nb))
        for name, target in links.items():
            (folder / name).symlink_to(Path(course_dir).resolve() / target)
    return destination


def case_failures(case, outcome):
    """What is wrong with how ``case`` was graded: another status, a reason not given, a
    point it did not deserve, or a point an untouched cell lost. Empty when all is well."""
    failures = []
    said = " ".join([outcome.detail, *outcome.notes])
    if outcome.status != case.status or case.reason not in said:
        failures.append((case.student_id, outcome.status, said))
    for cell, maximum in outcome.max_scores.items():
        allowed = case.max_points.get(cell, maximum)
        if outcome.scores[cell] > allowed or (
                cell not in case.max_points and outcome.scores[cell] != maximum):
            failures.append((case.student_id, cell, outcome.scores[cell], allowed))
    return failures


# The cell limit a corpus is graded with. "busca_todo" walks the whole visible disk (some
# 200,000 files; 4 s on an idle 2-core machine) inside one cell: 10 s timed it out on a
# loaded CI machine. The one case that must time out ("bucle_en_la_funcion") waits this long.
CORPUS_CELL_TIMEOUT = 30


def grade_corpus(root, cases, workers, assignment=ASSIGNMENT):
    """Grade ``cases`` of ``assignment`` in one batch with the sample class's honest
    student (its reference solution), as a class: {student: Outcome}. What the grader
    itself writes to its stdout and stderr meanwhile goes to ``root/grader_output.txt``
    (a kernel that reached them would have written there)."""
    import os

    from autograder.pipeline import grade, prepare_course
    from autograder.sample_class import SAMPLE_CLASS, submission

    course = root / "course"
    prepare_course(course)
    submissions = write_corpus(course, root / "submissions", cases, assignment)
    source = nbformat.read(course / "source" / assignment / f"{assignment}.ipynb", 4)
    release = nbformat.read(course / "release" / assignment / f"{assignment}.ipynb", 4)
    honest = SAMPLE_CLASS[assignment][0]
    folder = submissions / honest.student_id / assignment
    folder.mkdir(parents=True)
    nbformat.write(submission(honest, source, release), folder / f"{assignment}.ipynb")
    saved = [os.dup(1), os.dup(2)]
    with open(root / "grader_output.txt", "wb") as output:
        os.dup2(output.fileno(), 1)
        os.dup2(output.fileno(), 2)
        try:
            graded = grade(submissions, root / "out", course_dir=course,
                           timeout=CORPUS_CELL_TIMEOUT,
                           progress=lambda line: os.write(1, (line + "\n").encode()),
                           workers=workers)
        finally:
            for fd, copy in zip((1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)
    return {o.student: o for o in graded}
