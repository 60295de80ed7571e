"""Command line: ``python -m autograder <command>`` (``--help`` after a command for its options).

- ``build``: the student notebooks in ``notebooks/`` from ``solutions/`` (``--check``: fail if
  stale; ``--course-only``: the nbgrader course in ``build/course/``)
- ``grade``: grade a class (default: the bundled sample class); grades CSV and feedback pages
- ``collect-lms``: an LMS download (zips or folders) into the course's ``submitted/``, newer
  submissions replacing older ones, which are kept
- ``export``: grades CSV of every submission in the gradebook (every machine's shard)
- ``bench``: time stock nbgrader, this pipeline and the floor on a synthetic class
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

from autograder.course import BUILD_DIR, COURSE_DIR


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


def cmd_grade(args):
    from autograder.export import summary_table
    from autograder.pipeline import grade, prepare_course
    from autograder.sample_class import write_sample_class
    from autograder.sandbox import isolation

    started = time.perf_counter()
    submissions = args.submissions
    if submissions is None:
        prepare_course(args.course_dir, db_url=args.db_url)
        submissions = write_sample_class(args.course_dir, BUILD_DIR / "sample_class")
        print(f"Sample class written to {submissions}")
    missing = [s for s in args.students or () if not (Path(submissions) / s).is_dir()]
    if missing:
        print(f"No submissions in {submissions} for: {', '.join(missing)}", file=sys.stderr)
        return 2
    print(f"Grading with {args.workers} worker(s)"
          + (f", shard {args.shard[0]}/{args.shard[1]}" if args.shard else "") + ":")
    outcomes = grade(submissions, args.out, course_dir=args.course_dir, timeout=args.timeout,
                     workers=args.workers, db_url=args.db_url, shard=args.shard,
                     bar=not args.lines, progress=print, students=args.students)
    print()
    print(summary_table(outcomes))
    print("\n" + isolation().words()[0].upper() + isolation().words()[1:] + ".")
    print(f"\nGrades: {args.out / 'grades.csv'}   Feedback: {args.out / 'feedback'}/")
    print(f"Graded {len(outcomes)} submissions in {time.perf_counter() - started:.1f} s")
    return 0


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
    from autograder.export import export, gradebook_outcomes

    outcomes = gradebook_outcomes(args.db_url, args.course_dir)
    export(outcomes, args.out)
    print(f"{len(outcomes)} submissions from the gradebook written to {args.out}")
    return 0


def cmd_bench(args):
    from autograder.bench import bench

    text, csv_path = bench(args.chapter, args.students, args.workers, args.timeout)
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
          "tests, variants, the course secret and gradebooks: none. Push it to the public "
          "repository its Colab badges name.")
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
    grade.add_argument("--out", type=Path, default=BUILD_DIR / "grades")
    grade.add_argument("--timeout", type=int, default=None, help="per-cell limit, seconds")
    grade.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                       help="grading processes (default: all cores)")
    grade.add_argument("--db-url", default=None,
                       help="gradebook URL, e.g. postgresql://user@host/db (default: "
                            "$AUTOGRADER_DB_URL, else the course's sqlite file)")
    grade.add_argument("--shard", type=_shard, default=None, metavar="K/N",
                       help="grade only the K-th of N shares of the students (by id)")
    grade.add_argument("--course-dir", type=Path, default=COURSE_DIR,
                       help="the nbgrader course folder (one per machine)")
    grade.add_argument("--student", action="append", dest="students", metavar="ID",
                       help="grade only this student (repeatable): a re-grade; their rows "
                            "in grades.csv are replaced, the others kept")
    grade.add_argument("--lines", action="store_true",
                       help="one line per submission instead of a progress bar")
    grade.set_defaults(run=cmd_grade)

    lms = sub.add_parser("collect-lms", help="an LMS download (zips or folders of files named "
                         "as c.FileNameCollectorPlugin.named_regexp says) into submitted/: "
                         "newer submissions replace older ones, which are kept in replaced/")
    lms.add_argument("assignment", help="e.g. 01_grafo_dinamico")
    lms.add_argument("downloads", type=Path, nargs="+", metavar="ZIP",
                     help="zip files or folders, oldest download first")
    lms.add_argument("--course-dir", type=Path, default=COURSE_DIR)
    lms.set_defaults(run=cmd_collect_lms)

    export = sub.add_parser("export", help="grades CSV of every submission in the gradebook "
                            "(all machines' shards, when they share one)")
    export.add_argument("--db-url", default=None, help="as for grade")
    export.add_argument("--course-dir", type=Path, default=COURSE_DIR)
    export.add_argument("--out", type=Path, default=BUILD_DIR / "grades" / "gradebook.csv")
    export.set_defaults(run=cmd_export)

    bench = sub.add_parser("bench", help="time stock nbgrader, ours and the floor on a "
                           "synthetic class (table on stdout, CSV in build/bench)")
    bench.add_argument("--students", type=int, default=50)
    bench.add_argument("--chapter", default="04", help="default: 04, the heaviest")
    bench.add_argument("--workers", type=int, default=None, help="default: all cores")
    bench.add_argument("--timeout", type=int, default=10, help="per-cell limit, seconds")
    bench.set_defaults(run=cmd_bench)

    exercises = sub.add_parser("exercises", help="list every graded exercise")
    exercises.set_defaults(run=cmd_exercises)

    fairness = sub.add_parser("fairness", help="grade the variant corpus and the mutants of "
                              "every reference; fail if unfair or if mutants survive")
    fairness.add_argument("--no-mutants", action="store_true",
                          help="only the labelled corpus (seconds instead of minutes)")
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
