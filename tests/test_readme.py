"""The README's notebook table and commands agree with the course."""

from autograder.course import ROOT, chapters


def test_every_notebook_has_its_colab_badge_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    for chapter in chapters():
        assert chapter.colab_url in readme, chapter.name
        assert f"notebooks/{chapter.name}.ipynb" in readme


def test_readme_commands_exist_in_the_makefile():
    makefile = (ROOT / "Makefile").read_text()
    for target in ("grade", "test", "build", "lab", "exercises", "nbval", "clean"):
        assert f"\n{target}:" in makefile, target
