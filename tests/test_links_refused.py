"""A submission is only what its own files hold: symbolic links, hard links to files elsewhere
and special files are refused at every way in (plain folders, nbgrader's submitted/ graded in
place, LMS folders and zips), with a Spanish reason for that student, and everyone else is
collected as usual (``autograder.safe_files``)."""

import os
import zipfile

import nbformat
import pytest

from autograder.collect import collect
from autograder.intake import read_submission
from autograder.lms import TIMESTAMP, collect_lms
from autograder.outcome import Status
from autograder.safe_files import Refused, read_regular, walk_refusal
from autograder.term import TERM_ENV

TASK = "01_grafo_dinamico"
RELEASE = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Tarea")])
SOLUTION = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("SOLUCION_SECRETA = 1")])


def test_read_regular_reads_a_plain_file_and_refuses_every_other_kind(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("hola")
    assert read_regular(plain) == b"hola"
    (tmp_path / "soft").symlink_to(plain)
    os.link(plain, tmp_path / "hard")
    os.mkfifo(tmp_path / "fifo")
    for name, words in (("soft", "enlace simbólico"), ("hard", r"enlace \(duro\)"),
                        ("fifo", "no es un archivo normal")):
        with pytest.raises(Refused, match=words):
            read_regular(tmp_path / name)
    big = tmp_path / "big"
    big.mkdir()
    (big / "notebook.ipynb").write_text("{}" * 10)
    with pytest.raises(Refused, match="supera"):
        read_regular(big / "notebook.ipynb", limit=2)  # the size limit, on a plain file
    assert walk_refusal(big) is None
    assert walk_refusal(tmp_path) is not None


def _course(tmp_path):
    course = tmp_path / "course"
    (course / "release" / TASK).mkdir(parents=True)
    nbformat.write(RELEASE, course / "release" / TASK / f"{TASK}.ipynb")
    secret = tmp_path / "solucion.ipynb"
    nbformat.write(SOLUTION, secret)
    return course, secret


def _submission(root, student, **files):
    folder = root / student / TASK
    folder.mkdir(parents=True)
    nbformat.write(RELEASE, folder / f"{TASK}.ipynb")
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize("in_place", [False, True])
def test_collect_refuses_links_for_that_student_and_collects_everyone_else(tmp_path, in_place):
    course, secret = _course(tmp_path)
    root = course / "submitted" if in_place else tmp_path / "entregas"
    _submission(root, "ana")
    linked = _submission(root, "bruno")
    (linked / f"{TASK}.ipynb").unlink()
    (linked / f"{TASK}.ipynb").symlink_to(secret)  # the solution, as the student's work
    stamp = _submission(root, "carla")
    (stamp / TIMESTAMP).symlink_to("/etc/hostname")  # a sidecar nbgrader would read
    hard = _submission(root, "diego")
    (hard / f"{TASK}.ipynb").unlink()
    os.link(secret, hard / f"{TASK}.ipynb")
    (root / "elena").symlink_to(root / "ana", target_is_directory=True)  # a classmate's
    fifo = _submission(root, "fede")
    os.mkfifo(fifo / "notas")
    outcomes = {o.student: o for o in collect(root, course)}
    assert outcomes["ana"].status == Status.GRADED
    for student in ("bruno", "carla", "diego", "elena", "fede"):
        outcome = outcomes[student]
        assert outcome.status == Status.UNREADABLE, student
        assert outcome.detail.startswith("entrega rechazada"), outcome.detail
    if not in_place:  # nothing of a refused submission reaches submitted/
        assert sorted(p.name for p in (course / "submitted").iterdir()) == ["ana"]
    for path in (course / "submitted").rglob("*.ipynb"):
        if not path.is_symlink() and path.stat().st_nlink == 1:
            assert "SOLUCION_SECRETA" not in path.read_text()


def test_intake_refuses_a_notebook_that_is_a_link(tmp_path):
    course, secret = _course(tmp_path)
    folder = tmp_path / "entrega"
    folder.mkdir()
    (folder / "mi_tarea.ipynb").symlink_to(secret)  # not the expected name: chosen by time
    intake = read_submission(folder, TASK, RELEASE)
    assert intake.nb is None and "enlace simbólico" in intake.problem


def test_lms_downloads_refuse_links_and_names_outside_the_download(tmp_path, monkeypatch):
    term = tmp_path / "term.toml"
    term.write_text('timezone = "UTC"\n[due]\n[late]\nmarker_hours = 24\n')
    monkeypatch.setenv(TERM_ENV, str(term))
    course, secret = _course(tmp_path)
    folder = tmp_path / "descarga"
    folder.mkdir()
    nbformat.write(RELEASE, folder / f"anaperez_11_100_{TASK}.ipynb")
    (folder / f"luisgomez_12_200_{TASK}.ipynb").symlink_to(secret)
    bundle = tmp_path / "descarga.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr(f"carlaruiz_13_300_{TASK}.ipynb", nbformat.writes(RELEASE))
        link = zipfile.ZipInfo(f"diegosanz_14_400_{TASK}.ipynb")
        link.external_attr = (0o120777 << 16)  # a symbolic link entry
        archive.writestr(link, str(secret))
        archive.writestr(f"../elenamora_15_500_{TASK}.ipynb", nbformat.writes(RELEASE))
    actions = {a.student: a for a in collect_lms(TASK, [folder, bundle], course)}
    assert actions["anaperez"].action == actions["carlaruiz"].action == "added"
    for student in ("luisgomez", "diegosanz"):
        assert actions[student].action == "refused"
        assert "enlace simbólico" in actions[student].detail
    if "elenamora" in actions:  # where the course's pattern reads a name that climbs out
        assert actions["elenamora"].action == "refused"
    submitted = sorted(p.name for p in (course / "submitted").iterdir())
    assert submitted == ["anaperez", "carlaruiz"]
