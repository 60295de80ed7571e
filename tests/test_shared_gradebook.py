"""A team's gradebook on PostgreSQL: parallel workers and machines (shards) writing to one
server give exactly the grades of a single machine on its own sqlite file."""

import os
import subprocess
import sys

import pytest
from postgres import Server  # tests/postgres.py

from autograder.export import export, gradebook_outcomes
from autograder.pipeline import grade, prepare_course
from autograder.sample_class import write_sample_class

pytestmark = pytest.mark.slow
FIRST = "01_grafo_dinamico"
STUDENTS = ("ana", "bruno", "carla", "hugo")  # both shards of 2 get someone
SECRET = "secreto-compartido"


@pytest.fixture(scope="module")
def postgres(tmp_path_factory):
    server = Server(tmp_path_factory.mktemp("postgres")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def submissions(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    prepare_course(root / "course")
    everyone = write_sample_class(root / "course", root / "all")
    small = root / "small"
    for student in STUDENTS:
        (small / student).mkdir(parents=True)
        (everyone / student / FIRST).rename(small / student / FIRST)
    return small


def scores(outcomes):
    return {(o.student, o.assignment): o.scores for o in outcomes}


@pytest.fixture(scope="module")
def single_machine(submissions, tmp_path_factory, monkeypatch_module):
    root = tmp_path_factory.mktemp("single")
    return scores(grade(submissions, root / "out", course_dir=root / "course", timeout=10,
                        progress=None, workers=1))


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COURSE_SECRET", SECRET)  # every machine of a class shares the secret
        yield patch


def test_parallel_workers_on_postgres_match_a_single_machine(
        postgres, submissions, single_machine, tmp_path):
    url = postgres.create_database("curso_paralelo")
    outcomes = grade(submissions, tmp_path / "out", course_dir=tmp_path / "course", timeout=10,
                     progress=None, workers=2, db_url=url)
    assert scores(outcomes) == single_machine
    recorded = gradebook_outcomes(url)
    assert scores(recorded) == single_machine
    text = export(recorded, tmp_path / "gradebook.csv").read_text()
    assert text.count("\n") == len(STUDENTS) + 1


def test_shards_on_separate_machines_fill_one_gradebook(
        postgres, submissions, single_machine, tmp_path):
    url = postgres.create_database("curso_repartido")
    prepare_course(tmp_path / "setup", db_url=url)  # the instructor sets the gradebook up once
    environment = {**os.environ, "COURSE_SECRET": SECRET}
    machines = [subprocess.Popen(
        [sys.executable, "-m", "autograder", "grade", "--submissions", str(submissions),
         "--shard", f"{k}/2", "--db-url", url, "--course-dir", str(tmp_path / f"machine{k}"),
         "--out", str(tmp_path / f"out{k}"), "--workers", "1", "--timeout", "10", "--lines"],
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for k in (1, 2)]
    logs = [machine.communicate(timeout=600)[0] for machine in machines]
    assert [m.returncode for m in machines] == [0, 0], logs
    graded_here = [(tmp_path / f"out{k}" / "grades.csv").read_text().count("\n") - 1
                   for k in (1, 2)]
    assert all(graded_here) and sum(graded_here) == len(STUDENTS)
    assert scores(gradebook_outcomes(url)) == single_machine
