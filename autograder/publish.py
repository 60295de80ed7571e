"""The public student distribution: ``python -m autograder publish DIR``.

This repository is the instructor's, and stays private: ``solutions/`` (every exercise's
answer), ``autograder/hidden/`` and ``autograder/chapters/*/hidden.py`` (the hidden tests),
``variants.py`` (the labelled corpus), and, once built, ``build/course/`` (the gradebook,
the course secret, the submissions). Students get a second, public repository with only:

- ``notebooks/NN_slug.ipynb``: the student notebooks, as built (no solutions, no hidden
  tests), their Colab badges pointing at that public repository;
- ``README.md``: in Spanish, how to open the notebooks in Colab or JupyterLab and how to
  submit from each (``templates/README_estudiantes.md``);
- ``requirements.txt``: what a notebook needs in a local JupyterLab (pins of the course's);
- ``LICENSE``: the repository's (CC BY 4.0 for the text, MIT for the code).

``publish`` writes those files into DIR (an empty folder, or a clone of the public repository:
``.git`` and any file of the instructor's own outside these names are left alone, and the
``notebooks/`` folder is replaced), then scans *everything* in DIR but ``.git`` with
``leaks``; if anything secret is there it lists it and fails.
"""

import json
import os
import re
import shutil
from pathlib import Path
from string import Template

from autograder.course import (
    BRANCH,
    COURSE_DIR,
    NOTEBOOKS_PATH,
    REPOSITORY,
    ROOT,
    SOLUTIONS_DIR,
    chapters,
    colab_url,
)

PACKAGE_DIR = Path(__file__).resolve().parent
README_TEMPLATE = PACKAGE_DIR / "templates" / "README_estudiantes.md"
LICENSE_FILE = ROOT / "LICENSE"
REQUIREMENTS_FILE = ROOT / "requirements.txt"
# What a student notebook imports (besides the standard library), and Jupyter to run it.
STUDENT_PACKAGES = ("torch", "numpy", "matplotlib", "ipywidgets", "graphviz", "tqdm",
                    "jupyterlab", "ipykernel")
MANAGED = ("README.md", "LICENSE", "requirements.txt", NOTEBOOKS_PATH)

SOLUTION_BLOCK_RE = re.compile(r"### BEGIN SOLUTION[^\n]*\n(.*?)### END SOLUTION", re.DOTALL)
# Text that only the instructor's side has: nbgrader's markers and the grader's modules.
MARKERS_RE = re.compile(r"### (BEGIN|END) (SOLUTION|HIDDEN TESTS)|autograder\.hidden\b|"
                        r"autograder\.chapters\.ch\d+\.(hidden|variants)\b")
# Files that must never be published, whatever they contain.
SECRET_NAMES_RE = re.compile(r"(^|/)(course_secret[^/]*|gradebook[^/]*|[^/]*\.db|"
                             r"[^/]*\.sqlite3?|[^/]*\.db-journal|nbgrader_config\.py|"
                             r"hidden\.py|variants\.py)$|(^|/)(solutions|source|submitted|"
                             r"autograded|feedback|exchange|hidden)/")
MIN_LINE = 4  # shorter lines (")", "],") say nothing about where they come from


def _code_lines(text):
    return {line.strip() for line in text.splitlines() if len(line.strip()) >= MIN_LINE}


def public_lines():
    """Every line the course publishes on purpose: the chapter sources without their
    solution blocks, the code injected into notebooks, nbgrader's stub."""
    from autograder.inject import helper_modules

    text = [SOLUTION_BLOCK_RE.sub("", chapter.source.read_text()) for chapter in chapters()]
    text += [path.read_text() for chapter in chapters() for path in helper_modules(chapter.key)]
    text.append("# TU CÓDIGO AQUÍ\nraise NotImplementedError()")
    return _code_lines("\n".join(text))


def secret_sources(solutions_dir=SOLUTIONS_DIR):
    """{path: text} of what stays private: every solution block of ``solutions/``, the
    chapters' hidden tests and variants, the grader's hidden package."""
    sources = {}
    for path in sorted(solutions_dir.glob("*.py")):
        blocks = SOLUTION_BLOCK_RE.findall(path.read_text())
        if blocks:
            sources[f"solutions/{path.name} (solution cells)"] = "\n".join(blocks)
    for path in sorted((PACKAGE_DIR / "chapters").glob("*/*.py")):
        if path.name in ("hidden.py", "variants.py"):
            sources[str(path.relative_to(ROOT))] = path.read_text()
    for path in sorted((PACKAGE_DIR / "hidden").glob("*.py")):
        sources[str(path.relative_to(ROOT))] = path.read_text()
    return sources


def secret_lines():
    """{line: where it comes from} for every line of ``secret_sources`` that the course does
    not also publish on purpose (``public_lines``)."""
    public = public_lines()
    lines = {}
    for origin, text in secret_sources().items():
        for line in _code_lines(text) - public:
            lines.setdefault(line, origin)
    return lines


