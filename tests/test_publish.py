"""``python -m autograder publish DIR``: the public student distribution holds the student
notebooks, a Spanish README, the requirements and the licence, and nothing private: no
solution code from ``solutions/``, no text of the hidden tests or the variants, no course
secret, no gradebook. The scanner it relies on (``leaks``) is shown to catch each of those
when they are planted."""

import json
import secrets
import shutil

import nbformat
import pytest

from autograder import __main__ as cli
from autograder.course import NOTEBOOKS_PATH, REPOSITORY, ROOT, chapters, colab_url
from autograder.publish import (
    SOLUTION_BLOCK_RE,
    _code_lines,
    leaks,
    publish,
    secret_lines,
    secret_sources,
)

EXPECTED = {"README.md", "LICENSE", "requirements.txt"} | {
    f"{NOTEBOOKS_PATH}/{c.name}.ipynb" for c in chapters()}


@pytest.fixture(scope="module")
def course_dir(tmp_path_factory):
    """An instructor's course folder with a secret and a gradebook, that must not leak."""
    folder = tmp_path_factory.mktemp("course")
    (folder / "course_secret.txt").write_text(secrets.token_hex(16) + "\n")
    (folder / "gradebook.db").write_bytes(b"SQLite format 3\0")
    return folder


@pytest.fixture(scope="module")
def distribution(tmp_path_factory, course_dir):
    out = tmp_path_factory.mktemp("public")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COURSE_SECRET", "s3creto-del-curso-" + secrets.token_hex(8))
        assert cli.main(["publish", str(out), "--course-dir", str(course_dir)]) == 0
        yield out, leaks(out, course_dir)


def files(folder):
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_the_distribution_holds_the_notebooks_readme_requirements_and_licence(distribution):
    out, _ = distribution
    assert files(out) == EXPECTED
    for chapter in chapters():
        assert (out / NOTEBOOKS_PATH / f"{chapter.name}.ipynb").read_text() \
            == chapter.student_notebook.read_text()  # the badge already names REPOSITORY
    assert (out / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    assert "MIT" in (ROOT / "LICENSE").read_text() and "CC BY 4.0" in (ROOT / "LICENSE").read_text()
    assert "torch==" in (out / "requirements.txt").read_text()
    assert "nbgrader" not in (out / "requirements.txt").read_text()


def test_nothing_private_reaches_the_distribution(distribution, course_dir):
    out, found = distribution
    assert found == []
    text = "\n".join((out / name).read_bytes().decode("utf-8", "replace") for name in EXPECTED)
    assert (course_dir / "course_secret.txt").read_text().strip() not in text
    for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "autograder.chapters",
                   "autograder.hidden", "from autograder"):
        assert marker not in text, marker
    # every line of the private sources that is not also published on purpose is absent
    lines = {line.strip() for line in text.splitlines()}
    for nb_name in EXPECTED - {"README.md", "LICENSE", "requirements.txt"}:
        nb = nbformat.read(out / nb_name, as_version=4)
        lines |= {line.strip() for cell in nb.cells for line in cell.source.splitlines()}
    assert not lines & secret_lines().keys()


def test_every_private_source_has_lines_the_scanner_looks_for():
    """A solution, a hidden test or a variant that only repeated public lines could leak
    unnoticed: each has its own."""
    private = secret_lines()
    for origin, text in secret_sources().items():
        assert _code_lines(text) & private.keys(), origin
    for chapter in chapters():
        for block in SOLUTION_BLOCK_RE.findall(chapter.source.read_text()):
            assert _code_lines(block) & private.keys(), (chapter.name, block)
    assert {origin.split(" ")[0] for origin in secret_sources()} >= {
        f"autograder/chapters/{c.key}/{kind}.py" for c in chapters()
        for kind in ("hidden", "variants")} | {f"solutions/{c.source.name}" for c in chapters()}


