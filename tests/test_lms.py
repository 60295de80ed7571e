"""LMS downloads into submitted/: Canvas's names read with the course's pattern, which of
two submissions is newer, and a later download that adds, replaces (keeping the older
one), leaves identical ones and skips older ones. Nothing here grades."""

import json
import zipfile

import pytest

from autograder.lms import (
    SIDECAR,
    TIMESTAMP,
    Received,
    collect_lms,
    marker_timestamp,
    newer,
    on_record,
)
from autograder.term import TERM_ENV

NB = "01_grafo_dinamico"
ZIP_TIME = (2026, 12, 1, 9, 0, 0)


def _received(**order):
    return Received(student="ana", file_name=f"{NB}.ipynb", origin="x", sha256="0", **order)


@pytest.mark.parametrize("incoming, present, expected", [
    # the submission time first, whatever the rest says
    (dict(submitted_at="2026-12-02T10:00:00", submission_id=1),
     dict(submitted_at="2026-12-01T10:00:00", submission_id=9), (True, "submitted_at")),
    # then the archive entry's date
    (dict(zip_time="2026-12-01T09:00:00", submission_id=9),
     dict(zip_time="2026-12-02T09:00:00", submission_id=1), (False, "zip_time")),
    # a criterion only one side has is passed over; equal ones too
    (dict(submitted_at="2026-12-02T10:00:00", zip_time="2026-12-01T09:00:00", submission_id=5),
     dict(zip_time="2026-12-01T09:00:00", submission_id=7), (False, "submission_id")),
    # then the download: a later run, or a later archive of the same run
    (dict(download=["2026-12-04T10:00:00", 0]), dict(download=["2026-12-03T10:00:00", 1]),
     (True, "download")),
    (dict(download=["2026-12-04T10:00:00", 0]), dict(download=["2026-12-04T10:00:00", 1]),
     (False, "download")),
    # nothing to compare (e.g. a folder nbgrader collected): the later download wins
    (dict(submission_id=3), dict(), (True, "download")),
])
def test_which_of_two_submissions_is_newer(incoming, present, expected):
    assert newer(_received(**incoming), _received(**present)) == expected


def _zip(path, entries):
    """A Canvas download: (file name, text, entry date) per submission."""
    with zipfile.ZipFile(path, "w") as bundle:
        for name, text, when in entries:
            bundle.writestr(zipfile.ZipInfo(name, date_time=when), text)
    return path


def _term(tmp_path, monkeypatch, due="2026-12-01T12:00:00"):
    path = tmp_path / "term.toml"
    path.write_text(f'timezone = "UTC"\n[due]\n{NB} = {due}\n[late]\nmarker_hours = 24\n')
    monkeypatch.setenv(TERM_ENV, str(path))


def test_a_later_download_adds_replaces_keeps_and_skips(tmp_path, monkeypatch):
    _term(tmp_path, monkeypatch)
    course = tmp_path / "course"
    first = _zip(tmp_path / "first.zip", [
        (f"anaperez_11_100_{NB}.ipynb", "ana v1", ZIP_TIME),
        (f"luisgomez_12_200_{NB}.ipynb", "luis v1", ZIP_TIME),
        (f"notes/readme_{NB}.txt", "not a notebook", ZIP_TIME),
    ])
    actions = collect_lms(NB, [first], course)
    assert [(a.student, a.action) for a in actions] == [("anaperez", "added"),
                                                        ("luisgomez", "added")]
    second = _zip(tmp_path / "second.zip", [
        (f"anaperez_11_150_{NB}-1.ipynb", "ana v2", ZIP_TIME),  # a resubmission
        (f"luisgomez_12_200_{NB}.ipynb", "luis v1", ZIP_TIME),  # the same again
        (f"carlaruiz_late_13_300_{NB}.ipynb", "carla", ZIP_TIME),  # late, no time given
    ])
    third = _zip(tmp_path / "third.zip", [(f"anaperez_11_120_{NB}.ipynb", "ana v1.5", ZIP_TIME)])
    actions = collect_lms(NB, [second, third], course)
    assert [(a.student, a.action) for a in actions] == [
        ("anaperez", "replaced"), ("luisgomez", "unchanged"), ("carlaruiz", "added"),
        ("anaperez", "skipped"),  # the third archive's: submission 120 is older than 150
    ]
    submitted = course / "submitted"
    ana = submitted / "anaperez" / NB
    assert (ana / f"{NB}-1.ipynb").read_text() == "ana v2"
    assert [p.name for p in ana.glob("*.ipynb")] == [f"{NB}-1.ipynb"]
    kept = list((course / "replaced" / "anaperez" / NB).iterdir())
    assert len(kept) == 1 and (kept[0] / f"{NB}.ipynb").read_text() == "ana v1"
    assert json.loads((kept[0] / SIDECAR).read_text())["submission_id"] == 100
    assert not (ana / TIMESTAMP).exists()  # not marked late: on time
    carla = submitted / "carlaruiz" / NB
    assert (carla / TIMESTAMP).read_text() == "2026-12-02 12:00:00.000000 UTC"  # due + 24 h
    assert json.loads((carla / SIDECAR).read_text())["late_marker"] is True


