"""Grader side of the system-call filter (``autograder.seccomp_filter``): receive the
kernel's seccomp listener, answer every blocked call with EPERM, and remember which.

The record is made here, in the grader's process, from what Linux reports: student code
cannot reach it, forge it or erase it. Before grading starts the grader also reads, in the
kernel's ``/proc/PID/status`` (the PID comes from the socket's peer credentials, not from
the kernel's word), that the filter and ``no_new_privs`` are in place.
"""

import errno
import fcntl
import os
import select
import socket
import struct
import threading
from pathlib import Path

SOCKET_NAME = "seccomp.sock"
ARM_S = 30  # the kernel sends its listener before ipykernel starts: seconds at most
# ioctl numbers of <linux/seccomp.h>: _IOWR('!', 0, struct seccomp_notif) (80 bytes),
# _IOWR('!', 1, struct seccomp_notif_resp) (24 bytes).
NOTIF_RECV, NOTIF_SEND = 0xC0502100, 0xC0182101
NOTIF_SIZE = 80


def syscall_name(number):
    try:
        import pyseccomp

        return pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, number).decode()
    except Exception:  # noqa: BLE001 - a number is still a record
        return f"syscall {number}"


def filter_in_place(pid):
    """Whether Linux says process ``pid`` runs under a seccomp filter with no_new_privs."""
    try:
        fields = dict(line.split(":", 1) for line in
                      Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    except OSError:
        return False
    return fields.get("Seccomp", "").strip() == "2" and fields.get(
        "NoNewPrivs", "").strip() == "1"


class SeccompWatch:
    """Listens at ``folder/seccomp.sock`` for one kernel's listener, then serves it from a
    thread until the kernel ends or ``close`` is called."""

    def __init__(self, folder):
        self.path = Path(folder) / SOCKET_NAME
        # Refusals per call name: bounded by the names Linux has, however long a kernel
        # loops on blocked calls, and every one of them counted.
        self._counts = {}
        self._counts_lock = threading.Lock()
        self.problem = "el kernel no envió su filtro"
        self._armed = threading.Event()
        self._stop_r, self._stop_w = os.pipe()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.path.unlink(missing_ok=True)
        self._server.bind(str(self.path))
        self._server.listen(1)
        self._thread = threading.Thread(target=self._serve, name="seccomp-watch", daemon=True)
        self._thread.start()

    def counts(self):
        """{call name: times refused} so far (a copy: the serving thread goes on)."""
        with self._counts_lock:
            return dict(self._counts)

    @property
    def blocked(self):
        """The names of the calls refused, in the order first refused."""
        return list(self.counts())

    @property
    def refusals(self):
        return sum(self.counts().values())

    def armed(self, timeout=ARM_S):
        """Whether the kernel's filter is in place (waiting up to ``timeout`` seconds)."""
        return self._armed.wait(timeout)

    def close(self):
        try:
            os.write(self._stop_w, b"x")
        except OSError:
            pass
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        for fd in (self._stop_r, self._stop_w):
            try:
                os.close(fd)
            except OSError:
                pass

    def _serve(self):
        listener = None
        try:
            listener = self._receive()
            if listener is not None:
                self._armed.set()
                self._answer(listener)
        finally:
            if listener is not None:
                os.close(listener)
            self._server.close()
            self.path.unlink(missing_ok=True)

    def _receive(self):
        """The listener of the first (and only) kernel that connects, once Linux confirms
        that this process has the filter; None on ``close`` first."""
        ready = select.select([self._server, self._stop_r], [], [])[0]
        if self._server not in ready:
            return None
        connection, _ = self._server.accept()
        self._server.close()  # nobody else, student code included, gets to connect
        with connection:
            pid = struct.unpack("3i", connection.getsockopt(
                socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[0]
            connection.settimeout(ARM_S)
            try:
                message, fds, _, _ = socket.recv_fds(connection, 16, 1)
            except OSError as error:
                self.problem = f"el kernel no envió su filtro ({error})"
                return None
        if message != b"seccomp" or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            self.problem = "el kernel envió otra cosa que su filtro"
            return None
        if not filter_in_place(pid):
            os.close(fds[0])
            self.problem = f"Linux no muestra el filtro en el proceso {pid}"
            return None
        return fds[0]

    def _answer(self, listener):
        """Every notification: recorded, then refused with EPERM; until the kernel ends."""
        poller = select.poll()
        poller.register(listener, select.POLLIN)
        poller.register(self._stop_r, select.POLLIN)
        while True:
            events = dict(poller.poll())
            if self._stop_r in events:
                return
            if events.get(listener, 0) & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                return  # every process of the filter has ended
            notification = bytearray(NOTIF_SIZE)
            try:
                fcntl.ioctl(listener, NOTIF_RECV, notification)
            except OSError as error:
                if error.errno in (errno.EINTR, errno.ENOENT):
                    continue  # the caller went away before it was read
                return
            ident, _, _, number = struct.unpack_from("<QIIi", notification)
            name = syscall_name(number)
            with self._counts_lock:
                self._counts[name] = self._counts.get(name, 0) + 1
            try:
                fcntl.ioctl(listener, NOTIF_SEND, bytearray(
                    struct.pack("<QqiI", ident, 0, -errno.EPERM, 0)))
            except OSError:
                pass  # the caller was interrupted (a cell's time-out) or is gone
