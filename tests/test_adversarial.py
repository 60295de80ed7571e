"""The adversarial corpus through the real pipeline, in one batch with an honest student.

The whole corpus is graded with two workers; the attacks on the grader itself (issue 14:
search the disk, read the secret, kill processes, inject HTML) once more with one worker.
Both runs need the OS sandbox (``autograder.sandbox``): install bubblewrap.
"""

import json
import os
from fnmatch import fnmatch
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from autograder.adversarial import (
    ASSIGNMENT,
    CASES,
    FORGED_LINE,
    HOSTILE_CASES,
    HOSTILE_MARKER,
    SEARCH_REPORT,
    case_failures,
    grade_corpus,
)
from autograder.hidden.seeds import SECRET_FILE
from autograder.outcome import NO_PROTECTION_RECORD, UNGRADED, Status, protection_text
from autograder.pipeline import grade, prepare_course
from autograder.sample_class import SAMPLE_CLASS, submission
from autograder.sandbox import ETC_FILES, KERNEL_PACKAGE_ROOT, KERNEL_SIDE, isolation

pytestmark = pytest.mark.slow
HONEST = SAMPLE_CLASS[ASSIGNMENT][0]  # the reference solution
RUNS = {2: CASES, 1: HOSTILE_CASES}  # workers -> cases graded together


def _grade(root, cases, workers):
    assert isolation().active, f"these tests need the OS sandbox: {isolation().detail}"
    return grade_corpus(root, cases, workers), root


@pytest.fixture(scope="module", params=sorted(RUNS, reverse=True), ids=lambda w: f"{w}w")
def outcomes(request, tmp_path_factory):
    workers = request.param
    return _grade(tmp_path_factory.mktemp(f"adversarial{workers}"), RUNS[workers], workers)


def _cases(outcomes):
    by_student, _ = outcomes
    return [c for c in CASES if c.student_id in by_student]


def test_every_case_and_the_honest_student_have_an_outcome(outcomes):
    by_student, _ = outcomes
    assert set(by_student) == {c.student_id for c in _cases(outcomes)} | {HONEST.student_id}
    assert not [s for s, o in by_student.items()
                if o.status in (Status.GRADER_ERROR, Status.GRADER_CRASHED, Status.KERNEL_DIED)]


def test_the_honest_student_is_graded_correctly(outcomes):
    honest = outcomes[0][HONEST.student_id]
    assert honest.status == Status.GRADED and honest.score == honest.max_score == 8


def test_no_undeserved_points_and_a_reason_for_each_case(outcomes):
    failures = [f for case in _cases(outcomes)
                for f in case_failures(case, outcomes[0][case.student_id])]
    assert not failures


def test_each_case_has_spanish_feedback(outcomes):
    by_student, root = outcomes
    for student, outcome in by_student.items():
        page = (root / "out" / "feedback" / student / f"{ASSIGNMENT}.html").read_text()
        assert "BEGIN HIDDEN TESTS" not in page and "autograder.checks" not in page
        if outcome.status != Status.GRADED:
            assert "Estado:" in page or outcome.status == Status.UNREADABLE


def test_no_line_a_kernel_forged_reaches_the_graders_own_output(outcomes):
    _, root = outcomes
    output = (root / "grader_output.txt").read_text(errors="replace")
    assert f"{HONEST.student_id}/{ASSIGNMENT}:" in output  # the grader's own lines are there
    assert FORGED_LINE not in output and "\x1b[2J" not in output


def test_every_row_and_page_names_the_protection_that_graded_it(outcomes):
    """From the grader's record, not the kernel's: with the sandbox, every notebook that
    ran did so under all three layers, and grades.csv and its feedback page say so."""
    import csv

    by_student, root = outcomes
    full = protection_text(["bubblewrap", "seccomp", "guard"])
    with (root / "out" / "grades.csv").open(newline="") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert set(rows) == set(by_student)
    for student, outcome in by_student.items():
        expected = NO_PROTECTION_RECORD if outcome.status in UNGRADED else full
        assert rows[student]["protection"] == outcome.protection == expected, student
        page = (root / "out" / "feedback" / student / f"{ASSIGNMENT}.html").read_text()
        assert f"Calificado con: {expected}." in page, student


def _allowed_folder(folder, own_folder):
    """Where a sandboxed kernel may read, outside the Python environment: a few files of
    /etc, the kernel side of the package, its private /tmp, its own working folder."""
    kernel_side = {f"{KERNEL_PACKAGE_ROOT}/autograder"} | {
        f"{KERNEL_PACKAGE_ROOT}/autograder/{name}" for name in KERNEL_SIDE} | {
        f"{KERNEL_PACKAGE_ROOT}/autograder/{name}".rsplit("/", 1)[0] for name in KERNEL_SIDE}
    return (folder == "/etc" or any(folder.startswith(f"/etc/{name}") for name in ETC_FILES)
            or any(fnmatch(folder, allowed) and folder.count("/") == allowed.count("/")
                   for allowed in kernel_side)
            or (folder.startswith("/tmp/") and "/autograded/" not in folder)
            or folder == own_folder)