def test_the_scanner_catches_what_is_planted(distribution, course_dir, tmp_path):
    from autograder.build import source_notebook

    out = tmp_path / "public"
    shutil.copytree(distribution[0], out)
    chapter = chapters()[0]
    # the instructor notebook instead of the student one: solutions and hidden tests
    nbformat.write(source_notebook(chapter), out / NOTEBOOKS_PATH / f"{chapter.name}.ipynb")
    # a variant pasted into a markdown cell of another notebook
    other = out / NOTEBOOKS_PATH / f"{chapters()[-1].name}.ipynb"
    nb = nbformat.read(other, as_version=4)
    variants = (ROOT / "autograder" / "chapters" / chapters()[-1].key / "variants.py").read_text()
    nb.cells.append(nbformat.v4.new_markdown_cell("```python\n" + variants + "\n```"))
    nbformat.write(nb, other)
    # the course secret in the README, the gradebook and nbgrader's source folder copied in
    readme = out / "README.md"
    readme.write_text(readme.read_text() + (course_dir / "course_secret.txt").read_text())
    shutil.copy(course_dir / "gradebook.db", out / "gradebook.db")
    (out / "source").mkdir()
    (out / "source" / "notas.txt").write_text("x")
    (out / ".git").mkdir()
    (out / ".git" / "gradebook.db").write_text("a clone's own history is not scanned")

    found = "\n".join(leaks(out, course_dir))
    assert f"{chapter.name}.ipynb: '### BEGIN SOLUTION'" in found
    assert f"{chapter.name}.ipynb: '### BEGIN HIDDEN TESTS'" in found
    assert f"from solutions/{chapter.source.name} (solution cells)" in found
    assert f"from autograder/chapters/{chapters()[-1].key}/variants.py" in found
    assert "README.md: the course secret" in found
    assert "gradebook.db: a private file by its name" in found
    assert "source/notas.txt: a private file by its name" in found
    assert ".git/" not in found
    assert cli.main(["publish", str(out), "--course-dir", str(course_dir)]) == 1


def test_publish_points_the_badges_at_another_repository_and_keeps_a_clone(tmp_path):
    out = tmp_path / "public"
    (out / ".git").mkdir(parents=True)
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / NOTEBOOKS_PATH).mkdir()
    (out / NOTEBOOKS_PATH / "00_viejo.ipynb").write_text("{}")  # a chapter since removed
    written, found = publish(out, repository="profe/curso-autograd", branch="2027")
    assert found == []
    assert files(out) == EXPECTED | {".git/HEAD"}
    readme = (out / "README.md").read_text()
    for chapter in chapters():
        text = (out / NOTEBOOKS_PATH / f"{chapter.name}.ipynb").read_text()
        url = colab_url(chapter.name, "profe/curso-autograd", "2027")
        assert url == ("https://colab.research.google.com/github/profe/curso-autograd/blob/"
                       f"2027/{NOTEBOOKS_PATH}/{chapter.name}.ipynb")
        assert url in json.loads(text)["cells"][0]["source"] and url in readme
        assert REPOSITORY not in text and REPOSITORY not in readme


def test_publish_says_where_to_push_it(tmp_path, course_dir, capsys):
    assert cli.main(["publish", str(tmp_path / "public"), "--course-dir", str(course_dir),
                     "--repository", "profe/curso-autograd", "--branch", "2027"]) == 0
    said = capsys.readouterr().out.rsplit("\n\n", 1)[1]
    assert "https://github.com/profe/curso-autograd, branch 2027" in said


def test_the_student_readme_is_in_spanish_and_says_how_to_open_and_submit(distribution):
    readme = (distribution[0] / "README.md").read_text()
    for words in ("Abrir en Colab", "Archivo → Guardar una copia en Drive",
                  "Archivo → Descargar → Descargar .ipynb", "JupyterLab", "jupyter lab",
                  "pip install -r requirements.txt", "File → Download",
                  "Nbgrader → Assignment List", "Submit", "Licencia", "LICENSE", "CC BY 4.0",
                  "MIT"):
        assert words in readme, words
    for chapter in chapters():
        assert chapter.colab_url in readme
        assert f"({NOTEBOOKS_PATH}/{chapter.name}.ipynb)" in readme


def test_publish_refuses_the_private_repository_itself(tmp_path):
    for folder in (ROOT, ROOT.parent):
        with pytest.raises(ValueError, match="private course repository"):
            publish(folder)
    assert cli.main(["publish", str(ROOT)]) == 2
    (tmp_path / "solutions").mkdir()
    with pytest.raises(ValueError):
        publish(tmp_path)
    assert not (tmp_path / "README.md").exists()
