"""The bundled sample class that ``make grade`` grades: one student per typical outcome.

Submissions are made from the current release and source notebooks, so they never
drift from the course. Every chapter has the reference (ana), the untouched stubs (bruno)
and the students its corpus module (``chapters/chNN/variants.py``) declares as
``SAMPLE_STUDENTS``: realistic mistakes, and in chapter 1 every grading outcome. Each
student's expected points per exercise are declared there and asserted by the end-to-end
test.
"""

import nbformat

from autograder.course import chapters
from autograder.submissions import SampleStudent, fill_solutions, solution_code


def _chapter_cast(chapter):
    """ana, bruno, and the chapter's own ``SAMPLE_STUDENTS`` (chapters/chNN/variants.py)."""
    try:
        extra = chapter.module("variants").SAMPLE_STUDENTS
    except (ModuleNotFoundError, AttributeError):
        extra = []
    return [SampleStudent("ana", "solución de referencia"),
            SampleStudent("bruno", "entrega sin tocar (los esqueletos)", use_reference=False,
                          lost=("*",)), *extra]


SAMPLE_CLASS = {chapter.name: _chapter_cast(chapter) for chapter in chapters()}


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
