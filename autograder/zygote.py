"""The grader's side of warm kernels (``autograder.warm_kernel``): one template process per
grading machine (started by the pool's seed, ``autograder.grading_seed``, and shared by the
workers forked from it) or per process that starts grading kernels on its own, asked over
a socket for each sandboxed kernel.

``SandboxedKernelManager`` starts bubblewrap as usual, with a payload that only waits
(``cat`` on a pipe), and hands the template the payload's PID and the pipe's other end:
the template forks the kernel into that sandbox. When the kernel ends, for whatever
reason, the pipe closes, the payload and the sandbox end with it, and jupyter_client sees
the process it launched (bubblewrap) exit, as with a cold kernel.

A template that cannot start or answer costs nothing but speed: the kernel starts cold.
``AUTOGRADER_WARM_KERNELS=0`` starts every kernel cold.
"""

import atexit
import json
import logging
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

WARM_ENV = "AUTOGRADER_WARM_KERNELS"
START_S = 180  # importing torch and the rest on a loaded machine
ANSWER_S = 60
CHANNEL_REQUEST = b'{"op": "channel"}'
SANDBOX_UP_S = 30

log = logging.getLogger(__name__)


class WarmStartFailed(RuntimeError):
    """The template could not give this sandbox a kernel: start it cold instead."""


class Template:
    """A running ``python -m autograder.warm_kernel``, connected by a socket pair.

    A process forked from the one that started it (a grading worker forked from the
    pool's seed, ``autograder.grading_seed``) asks it for a channel of its own
    (``private_copy``): one template serves every worker of the machine."""

    def __init__(self, env):
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            # A session of its own: a Ctrl-C at the grader's terminal is the grader's.
            self.process = subprocess.Popen(
                [sys.executable, "-m", "autograder.warm_kernel", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL,
                start_new_session=True)
        self._connected(mine, self.process.pid)

    def _connected(self, channel, pid):
        self.channel, self.pid, self.owner = channel, pid, os.getpid()
        self.lock = threading.Lock()
        self.ready = False

    def private_copy(self):
        """In a process forked from this template's owner: a channel of its own to the
        same template (the inherited one is the owner's). The request carries the new
        channel's other end, so that processes asking at once never read each other's
        answers; the template says "ready" on it once it has imported everything."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with theirs:
                socket.send_fds(self.channel, [CHANNEL_REQUEST], [theirs.fileno()])
        except OSError as error:
            mine.close()
            raise WarmStartFailed(f"la plantilla de kernels no responde: {error}") from error
        finally:
            self.channel.close()
        copy = Template.__new__(Template)
        copy.process = None  # the owner's child: only the owner may wait for it
        copy._connected(mine, self.pid)
        return copy

    def wait_ready(self):
        """Block until the template has imported everything (once)."""
        if not self.ready:
            if self._receive(START_S) != b"ready":
                self.close()
                raise WarmStartFailed("la plantilla de kernels no arrancó")
            self.ready = True

    def alive(self):
        if self.process is not None:
            return self.process.poll() is None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True

    def _receive(self, seconds):
        ready, _, _ = select.select([self.channel], [], [], seconds)
        if not ready:
            raise WarmStartFailed(f"la plantilla de kernels no respondió en {seconds} s")
        try:
            return self.channel.recv(1 << 16)
        except OSError as error:
            raise WarmStartFailed(f"la plantilla de kernels no responde: {error}") from error

    def spawn(self, request, alive_fd):
        """Ask for a kernel in the sandbox ``request["payload"]`` names; its PID."""
        with self.lock:
            try:
                socket.send_fds(self.channel, [json.dumps(request).encode()], [alive_fd])
            except OSError as error:
                raise WarmStartFailed(f"la plantilla de kernels no responde: {error}") from error
            reply = json.loads(self._receive(ANSWER_S) or b'{"error": "cerrada"}')
        if "pid" not in reply:
            raise WarmStartFailed(reply.get("error", "respuesta sin PID"))
        return reply["pid"]

    def close(self):
        self.channel.close()  # the template leaves when its last channel closes
        if self.process is None:
            return
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_shared = {"template": None, "failed": None}
_shared_lock = threading.Lock()


def enabled():
    return os.environ.get(WARM_ENV, "1").strip() != "0"


def shared(environment, wait=True):
    """This process's template, or None when warm kernels are off or the template cannot
    run here (said once, in the log). Started on first use with ``environment()`` (a
    function: it is only needed then), unless this process was forked from one that has a
    template: it then gets a channel of its own to that one. ``wait=False``: start it, and
    return at once (it imports while the caller works)."""
    if not enabled():
        return None
    with _shared_lock:
        template = _shared["template"]
        if _shared["failed"] is not None:
            return None
        try:
            if template is not None and template.owner != os.getpid():
                template = _shared["template"] = template.private_copy()
            if template is None or not template.alive():
                template = _shared["template"] = Template(environment())
            if wait:
                template.wait_ready()
        except (OSError, WarmStartFailed) as error:
            _shared["template"], _shared["failed"] = None, str(error)
            log.warning("Kernels en frío: %s", error)
            return None
        return template


@atexit.register
def close_shared():
    template, _shared["template"] = _shared["template"], None
    if template is not None and template.owner == os.getpid():
        template.close()


class WarmStart:
    """One warm kernel start: the pipes bubblewrap gets, then the template's fork."""

    def __init__(self, template, request):
        self.template, self.request = template, request
        # The sandbox lives while the kernel holds the writing end of this pipe.
        self.alive_reader, self.alive_writer = os.pipe()
        self.info_reader, self.info_writer = os.pipe()  # bubblewrap's --info-fd

    def payload_argv(self, sandbox_argv):
        """bubblewrap's arguments (ending in ``--``) with the waiting payload."""
        return [*sandbox_argv[:-1], "--info-fd", str(self.info_writer), "--",
                shutil.which("cat") or "/bin/cat"]

    def launched(self):
        """bubblewrap has its copies: close this process's."""
        for fd in (self.alive_reader, self.info_writer):
            os.close(fd)

    def start(self):
        """Fork the kernel into the sandbox just launched; WarmStartFailed if it cannot."""
        try:
            payload = _payload(_child_pid(self.info_reader))
            return self.template.spawn({**self.request, "payload": payload}, self.alive_writer)
        finally:
            self.close()

    def close(self):
        for name in ("alive_writer", "info_reader"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)


def _child_pid(info_fd):
    """The PID of the sandbox's first process, from bubblewrap's --info-fd."""
    text, deadline = b"", time.monotonic() + SANDBOX_UP_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([info_fd], [], [], deadline - time.monotonic())
        chunk = os.read(info_fd, 4096) if ready else b""
        if not chunk:
            break
        text += chunk
        try:
            return int(json.loads(text)["child-pid"])
        except ValueError:
            continue
    raise WarmStartFailed("bubblewrap no informó del entorno aislado")


def _payload(init_pid):
    """The sandbox's payload (bubblewrap's init's child) once it runs ``cat``: every
    namespace is then in place."""
    deadline = time.monotonic() + SANDBOX_UP_S
    while time.monotonic() < deadline:
        try:
            children = Path(f"/proc/{init_pid}/task/{init_pid}/children").read_text().split()
            for child in children:
                if Path(f"/proc/{child}/comm").read_text().strip() == "cat":
                    return int(child)
        except OSError as error:
            if not Path(f"/proc/{init_pid}").exists():
                raise WarmStartFailed("el entorno aislado terminó al arrancar") from error
        time.sleep(0.002)
    raise WarmStartFailed("el entorno aislado no arrancó a tiempo")
