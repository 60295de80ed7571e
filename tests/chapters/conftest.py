"""Chapter tests follow ``AUTOGRADER_CHAPTERS`` (``make check CH=03``): the file of a
chapter left out, ``test_chNN.py``, is not collected, and the shared contract
(``test_contract.py``) is parametrized over the selected chapters only."""

import re

from autograder.course import chapters


def pytest_ignore_collect(collection_path, config):
    match = re.fullmatch(r"test_(ch\d\d)\.py", collection_path.name)
    if match is None:
        return None
    return match.group(1) not in {chapter.key for chapter in chapters()}