def course_secrets(course_dir=COURSE_DIR):
    """The course secret(s) known here: $COURSE_SECRET and the course's secret file."""
    from autograder.hidden.seeds import SECRET_ENV, SECRET_FILE

    found = [os.environ.get(SECRET_ENV, "")]
    path = Path(course_dir) / SECRET_FILE
    if path.is_file():
        found.append(path.read_text().strip())
    return [secret for secret in found if len(secret) >= 8]


def _texts(path):
    """The lines a file shows a reader: a notebook's cell sources and outputs, else its text."""
    raw = path.read_bytes().decode("utf-8", errors="replace")
    if path.suffix == ".ipynb":
        try:
            nb = json.loads(raw)
        except ValueError:
            return raw
        parts = []
        for cell in nb.get("cells", []):
            source = cell.get("source", "")
            parts.append("".join(source) if isinstance(source, list) else source)
            for output in cell.get("outputs", []):
                parts.append(json.dumps(output, ensure_ascii=False))
        return raw + "\n" + "\n".join(parts)
    return raw


def leaks(folder, course_dir=COURSE_DIR):
    """What in ``folder`` (all of it but ``.git``) must not be public: a list of
    "<file>: <why>". Empty when the folder is safe to push."""
    folder = Path(folder)
    lines = secret_lines()
    secrets = course_secrets(course_dir)
    found = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if rel == ".git" or rel.startswith(".git/") or not path.is_file():
            continue
        if SECRET_NAMES_RE.search(rel):
            found.append(f"{rel}: a private file by its name")
            continue
        text = _texts(path)
        for marker in sorted({m.group(0) for m in MARKERS_RE.finditer(text)}):
            found.append(f"{rel}: {marker!r} (instructor-only marker)")
        if any(secret in text for secret in secrets):
            found.append(f"{rel}: the course secret")
        own = {line.strip() for line in text.splitlines()} | {
            line.strip() for line in text.replace("\\n", "\n").splitlines()}
        for line in sorted(own & lines.keys()):
            found.append(f"{rel}: {line!r} from {lines[line]}")
    return found


def student_requirements():
    """requirements.txt for a student's JupyterLab: the course's pins of what notebooks use."""
    pins = [line for line in REQUIREMENTS_FILE.read_text().splitlines()
            if re.split(r"[=<>~!\[ ]", line.strip(), maxsplit=1)[0] in STUDENT_PACKAGES]
    torch_pin = next((pin for pin in pins if pin.startswith("torch")), "torch")
    return ("# Lo necesario para abrir los cuadernos del curso en JupyterLab, en tu máquina:\n"
            "#   pip install -r requirements.txt\n"
            "# En Linux sin GPU, torch para CPU ocupa mucho menos: instálalo antes con\n"
            f"#   pip install {torch_pin} --index-url https://download.pytorch.org/whl/cpu\n"
            + "\n".join(pins) + "\n")


def chapter_title(nb):
    """"1 · El grafo dinámico" from the notebook's "# Capítulo 1 · El grafo dinámico"."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return re.sub(r"^Capítulo\s+", "", line[2:].strip())
    return ""


def student_readme(titles, repository, branch):
    from autograder.build import BADGE

    rows = [f"| {titles[name] or name} | [`{NOTEBOOKS_PATH}/{name}.ipynb`]"
            f"({NOTEBOOKS_PATH}/{name}.ipynb) | "
            f"{BADGE.format(url=colab_url(name, repository, branch))} |" for name in titles]
    return Template(README_TEMPLATE.read_text()).substitute(
        table="\n".join(rows), notebooks=NOTEBOOKS_PATH)


def publish(out, repository=None, branch=None, course_dir=COURSE_DIR):
    """Write the student distribution into ``out``; return (written paths, leaks).

    ``repository``/``branch``: where it will be pushed, when not ``REPOSITORY``/``BRANCH`` of
    ``autograder/course.py`` (the notebooks' Colab badges are rewritten in the copies)."""
    repository, branch = repository or REPOSITORY, branch or BRANCH
    out = Path(out)
    resolved = out.resolve()
    if resolved == ROOT or resolved in ROOT.parents or (resolved / "solutions").exists() \
            or (resolved / "autograder").exists():
        raise ValueError(f"{out} is (or holds) the private course repository: publish into "
                         "a folder of its own, e.g. a clone of the public repository")
    out.mkdir(parents=True, exist_ok=True)
    notebooks = out / NOTEBOOKS_PATH
    if notebooks.exists():
        shutil.rmtree(notebooks)
    notebooks.mkdir(parents=True)
    written, titles = [], {}
    for chapter in chapters():
        text = chapter.student_notebook.read_text()
        text = text.replace(chapter.colab_url, colab_url(chapter.name, repository, branch))
        target = notebooks / chapter.student_notebook.name
        target.write_text(text)
        titles[chapter.name] = chapter_title(json.loads(text))
        written.append(target)
    files = {
        "README.md": student_readme(titles, repository, branch),
        "requirements.txt": student_requirements(),
        "LICENSE": LICENSE_FILE.read_text(),
    }
    for name, text in files.items():
        (out / name).write_text(text)
        written.append(out / name)
    return written, leaks(out, course_dir)