def test_the_replacement_says_where_the_older_one_is(tmp_path, monkeypatch, capsys):
    from autograder.__main__ import main

    _term(tmp_path, monkeypatch)
    course = tmp_path / "course"
    one = _zip(tmp_path / "one.zip", [(f"anaperez_11_100_{NB}.ipynb", "v1", ZIP_TIME)])
    two = _zip(tmp_path / "two.zip", [(f"anaperez_11_101_{NB}.ipynb", "v2", ZIP_TIME)])
    assert main(["collect-lms", NB, str(one), str(two), "--course-dir", str(course)]) == 0
    out = capsys.readouterr().out
    kept = next((course / "replaced" / "anaperez" / NB).iterdir())
    assert f"anaperez: added (one.zip: anaperez_11_100_{NB}.ipynb)" in out
    assert f"anaperez: replaced (by submission_id; older one kept at {kept})" in out
    assert main(["collect-lms", "99_nada", str(one), "--course-dir", str(course)]) == 2


def test_a_submission_collected_from_the_exchange_is_ordered_by_its_timestamp(tmp_path):
    folder = tmp_path / "submitted" / "anaperez" / NB
    folder.mkdir(parents=True)
    (folder / f"{NB}.ipynb").write_text("from the exchange")
    (folder / TIMESTAMP).write_text("2026-12-01 10:00:00.000000 UTC")
    present = on_record(folder)
    assert present.submitted_at == "2026-12-01T10:00:00"
    earlier = _received(submitted_at="2026-12-01T09:00:00", submission_id=7)
    assert newer(earlier, present) == (False, "submitted_at")


def test_a_bare_marker_follows_the_term_at_every_grading(tmp_path, monkeypatch):
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / SIDECAR).write_text(json.dumps(
        {"student": "carla", "file_name": "x.ipynb", "origin": "z", "sha256": "0",
         "late_marker": True}))
    _term(tmp_path, monkeypatch, due="2026-12-05T08:00:00")
    assert "24 h de retraso" in marker_timestamp(folder, NB)
    assert (folder / TIMESTAMP).read_text() == "2026-12-06 08:00:00.000000 UTC"
    (tmp_path / "term.toml").write_text("[due]\n")  # the due date removed: not late
    assert marker_timestamp(folder, NB) is None
    assert not (folder / TIMESTAMP).exists()


def test_a_pattern_with_the_submission_time_writes_nbgraders_timestamp(tmp_path, monkeypatch):
    from nbgrader.plugins import FileNameCollectorPlugin

    from autograder.lms import collect_one, read_downloads
    from autograder.term import load_term

    _term(tmp_path, monkeypatch)
    collector = FileNameCollectorPlugin(named_regexp=(
        r"^(?P<student_id>[a-z]+)_(?P<timestamp>[0-9T:+-]+)_"
        r"(?P<file_id>.+\.ipynb)$"))
    download = _zip(tmp_path / "moodle.zip", [
        (f"anaperez_2026-12-01T13:30:00+01:00_{NB}.ipynb", "on time", ZIP_TIME),
        (f"anaperez_2026-12-01T12:45:00+01:00_{NB}.ipynb", "earlier", (2026, 12, 3, 0, 0, 0)),
    ])
    found = read_downloads([download], collector)
    assert [r.submitted_at for r, _ in found] == ["2026-12-01T12:30:00", "2026-12-01T11:45:00"]
    course = tmp_path / "course"
    actions = [collect_one(r, data, NB, course, load_term()) for r, data in found]
    assert [a.action for a in actions] == ["added", "skipped"]  # the time, not the entry date
    folder = course / "submitted" / "anaperez" / NB
    assert (folder / TIMESTAMP).read_text() == "2026-12-01 12:30:00.000000 UTC"
