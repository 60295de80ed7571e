"""Where things are: repository paths, chapters, the nbgrader course folder and its API."""

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS_DIR = ROOT / "solutions"
NOTEBOOKS_DIR = ROOT / "notebooks"
# AUTOGRADER_BUILD_DIR moves every generated file (course, grades, bench) elsewhere, so that
# a second environment (the torch drift canary) can build beside the main one. A relative
# path is taken from the repository root, whatever the current folder (kernels run elsewhere).
BUILD_DIR = (ROOT / os.environ.get("AUTOGRADER_BUILD_DIR", "build")).resolve()
COURSE_DIR = BUILD_DIR / "course"  # the instructor's course: real submissions, real grades
GRADES_DIR = BUILD_DIR / "grades"
# The bundled sample class (`make grade`) is a course of its own, so that its fake students
# never reach the real course's gradebook, exports or formgrader.
SAMPLE_DIR = BUILD_DIR / "sample"
SAMPLE_COURSE_DIR = SAMPLE_DIR / "course"
SAMPLE_GRADES_DIR = SAMPLE_DIR / "grades"
CONFIG_FILE = Path(__file__).resolve().parent / "nbgrader_config.py"
TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"  # feedback page, student README

# The PUBLIC student repository (what `python -m autograder publish DIR` writes, pushed to
# GitHub), set here once: the build bakes its Colab badge into every notebook and the README
# links to it. This repository, with the solutions and hidden tests, stays private.
# NOTEBOOKS_PATH is the notebooks' folder inside that repository (the same as here).
REPOSITORY = "autograd-curso/autograd-y-el-loop-de-optimizacion"
BRANCH = "main"
NOTEBOOKS_PATH = "notebooks"

CHAPTER_FILE_RE = re.compile(r"^(?P<number>\d\d)_(?P<slug>[a-z0-9_]+)\.py$")


@dataclass(frozen=True)
class Chapter:
    """One chapter: its solution source and the names derived from it."""

    source: Path

    @property
    def name(self):
        """Assignment and notebook name, e.g. ``01_grafo_dinamico``."""
        return self.source.stem

    @property
    def key(self):
        """Prefix of its grade ids, e.g. ``ch01``."""
        return "ch" + self.name[:2]

    def module(self, kind):
        """This chapter's ``autograder/chapters/chNN/<kind>.py`` (student, hidden, variants)."""
        import importlib

        return importlib.import_module(f"autograder.chapters.{self.key}.{kind}")

    @property
    def student_notebook(self):
        return NOTEBOOKS_DIR / f"{self.name}.ipynb"

    @property
    def colab_url(self):
        return colab_url(self.name)


def colab_url(name, repository=None, branch=None):
    """The Colab link of notebook ``name`` in the public repository (default: REPOSITORY at
    BRANCH, the one the build bakes into the notebooks)."""
    return (f"https://colab.research.google.com/github/{repository or REPOSITORY}/blob/"
            f"{branch or BRANCH}/{NOTEBOOKS_PATH}/{name}.ipynb")


def chapters(solutions_dir=SOLUTIONS_DIR):
    """Every chapter source in ``solutions/``, in chapter order.

    ``AUTOGRADER_CHAPTERS=03,04`` restricts everything (tests included) to those chapters:
    for authors working on chapters side by side, some of them half-written.
    """
    found = [Chapter(p) for p in sorted(solutions_dir.glob("*.py"))
             if CHAPTER_FILE_RE.match(p.name)]
    only = os.environ.get("AUTOGRADER_CHAPTERS")
    if only:
        wanted = {part.strip()[:2] for part in only.split(",") if part.strip()}
        found = [c for c in found if c.name[:2] in wanted]
    return found


def chapter_named(name):
    for chapter in chapters():
        if name in (chapter.name, chapter.key, chapter.name[:2]):
            return chapter
    raise KeyError(f"No chapter named {name!r}; known: {[c.name for c in chapters()]}")


def chapter_modules(kind):
    """``autograder.chapters.chNN.<kind>`` of every chapter that has one (kind: student,
    hidden, variants), imported: e.g. every chapter's messages get registered."""
    package = Path(__file__).resolve().parent / "chapters"
    return [c.module(kind) for c in chapters() if (package / c.key / f"{kind}.py").is_file()]


def load_config():
    """The course's nbgrader configuration as a traitlets Config."""
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader(CONFIG_FILE.name, path=str(CONFIG_FILE.parent)).load_config()


DB_URL_ENV = "AUTOGRADER_DB_URL"


def sqlite_gradebook(course_dir):
    """The URL of a course folder's own gradebook file."""
    return f"sqlite:///{Path(course_dir) / 'gradebook.db'}"


def gradebook_url(course_dir=COURSE_DIR, db_url=None):
    """The gradebook: ``db_url``, else $AUTOGRADER_DB_URL (e.g. a PostgreSQL server shared by
    a team of graders), else the course's own sqlite file. The one place this is decided:
    a grade run calls it once and hands the URL down."""
    return db_url or os.environ.get(DB_URL_ENV) or sqlite_gradebook(course_dir)


def nbgrader_api(course_dir=COURSE_DIR, timeout=None, db_url=None, notebook_timeout=None):
    """An NbGraderAPI on ``course_dir`` with the course configuration (in process, no CLI).

    ``timeout`` and ``notebook_timeout`` override the per-cell and whole-notebook execution
    limits in seconds; ``db_url`` the gradebook (default: ``gradebook_url``).
    """
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    from autograder import speedups

    speedups.install()

    # nbgrader runs `alembic` from PATH: make this interpreter's scripts visible
    # even when the virtual environment is not activated.
    scripts = str(Path(sys.executable).parent)
    if scripts not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")
    config = load_config()
    config.CourseDirectory.root = str(course_dir)
    config.CourseDirectory.db_url = db_url or gradebook_url(course_dir)
    if timeout is not None:
        config.Execute.timeout = int(timeout)
    if notebook_timeout is not None:
        config.GradingExecute.notebook_timeout = int(notebook_timeout)
    coursedir = CourseDirectory(config=config)
    return NbGraderAPI(coursedir=coursedir, config=config)
