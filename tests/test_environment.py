"""The pip and conda environments list the same packages at the same versions."""

import re

import yaml

from autograder.course import ROOT

CONDA_NAMES = {"pytorch": "torch", "python-graphviz": "graphviz", "psycopg-c": "psycopg-binary",
               "playwright-python": "playwright", "dask-core": "dask"}
NOT_PACKAGES = {"python", "pip"}


def pip_pins():
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = re.fullmatch(r"([A-Za-z0-9_.-]+)==([^\s;]+)", line).groups()
            pins[name.lower()] = version
    return pins


def conda_pins():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pins = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):  # packages conda-forge lacks, from PyPI: name==version
            pins.update(line.lower().split("==") for line in dep["pip"])
            continue
        name, _, version = dep.partition("=")
        if name not in NOT_PACKAGES:
            pins[CONDA_NAMES.get(name, name).lower()] = version
    return pins


def test_every_requirement_is_pinned_exactly():
    assert pip_pins(), "requirements.txt lists no packages"
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        assert not line or "==" in line, f"not pinned exactly: {line}"


def test_conda_and_pip_agree():
    assert conda_pins() == pip_pins()
