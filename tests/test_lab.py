"""``make lab`` (``python -m autograder lab``): it prints the URL and the token, the server
answers with that token only, and Ctrl+C, or killing the command outright, leaves no server
behind."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from autograder.course import ROOT
from autograder.lab import free_port

pytestmark = pytest.mark.slow
URL_RE = re.compile(r"(http://127\.0\.0\.1:(\d+))/lab\?token=(\w+)")


def start(course_dir):
    env = dict(os.environ, PYTHONPATH=str(ROOT), JUPYTER_RUNTIME_DIR=str(course_dir / "rt"))
    process = subprocess.Popen(
        [sys.executable, "-m", "autograder", "lab", "--course-dir", str(course_dir),
         "--port", str(free_port(18888))],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True)  # its own process group, as a terminal's foreground job
    lines = []
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        assert line, "".join(lines)
        lines.append(line)
        if "Ctrl+C" in line:
            break
    text = "".join(lines)
    match = URL_RE.search(text)
    assert match, text
    server_pid = int(re.search(r"pid (\d+)", text).group(1))
    return process, text, match.group(1), int(match.group(2)), match.group(3), server_pid


def status(base, token=None):
    headers = {"Authorization": f"token {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(f"{base}/api/status",
                                                           headers=headers), timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as error:
        return error.code


def gone(pid, port, wait=40):
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            with socket.socket() as sock:
                return sock.connect_ex(("127.0.0.1", port)) != 0
        time.sleep(0.3)
    return False


@pytest.fixture
def course_dir(tmp_path):
    folder = tmp_path / "course"
    folder.mkdir()
    (folder / "nbgrader_config.py").write_text("c = get_config()  # noqa\n")
    return folder


def test_lab_prints_url_and_token_and_ctrl_c_stops_the_server(course_dir):
    process, text, base, port, token, server = start(course_dir)
    assert f"token: {token}" in text and "Ctrl+C" in text
    assert status(base, token) == 200
    assert status(base) == 403
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl+C in its terminal does
    rest, _ = process.communicate(timeout=60)
    assert process.returncode == 0, rest
    assert "JupyterLab stopped." in rest
    assert gone(server, port), "the server outlived Ctrl+C"


def test_a_killed_lab_command_takes_its_server_with_it(course_dir):
    process, _, base, port, token, server = start(course_dir)
    assert status(base, token) == 200
    process.kill()
    process.wait()
    assert gone(server, port), "the server outlived its command"