def _search_report(root):
    graded = nbformat.read(root / "course" / "autograded" / "busca_todo" / ASSIGNMENT
                           / f"{ASSIGNMENT}.ipynb", as_version=4)
    lines = [line for cell in graded.cells for out in cell.get("outputs", [])
             if out.output_type == "stream" for line in out.text.splitlines()
             if line.startswith(SEARCH_REPORT)]
    assert len(lines) == 1, "the search printed no report"
    return json.loads(lines[0][len(SEARCH_REPORT):])


def test_a_search_of_the_whole_disk_finds_nothing_of_the_course(outcomes):
    _, root = outcomes
    report = _search_report(root)
    own = [p for p in report["nombres"] if p.endswith(f"/busca_todo/{ASSIGNMENT}/"
                                                      f"{ASSIGNMENT}.ipynb")]
    assert report["visibles"] > 1000 and len(own) == 1  # the search did search
    own_folder = own[0].rsplit("/", 1)[0]
    assert own_folder in report["bytes_por_carpeta"]
    read = [f for f in report["bytes_por_carpeta"] if not _allowed_folder(f, own_folder)]
    assert read == [], read
    found = [p for p in report["nombres"]
             if not p.startswith((own_folder + "/", KERNEL_PACKAGE_ROOT + "/"))]
    assert found == [], found  # no notebook, secret, gradebook or course source anywhere
    assert report["copiados"] == []


def test_what_a_kernel_writes_never_reaches_the_graders_folders(outcomes):
    by_student, root = outcomes
    for student in by_student:
        folder = root / "course" / "autograded" / student / ASSIGNMENT
        if folder.exists():
            assert sorted(p.name for p in folder.iterdir()) in (
                [f"{ASSIGNMENT}.ipynb"], [f"{ASSIGNMENT}.ipynb", "timestamp.txt"]), student
            assert not [p for p in folder.iterdir() if p.is_symlink()], student


def test_the_course_secret_never_reaches_a_student(outcomes):
    by_student, root = outcomes
    secret = (root / "course" / SECRET_FILE).read_text().strip()
    for student in by_student:
        graded = root / "course" / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        page = root / "out" / "feedback" / student / f"{ASSIGNMENT}.html"
        for path in (graded, page):
            assert not path.exists() or secret not in path.read_text(), path


class _ActiveContent(HTMLParser):
    """Scripts, event handlers and javascript: URLs that carry the hostile marker."""

    def __init__(self):
        super().__init__()
        self.found, self._in_script = [], False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        for name, value in attrs:
            if value and HOSTILE_MARKER in value and (
                    name.startswith("on") or "javascript:" in value.replace(" ", "")
                    or name in ("src", "href", "srcdoc")):
                self.found.append(f"<{tag} {name}={value!r}>")
        if tag in ("svg", "iframe", "object", "embed"):
            self.found.append(f"<{tag}>")

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script and HOSTILE_MARKER in data:
            self.found.append(f"<script>{data[:80]}")


def test_student_html_and_javascript_are_inert_in_the_feedback(outcomes):
    _, root = outcomes
    page = (root / "out" / "feedback" / "html_hostil" / f"{ASSIGNMENT}.html").read_text()
    assert "Mi respuesta" in page  # the markdown cell is shown, as text
    parser = _ActiveContent()
    parser.feed(page)
    assert parser.found == []
    graded = nbformat.read(root / "course" / "autograded" / "html_hostil" / ASSIGNMENT
                           / f"{ASSIGNMENT}.ipynb", as_version=4)
    kinds = {kind for cell in graded.cells for out in cell.get("outputs", [])
             for kind in out.get("data", {})}
    assert kinds <= {"text/plain", "text/html", "image/png"}, kinds


def test_a_dead_grading_worker_is_replaced_and_nothing_is_lost(tmp_path):
    """A worker killed from outside while it grades: its submission is graded again."""
    import signal
    import threading
    import time

    course = tmp_path / "course"
    prepare_course(course)
    source = nbformat.read(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    for name in ("ana", "bea", "carla"):
        folder = tmp_path / "submissions" / name / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(submission(HONEST, source, release), folder / f"{ASSIGNMENT}.ipynb")
    killed = []

    def kill_a_busy_worker():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            # Workers are forked from the pool's seed (the fork server, a child of this
            # process), or spawned by this process itself.
            for worker in _descendants(os.getpid()):
                if any("bwrap" in _cmdline(k) for k in _children(worker)):
                    os.kill(worker, signal.SIGKILL)
                    killed.append(worker)
                    return
            time.sleep(0.2)

    killer = threading.Thread(target=kill_a_busy_worker)
    killer.start()
    graded = grade(tmp_path / "submissions", tmp_path / "out", course_dir=course, timeout=10,
                   progress=lambda line: None, workers=2)
    killer.join()
    assert killed, "no busy worker was found to kill"
    assert [(o.student, o.status, o.score) for o in graded] == [
        (name, Status.GRADED, 8.0) for name in ("ana", "bea", "carla")]


def _children(pid):
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _descendants(pid):
    found = _children(pid)
    for child in list(found):
        found += _descendants(child)
    return found


def _cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""
