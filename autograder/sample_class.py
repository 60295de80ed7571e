"""The bundled sample class that ``make grade`` grades: one student per typical outcome.

Submissions are made from the current release and source notebooks, so they never
drift from the course. Chapter 1 has the full cast (every grading outcome); every other
chapter has the reference (ana), the untouched stubs (bruno) and the realistic mistakes
its corpus module declares as ``SAMPLE_STUDENTS``. Each student's expected points per
exercise are declared here and asserted by the end-to-end test.
"""

import importlib

import nbformat

from autograder.course import chapters
from autograder.submissions import SampleStudent, fill_solutions, solution_code

# Wrong or broken chapter 1 answers, each a realistic student cell.
TWO_LOSSES_WITHOUT_CLONE = '''def two_loss_grads(model, x, y):
    out = model(x)
    F.mse_loss(out, y).backward(retain_graph=True)
    grads_a = [p.grad for p in model.parameters()]  # sin .clone(): el backward siguiente suma aquí
    F.l1_loss(out, y).backward()
    grads_b = [p.grad.clone() for p in model.parameters()]
    return grads_a, grads_b
'''

MANUAL_BACKWARD_THAT_RAISES = '''def manual_backward(x, y, W1, b1, W2, b2):
    z = W1 @ x + b1                       # orden de los factores al revés: falla la forma
    h = torch.relu(z)
    y_hat = h @ W2 + b2
    d_y_hat = 2 * (y_hat - y) / y_hat.numel()
    d_z = (d_y_hat @ W2.T) * (z > 0)
    return {"W1": x.T @ d_z, "b1": d_z.sum(0), "W2": h.T @ d_y_hat, "b2": d_y_hat.sum(0)}
'''

PENALTY_CELL_THAT_NEVER_ENDS = '''# probando convergencia...
while True:
    pass

def gradient_penalty(model, x):
    x = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(model(x).sum(), x, create_graph=True)
    return ((g.norm(dim=1) - 1) ** 2).mean()
'''

PENALTY_WITHOUT_CREATE_GRAPH = '''def gradient_penalty(model, x):
    x = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(model(x).sum(), x)       # sin create_graph=True
    return ((g.norm(dim=1) - 1) ** 2).mean()
'''

KERNEL_KILLER = '''import os
os._exit(1)
'''

# A correct answer that is noisy: a library warning and a print to stderr.
NOISY_TWO_LOSSES = '''import sys
import warnings

def two_loss_grads(model, x, y):
    warnings.warn("depurando: esto va a stderr")
    print("depurando", file=sys.stderr)
    out = model(x)
    params = list(model.parameters())
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params, retain_graph=True)
    grads_b = torch.autograd.grad(F.l1_loss(out, y), params)
    return list(grads_a), list(grads_b)
'''


SAMPLE_CLASS = {
    "01_grafo_dinamico": [
        SampleStudent("ana", "solución de referencia"),
        SampleStudent("bruno", "entrega sin tocar (los esqueletos)", use_reference=False,
                      lost=("*",)),
        SampleStudent("carla", "parcialmente mal: guarda p.grad sin clone",
                      {"ch01_two_losses": TWO_LOSSES_WITHOUT_CLONE},
                      lost=("ch01_two_losses_test",)),
        SampleStudent("diego", "su función lanza una excepción",
                      {"ch01_manual_backward": MANUAL_BACKWARD_THAT_RAISES},
                      lost=("ch01_manual_backward_test",)),
        SampleStudent("elena", "una celda que nunca termina",
                      {"ch01_gradient_penalty": PENALTY_CELL_THAT_NEVER_ENDS},
                      lost=("ch01_gradient_penalty_test",), expected_status="timed out"),
        SampleStudent("fede", "mata el kernel (os._exit) en una celda",
                      {"ch01_manual_backward": KERNEL_KILLER},
                      lost=("ch01_manual_backward_test",), expected_status="crashed"),
        SampleStudent("hugo", "casi bien: penalización sin create_graph (crédito parcial)",
                      {"ch01_gradient_penalty": PENALTY_WITHOUT_CREATE_GRAPH},
                      partial={"ch01_gradient_penalty_test": 2.0}),
        SampleStudent("gabi", "correcta pero ruidosa (warnings, stderr) y con celdas borradas",
                      {"ch01_two_losses": NOISY_TWO_LOSSES},
                      deleted=("ch01_utilidades", "ch01_manual_backward_test")),
    ],
}


def _chapter_cast(chapter):
    """ana, bruno, and the chapter's own ``SAMPLE_STUDENTS`` (autograder/variants/chNN.py)."""
    try:
        extra = importlib.import_module(f"autograder.variants.{chapter.key}").SAMPLE_STUDENTS
    except (ModuleNotFoundError, AttributeError):
        extra = []
    return [SampleStudent("ana", "solución de referencia"),
            SampleStudent("bruno", "entrega sin tocar (los esqueletos)", use_reference=False,
                          lost=("*",)), *extra]


for _chapter in chapters():
    SAMPLE_CLASS.setdefault(_chapter.name, _chapter_cast(_chapter))


def submission(student, source_nb, release_nb):
    """The notebook ``student`` hands in."""
    code = solution_code(source_nb) if student.use_reference else {}
    code.update(student.replacements)
    nb = fill_solutions(release_nb, code)
    nb.cells = [c for c in nb.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") not in student.deleted]
    return nb


def write_sample_class(course_dir, destination):
    """Write every sample submission to destination/<student>/<assignment>/<assignment>.ipynb."""
    for assignment, students in SAMPLE_CLASS.items():
        source_nb = nbformat.read(course_dir / "source" / assignment / f"{assignment}.ipynb", 4)
        release_nb = nbformat.read(course_dir / "release" / assignment / f"{assignment}.ipynb", 4)
        for student in students:
            path = destination / student.student_id / assignment / f"{assignment}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(submission(student, source_nb, release_nb), path)
    return destination
