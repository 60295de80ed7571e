"""Command line: ``python -m autograder <command>`` (``--help`` after a command for its options).

- ``build``: the student notebooks in ``notebooks/`` from ``solutions/`` (``--check``: fail if
  stale; ``--course-only``: the nbgrader course in ``build/course/``)
- ``grade``: grade a class (default: the bundled sample class); grades CSV and feedback pages
- ``export``: the grades file to upload, rewritten from the gradebook (every machine's shard,
  manual overrides) with the status and notes grading wrote; Canvas and Moodle imports beside it
- ``report``: the class report: one HTML page (scores, pass rates, misconceptions, who needs
  a person) and a per-student CSV, from the gradebook and the grading results
- ``reset-course``: a clean course for a new class: the secret kept, the gradebook and
  grades moved aside
- ``collect-lms``: an LMS download (zips or folders) into the course's ``submitted/``, newer
  submissions replacing older ones, which are kept
- ``bench``: time stock nbgrader, this pipeline and the floor on synthetic classes, and
  project a class of 200 students × 7 chapters
- ``exercises``: the catalogue of graded exercises
- ``fairness``: the variant corpus and the mutants of every reference through the hidden tests
- ``probe``: blind submissions, labelled correct or wrong, through the hidden tests
- ``chapter``: build one chapter alone, run it, report its errors, slowest cells and fairness
- ``publish``: the public student distribution (notebooks, Spanish README, licence) in a folder
- ``lab``: JupyterLab on the course, printing its URL and token; Ctrl+C stops it
"""

import argparse
import os
import sys
import time
from pathlib import Path

from autograder.course import (
    BRANCH,
    BUILD_DIR,
    COURSE_DIR,
    DB_URL_ENV,
    GRADES_DIR,
    REPOSITORY,
    SAMPLE_COURSE_DIR,
    SAMPLE_DIR,
    SAMPLE_GRADES_DIR,
)


