"""``make lab`` / ``python -m autograder lab``: JupyterLab on the course, and nothing left behind.

Jupyter's own start-up log buries its URL, and its Ctrl+C asks for a confirmation that
resumes the server when nobody answers (and when ``make`` is interrupted, nobody does). Here
the server runs in its own session with its log in a file; this process prints the URL, the
token and how to stop it, and on Ctrl+C (or SIGTERM, SIGHUP) stops the server, with its
kernels, before exiting. If this process is killed outright, the server gets SIGTERM from the
kernel (Linux: ``PR_SET_PDEATHSIG``).
"""

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

READY_TIMEOUT = 180  # seconds for the server to answer
STOP_TIMEOUT = 30  # seconds for it to shut down its kernels before it is killed


def free_port(first, host="127.0.0.1", tries=100):
    for port in range(first, first + tries):
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {first}–{first + tries - 1}")


def _die_with_parent():
    """In the child, before exec: SIGTERM when the parent dies (Linux only)."""
    os.setsid()
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _answers(url, token):
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def stop(process):
    """SIGTERM (Jupyter then shuts its kernels down), SIGKILL after STOP_TIMEOUT."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _print(text):
    print(text, flush=True)


def lab(course_dir, port=8888, host="127.0.0.1", out=_print):
    """Run JupyterLab on ``course_dir`` until Ctrl+C; return an exit status."""
    course_dir = Path(course_dir).resolve()
    if not (course_dir / "nbgrader_config.py").is_file():
        out(f"No course in {course_dir}: run `make lab`, or first "
            "`.venv/bin/python -m autograder build --course-only`.")
        return 2
    port = free_port(port, host)
    token = secrets.token_hex(24)
    log_path = course_dir.parent / "lab.log"
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--ip={host}",
               f"--port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers, CI
        command.append("--allow-root")
    # Scripts of this environment (nbgrader, jupyter) on PATH, even if it is not activated.
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM,
                                                         signal.SIGHUP)}
    process = None
    try:
        with open(log_path, "w") as log:
            process = subprocess.Popen(command, cwd=course_dir, env=env, stdin=subprocess.DEVNULL,
                                       stdout=log, stderr=subprocess.STDOUT,
                                       preexec_fn=_die_with_parent)
            base = f"http://{host}:{port}"
            started = time.monotonic()
            while not _answers(f"{base}/api/status", token):
                if process.poll() is not None:
                    out(f"JupyterLab exited ({process.returncode}) before answering; "
                        f"its log, {log_path}:\n" + log_path.read_text()[-3000:])
                    return 1
                if time.monotonic() - started > READY_TIMEOUT:
                    out(f"JupyterLab did not answer in {READY_TIMEOUT} s; log: {log_path}")
                    return 1
                time.sleep(0.5)
            out(f"JupyterLab on the course ({course_dir}), pid {process.pid}:\n"
                f"  {base}/lab?token={token}\n"
                f"  token: {token}\n"
                "  formgrader: menu Nbgrader → Formgrader; Validate: the notebook's toolbar\n"
                f"  log: {log_path}\n"
                "Stop it with Ctrl+C here (once): the server and its kernels shut down.")
            process.wait()
            out(f"JupyterLab exited by itself ({process.returncode}); log: {log_path}")
            return process.returncode
    except KeyboardInterrupt:
        return 0
    finally:
        if process is not None and process.poll() is None:
            for signum in previous:  # a second Ctrl+C does not interrupt the shutdown
                signal.signal(signum, signal.SIG_IGN)
            stop(process)
            out("JupyterLab stopped.")
        for signum, handler in previous.items():
            signal.signal(signum, handler)
