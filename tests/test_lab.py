"""`make lab`: JupyterLab starts on the course and nbgrader's formgrader lists the assignments."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from autograder.course import chapters
from autograder.pipeline import prepare_course

pytestmark = pytest.mark.slow
TOKEN = "prueba-local"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.status, response.read().decode()


def test_lab_serves_the_formgrader_with_every_assignment(tmp_path):
    course = tmp_path / "course"
    prepare_course(course)
    port = free_port()
    jupyter = Path(sys.executable).parent / "jupyter"
    server = subprocess.Popen(
        [str(jupyter), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={TOKEN}", "--ServerApp.open_browser=False",
         *(["--allow-root"] if os.getuid() == 0 else [])],
        cwd=course, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                get(f"{base}/api/status?token={TOKEN}", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        status, body = get(f"{base}/formgrader/api/assignments?token={TOKEN}", timeout=30)
        assert status == 200
        names = {a["name"] for a in json.loads(body)}
        assert {c.name for c in chapters()} <= names
        status, page = get(f"{base}/lab?token={TOKEN}", timeout=30)
        assert status == 200 and "@jupyter/nbgrader" in page
    finally:
        server.terminate()
        server.wait(timeout=30)