def cmd_build(args):
    from autograder.build import build, stale_notebooks
    from autograder.pipeline import prepare_course

    if args.course_only:
        prepare_course(COURSE_DIR)
        print(f"nbgrader course ready in {COURSE_DIR}")
        return 0
    if args.check:
        stale = stale_notebooks()
        if stale:
            print("Stale student notebooks (run `make build`): " + ", ".join(stale))
            return 1
        print("notebooks/ is up to date with solutions/.")
        return 0
    for path in build():
        print(f"wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
    return 0


def _shard(text):
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise argparse.ArgumentTypeError("expected K/N with 1 ≤ K ≤ N, e.g. 2/3")
    return int(k), int(n)


def _grade_places(args):
    """(course folder, grades folder, gradebook URL or None) of a grade run, or an error.
    The sample class (no --submissions) is graded in a course, grades folder and sqlite
    gradebook of its own, so its fake students never reach the instructor's course,
    grades or shared gradebook."""
    from autograder.course import sqlite_gradebook

    if args.submissions is not None:
        return args.course_dir or COURSE_DIR, args.out or GRADES_DIR, args.db_url
    course_dir, out = args.course_dir or SAMPLE_COURSE_DIR, args.out or SAMPLE_GRADES_DIR
    for mine, instructors in ((course_dir, COURSE_DIR), (out, GRADES_DIR)):
        if Path(mine).resolve() == instructors:
            raise ValueError(f"The sample class is never graded into {instructors}: that "
                             "is the real course's. Leave out --course-dir/--out, or name "
                             "the class with --submissions.")
    return course_dir, out, sqlite_gradebook(course_dir)


def _check_scheduler(args, course_dir, db_url):
    """With ``--scheduler`` the cluster's workers, on other machines, all write the grades:
    a server gradebook, and no shard (the cluster takes the whole class)."""
    from autograder.course import gradebook_url, sqlite_gradebook

    if not args.scheduler:
        return
    if args.shard:
        raise ValueError("--scheduler y --shard no se combinan: el clúster de Dask califica "
                         "toda la clase.")
    if gradebook_url(course_dir, db_url) == sqlite_gradebook(course_dir):
        raise ValueError("--scheduler requiere un libro de calificaciones en un servidor que "
                         "alcancen todos los trabajadores: --db-url postgresql://… (o "
                         "AUTOGRADER_DB_URL).")


def _unprotected(args):
    """Why ``grade`` must not start, or None: kernels here would run without the OS sandbox
    and the instructor did not choose that (``--no-sandbox`` or ``AUTOGRADER_SANDBOX=off``).
    On a Dask cluster each worker decides for itself (``dask_pool``)."""
    from autograder.sandbox import SANDBOX_ENV, isolation

    if args.no_sandbox:
        os.environ[SANDBOX_ENV] = "off"  # the workers, forked after this, inherit it
        return None
    found = isolation()
    if found.active or args.scheduler or os.environ.get(SANDBOX_ENV, "").strip() == "off":
        return None
    return (f"No se califica sin el aislamiento del sistema operativo: {found.detail}.\n"
            "Sin él, el código de un estudiante corre con tu usuario y solo lo frena el "
            "guardián dentro del kernel (docs/security.md). Instala bubblewrap (Debian/Ubuntu: "
            "sudo apt install bubblewrap) o, si lo asumes, repite con --no-sandbox.")


def cmd_grade(args):
    refusal = _unprotected(args)
    if refusal:
        print(refusal, file=sys.stderr)
        return 2
    if not args.scheduler:  # the local workers' seed imports while this prepares
        from autograder import grading_seed, workers

        workers.start_seed([grading_seed.PRELOAD])
    from autograder import sample_generated
    from autograder.dask_pool import DaskPool, SchedulerUnreachable
    from autograder.export import summary_table
    from autograder.pipeline import grade, prepare_course
    from autograder.report.stats import ClassStats
    from autograder.report.summary import summary_lines
    from autograder.sample_class import write_sample_class
    from autograder.sandbox import isolation

    started = time.perf_counter()
    try:
        course_dir, out, db_url = _grade_places(args)
        _check_scheduler(args, course_dir, db_url)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    submissions, generated = args.submissions, None
    if submissions is None:
        prepare_course(course_dir, db_url=db_url)
        if not args.students:  # the rest of the class, graded meanwhile
            generated = sample_generated.grade_in_background(course_dir, args.shard)
        submissions = write_sample_class(course_dir, SAMPLE_DIR / "class")
        print(f"Sample class written to {submissions}; graded in its own course {course_dir} "
              f"(the real course, {COURSE_DIR}, is not touched)")
        if args.db_url or os.environ.get(DB_URL_ENV):
            print(f"The sample class has its own gradebook ({db_url}): the server one is "
                  "left alone.")
    missing = [s for s in args.students or () if not (Path(submissions) / s).is_dir()]
    if missing:
        print(f"No submissions in {submissions} for: {', '.join(missing)}", file=sys.stderr)
        return 2
    executor = DaskPool(args.scheduler) if args.scheduler else None
    print(f"Grading on the Dask cluster at {args.scheduler}:" if executor else
          f"Grading with {args.workers} worker(s)"
          + (f", shard {args.shard[0]}/{args.shard[1]}" if args.shard else "") + ":")
    try:
        outcomes = grade(submissions, out, course_dir=course_dir, timeout=args.timeout,
                         notebook_timeout=args.notebook_timeout,
                         workers=args.workers, db_url=db_url, shard=args.shard,
                         bar=not args.lines, progress=print, students=args.students,
                         executor=executor)
    except SchedulerUnreachable as error:
        print(error, file=sys.stderr)
        return 1
    print()
    print(summary_table(outcomes))
    print("\n" + isolation().words()[0].upper() + isolation().words()[1:] + ".")
    if generated is not None:
        outcomes += _generated_students(course_dir, out, db_url, args.shard, generated)
    print("\n" + "\n".join(summary_lines(ClassStats.of(outcomes))))
    print(f"\nGrades: {out / 'grades.csv'} (Canvas, Moodle: canvas.csv, moodle.csv beside it)"
          f"   Feedback: {out / 'feedback'}/")
    print(f"Graded {len(outcomes)} submissions in {time.perf_counter() - started:.1f} s")
    return 0


def _generated_students(course_dir, out, db_url, shard, pending):
    """The rest of the sample class (``autograder.sample_generated``), graded in process
    while the kernels graded the others: recorded beside them."""
    from autograder import sample_generated

    started = time.perf_counter()
    generated = sample_generated.add_generated(course_dir, out, db_url, shard, pending=pending)
    print(f"\nY el resto de la clase de muestra: {len({o.student for o in generated})} "
          f"estudiantes generados del corpus de variantes, {len(generated)} entregas "
          "calificadas por las mismas pruebas ocultas en un proceso del calificador (a la "
          "vez que los kernels), sin kernel ni página de comentarios (esperados "
          f"{time.perf_counter() - started:.1f} s más; ver autograder/sample_generated.py).")
    return generated


def cmd_collect_lms(args):
    from autograder.course import chapters
    from autograder.lms import collect_lms

    known = [c.name for c in chapters()]
    if args.assignment not in known:
        print(f"No assignment {args.assignment!r}; known: {', '.join(known)}", file=sys.stderr)
        return 2
    actions = collect_lms(args.assignment, args.downloads, args.course_dir)
    for action in actions:
        print(action.line())
    print(f"{len(actions)} notebooks read; submissions in {args.course_dir / 'submitted'}")
    return 0


def cmd_export(args):
    from autograder.export import export, gradebook_outcomes, read_rows
    from autograder.lms_export import write_lms_exports

    results = args.results or [args.out]
    graded = read_rows(*results)
    outcomes = gradebook_outcomes(args.db_url, args.course_dir, graded)
    export(outcomes, args.out, others=graded)
    canvas, moodle = write_lms_exports(args.out)
    overridden = sum(bool(o.overrides) for o in outcomes)
    print(f"{len(outcomes)} submissions from the gradebook ({overridden} with manual "
          f"overrides) written to {args.out}, with the status and notes of "
          f"{', '.join(str(r) for r in results)}. This is the file to upload; for an LMS's "
          f"own import: {canvas} (Canvas), {moodle} (Moodle).")
    return 0


def cmd_report(args):
    from autograder.report import build_report, load_class

    started = time.perf_counter()
    if args.synthetic:
        from autograder.report.synthetic import synthetic_class

        outcomes, students = synthetic_class(args.synthetic), None
        out = args.out or BUILD_DIR / "bench" / "report"
        made = time.perf_counter()
        print(f"Synthetic class: {args.synthetic} students, {len(outcomes)} submissions "
              f"(made in {made - started:.1f} s)")
        started = made
    else:
        from autograder.course import gradebook_url, sqlite_gradebook

        if args.sample:  # the sample class `make grade` graded, in its own places
            args.course_dir, args.db_url = SAMPLE_COURSE_DIR, sqlite_gradebook(SAMPLE_COURSE_DIR)
            args.results = args.results or [SAMPLE_GRADES_DIR / "grades.csv"]
            args.out = args.out or SAMPLE_GRADES_DIR / "report"
        url = gradebook_url(args.course_dir, args.db_url)
        if url == sqlite_gradebook(args.course_dir) and not (
                args.course_dir / "gradebook.db").exists():
            print(f"No gradebook in {args.course_dir}: grade the class first, or name its "
                  "course (--course-dir) or server (--db-url).", file=sys.stderr)
            return 2
        outcomes, students = load_class(args.db_url, args.course_dir,
                                        args.results or [GRADES_DIR / "grades.csv"])
        out = args.out or GRADES_DIR / "report"
    page, csv_path = build_report(outcomes, out, students)
    print(f"Report: {page} ({page.stat().st_size / 1e6:.2f} MB)   Per student: {csv_path}")
    print(f"Built in {time.perf_counter() - started:.1f} s"
          + (" (goal: ≤ 10 s, ≤ 3 MB)" if args.synthetic else ""))
    return 0


def cmd_reset_course(args):
    from autograder.course import gradebook_url, sqlite_gradebook
    from autograder.pipeline import prepare_course
    from autograder.reset import reset_course

    if gradebook_url(args.course_dir) != sqlite_gradebook(args.course_dir):
        print(f"The gradebook is a server's ({DB_URL_ENV}): start the new class in a new "
              "database there; reset-course only moves the course's own file.", file=sys.stderr)
        return 2
    for line in reset_course(args.course_dir, args.grades):
        print(line)
    prepare_course(args.course_dir)
    print(f"New gradebook: {sqlite_gradebook(args.course_dir)}, with the assignments and no "
          "submissions.")
    return 0


def cmd_bench(args):
    from autograder.bench import bench

    stock = "" if args.no_stock else args.stock
    text, csv_path = bench(args.chapters or args.chapter, args.students, args.workers,
                           args.timeout, stock=stock, cold_floor=args.cold_floor)
    print(text)
    print(f"\nPer notebook: {csv_path}")
    return 0


def cmd_exercises(args):
    from autograder.catalogue import catalogue_table

    print(catalogue_table())
    return 0


def cmd_fairness(args):
    from autograder.fairness import fairness_rows, mutation_report, report, summary

    rows = fairness_rows()
    print(report(rows))
    passed = summary(rows)["passed"]
    if args.draws:
        from autograder.fairness import draw_misses, misses_report, random_secrets

        misses = draw_misses(random_secrets(args.draws))
        print("\n" + misses_report(misses, args.draws))
        passed = passed and not misses
    if not args.no_mutants:
        from autograder.mutation import mutation_verdicts

        text, mutants_passed = mutation_report(mutation_verdicts())
        print("\n" + text)
        passed = passed and mutants_passed
    return 0 if passed else 1


def cmd_probe(args):
    from autograder.probe import probes, report

    results = probes(args.folder)
    print(report(results))
    return 0 if all(r.fair for r in results) else 1


def cmd_chapter(args):
    from autograder.develop import check_chapter

    return check_chapter(args.name, timeout=args.timeout)


def cmd_publish(args):
    from autograder.publish import publish

    try:
        written, leaks = publish(args.folder, repository=args.repository, branch=args.branch,
                                 course_dir=args.course_dir)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    if leaks:
        print(f"\nNOT SAFE TO PUBLISH: {args.folder} holds private material:", file=sys.stderr)
        for leak in leaks:
            print(f"  {leak}", file=sys.stderr)
        return 1
    print(f"\n{args.folder} holds the student distribution, checked for solutions, hidden "
          "tests, variants, the course secret and gradebooks: none. Commit it and push it to "
          f"https://github.com/{args.repository or REPOSITORY}, branch "
          f"{args.branch or BRANCH}: the repository its Colab badges name.")
    return 0


def cmd_lab(args):
    from autograder.lab import lab

    return lab(args.course_dir, port=args.port)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder")
    sub = parser.add_subparsers(dest="command", required=True)

    build = sub.add_parser("build", help="build notebooks/ from solutions/")
    build.add_argument("--check", action="store_true", help="fail if notebooks/ is stale")
    build.add_argument("--course-only", action="store_true",
                       help="build the nbgrader course in build/course, leave notebooks/ alone")
    build.set_defaults(run=cmd_build)

    grade = sub.add_parser("grade", help="grade a class (default: the bundled sample class)")
    grade.add_argument("--submissions", type=Path, default=None,
                       help="folder of <student>/<assignment>/<assignment>.ipynb")
    grade.add_argument("--out", type=Path, default=None,
                       help="grades folder (default: build/grades; the sample class: "
                            "build/sample/grades)")
    grade.add_argument("--timeout", type=int, default=None, help="per-cell limit, seconds")
    grade.add_argument("--notebook-timeout", type=int, default=None,
                       help="whole-notebook limit, seconds (default 300; 0: none)")
    grade.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                       help="grading processes (default: all cores)")
    grade.add_argument("--db-url", default=None,
                       help="gradebook URL, e.g. postgresql://user@host/db (default: "
                            "$AUTOGRADER_DB_URL, else the course's sqlite file)")
    grade.add_argument("--shard", type=_shard, default=None, metavar="K/N",
                       help="grade only the K-th of N shares of the students (by id): "
                            "several machines without a cluster (with one, --scheduler)")
    grade.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="grade on the workers of a Dask cluster, e.g. tcp://host:8786 "
                            "(needs --db-url postgresql://…; see docs/instructor.md)")
    grade.add_argument("--course-dir", type=Path, default=None,
                       help="the nbgrader course folder, one per machine (default: "
                            "build/course; the sample class: build/sample/course)")
    grade.add_argument("--student", action="append", dest="students", metavar="ID",
                       help="grade only this student (repeatable): a re-grade; their rows "
                            "in grades.csv are replaced, the others kept")
    grade.add_argument("--lines", action="store_true",
                       help="one line per submission instead of a progress bar")
    grade.add_argument("--no-sandbox", action="store_true",
                       help="grade even where the OS sandbox (bubblewrap) cannot run: kernels "
                            "then have only the in-kernel guard (docs/security.md)")
    grade.set_defaults(run=cmd_grade)

    lms = sub.add_parser("collect-lms", help="an LMS download (zips or folders of files named "
                         "as c.FileNameCollectorPlugin.named_regexp says) into submitted/: "
                         "newer submissions replace older ones, which are kept in replaced/")
    lms.add_argument("assignment", help="e.g. 01_grafo_dinamico")
    lms.add_argument("downloads", type=Path, nargs="+", metavar="ZIP",
                     help="zip files or folders, oldest download first")
    lms.add_argument("--course-dir", type=Path, default=COURSE_DIR)
    lms.set_defaults(run=cmd_collect_lms)

    export = sub.add_parser("export", help="the grades file to upload: every submission in "
                            "the gradebook (all machines' shards, manual overrides), with the "
                            "status and notes grading wrote")
    export.add_argument("--db-url", default=None, help="as for grade")
    export.add_argument("--course-dir", type=Path, default=COURSE_DIR)
    export.add_argument("--out", type=Path, default=GRADES_DIR / "grades.csv",
                        help="the grades file to (re)write (default: build/grades/grades.csv)")
    export.add_argument("--results", type=Path, action="append", metavar="CSV",
                        help="grades.csv written by `grade`, whose status and intake notes "
                             "are kept (repeatable: one per machine; default: --out)")
    export.set_defaults(run=cmd_export)

    report = sub.add_parser("report", help="the class report: an HTML page (scores, pass "
                            "rates, misconceptions, who needs a person) and a per-student CSV")
    report.add_argument("--db-url", default=None, help="as for grade")
    report.add_argument("--course-dir", type=Path, default=COURSE_DIR)
    report.add_argument("--results", type=Path, action="append", metavar="CSV",
                        help="grades.csv written by `grade`, with diagnoses.json beside it "
                             "(repeatable: one per machine; default: build/grades/grades.csv)")
    report.add_argument("--out", type=Path, default=None,
                        help="folder of the report (default: build/grades/report)")
    report.add_argument("--sample", action="store_true",
                        help="the sample class `make grade` graded (build/sample): its "
                             "report into build/sample/grades/report")
    report.add_argument("--synthetic", type=int, default=None, metavar="N",
                        help="a benchmark: the report of a made-up class of N students over "
                             "every chapter (into build/bench/report), its time and size")
    report.set_defaults(run=cmd_report)

    reset = sub.add_parser("reset-course", help="a clean course for a new class: submissions, "
                           "graded notebooks, feedback, gradebook and grades moved to "
                           "build/archive/<time>/; the course secret kept")
    reset.add_argument("--course-dir", type=Path, default=COURSE_DIR)
    reset.add_argument("--grades", type=Path, default=GRADES_DIR)
    reset.set_defaults(run=cmd_reset_course)

    bench = sub.add_parser("bench", help="time stock nbgrader, ours and the floor on "
                           "synthetic classes, project 200 × 7 (table on stdout, CSV in "
                           "build/bench)")
    bench.add_argument("--students", type=int, default=50)
    bench.add_argument("--chapter", default="04", help="one chapter; default: 04, the heaviest")
    bench.add_argument("--chapters", default=None,
                       help="several, each on a class of its own: all, or e.g. 01,04")
    bench.add_argument("--stock", default=None,
                       help="chapters to run stock nbgrader on (all, or e.g. 01); default: "
                            "the one chapter benchmarked, or of several only 01")
    bench.add_argument("--no-stock", action="store_true", help="no stock nbgrader at all")
    bench.add_argument("--cold-floor", action="store_true",
                       help="also the former floor: bare nbclient, a fresh kernel each")
    bench.add_argument("--workers", type=int, default=None, help="default: all cores")
    bench.add_argument("--timeout", type=int, default=10, help="per-cell limit, seconds")
    bench.set_defaults(run=cmd_bench)

    exercises = sub.add_parser("exercises", help="list every graded exercise")
    exercises.set_defaults(run=cmd_exercises)

    fairness = sub.add_parser("fairness", help="grade the variant corpus and the mutants of "
                              "every reference; fail if unfair or if mutants survive")
    fairness.add_argument("--no-mutants", action="store_true",
                          help="only the labelled corpus (seconds instead of minutes)")
    fairness.add_argument("--draws", type=int, default=0, metavar="N",
                          help="also grade every correct variant under N random course "
                          "secrets, one thread, and print what reproduces any miss "
                          "(about 16 s per secret for the whole course on 2 cores)")
    fairness.set_defaults(run=cmd_fairness)

    probe = sub.add_parser("probe", help="grade blind submissions "
                           "(DIR/chNN/<function>/<correct|wrong>__<name>.py) through the "
                           "hidden tests; fail if any is graded against its label")
    probe.add_argument("folder", type=Path)
    probe.set_defaults(run=cmd_probe)

    chapter = sub.add_parser("chapter", help="build one chapter alone, run it, and report "
                             "its errors, slowest cells and fairness (for chapter authors)")
    chapter.add_argument("name", help="e.g. 03 or 03_acumulacion")
    chapter.add_argument("--timeout", type=int, default=300, help="per-cell limit, seconds")
    chapter.set_defaults(run=cmd_chapter)

    publish = sub.add_parser("publish", help="write the public student distribution (student "
                             "notebooks, README in Spanish, LICENSE) into FOLDER and check "
                             "that nothing private is in it")
    publish.add_argument("folder", type=Path, help="an empty folder or a clone of the public "
                         "repository (its .git and other files are left alone)")
    publish.add_argument("--repository", default=None, metavar="OWNER/NAME",
                         help="the public GitHub repository, when not REPOSITORY of "
                              "autograder/course.py: the Colab badges of the copies point there")
    publish.add_argument("--branch", default=None, help="its branch (default: BRANCH of "
                         "autograder/course.py)")
    publish.add_argument("--course-dir", type=Path, default=COURSE_DIR,
                         help="the course whose secret must not leak (default: build/course)")
    publish.set_defaults(run=cmd_publish)

    lab = sub.add_parser("lab", help="JupyterLab on the course with nbgrader's extensions: "
                         "prints its URL and token; Ctrl+C stops it with its kernels")
    lab.add_argument("--course-dir", type=Path, default=COURSE_DIR)
    lab.add_argument("--port", type=int, default=8888,
                     help="first port to try (default 8888; the next free one is used)")
    lab.set_defaults(run=cmd_lab)

    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
