"""Warm grading kernels: one template process per grading worker, forked once per kernel.

``python -m autograder.warm_kernel FD`` (started by ``autograder.zygote``) imports what
every grading kernel imports (torch, ``torch._dynamo``, numpy, matplotlib, ipywidgets,
ipykernel, the kernel side of this package), photographs the watched namespaces for the
guard, and waits for requests on the socket ``FD``. It never runs student code.

For each request (the PID of a sandbox's payload, already running in its own namespaces
under bubblewrap, and a pipe end that keeps that sandbox alive) it forks a child that
joins the sandbox's namespaces (user first, mount last) and forks the kernel there. The
kernel then does what a cold start does inside bubblewrap: a new session, no capabilities
and no way to gain any, only the pipe end open (standard streams on ``/dev/null``), the sandbox's
environment, fresh random seeds, the resource limits, the guard's audit hook (from the
template's pristine photograph), and ipykernel. Nothing of one kernel reaches the next:
each is a fresh copy of a template that no kernel ever writes to.

What ``fork`` would otherwise break: the template stays single-threaded (one torch thread
and no parallel region run; libgomp deadlocks in a child of a parent that ran one), creates
no ZMQ context, and never initialises CUDA; the child restores torch's thread count, Python's
signal handlers and the random seeds a fresh process would draw; the package's module paths
are rewritten to where the sandbox mounts it.
"""

import ctypes
import json
import os
import signal
import socket
import sys
from pathlib import Path

# Namespaces a kernel joins. setns needs CAP_SYS_ADMIN both where the caller is and over
# the namespace: a root grader joins them from where it is, an unprivileged one from the
# user namespace that owns them (bubblewrap's first). Last comes the payload's own user
# namespace (with --disable-userns, a nested one in which no other can be made).
CLONE_NEWUSER = 0x10000000
NAMESPACES = (("ipc", 0x08000000), ("uts", 0x04000000), ("net", 0x40000000),
              ("pid", 0x20000000), ("cgroup", 0x02000000), ("mnt", 0x00020000))
CAP_SYS_ADMIN = 21
NS_GET_USERNS = 0xB701
PR_SET_SECUREBITS, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 28, 24, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
SECUREBITS_LOCKED_NOROOT = 0x2f  # noroot, no_setuid_fixup (each locked), keep_caps locked off
CAPABILITY_VERSION_3 = 0x20080522
MAX_REQUEST = 1 << 20

_template = {}  # what the template prepared: the guard's photograph, torch's thread count


def warm_up():
    """Import what kernels import, single-threaded; photograph the watched namespaces."""
    environment_before = dict(os.environ)
    import torch

    # Imported with one thread (``sandbox.template_environment``); each request brings the
    # count of a cold kernel (``sandbox.kernel_threads``).
    torch.set_num_threads(1)
    import ipykernel.debugger  # noqa: F401 - debugpy: a third of a second per kernel
    import ipykernel.ipkernel  # noqa: F401
    import ipykernel.kernelapp  # noqa: F401
    import ipykernel.zmqshell  # noqa: F401
    import IPython.core.completerlib  # noqa: F401 - what ipykernel imports as it starts
    import IPython.core.debugger  # noqa: F401
    import IPython.core.interactiveshell  # noqa: F401
    import IPython.extensions.storemagic  # noqa: F401
    import ipywidgets  # noqa: F401
    import matplotlib.pyplot  # noqa: F401 - the backend is chosen by MPLBACKEND, as in a kernel
    import matplotlib_inline.backend_inline  # noqa: F401
    import pyseccomp  # noqa: F401 - libseccomp, for the kernel's system-call filter
    import torch.nn  # noqa: F401
    import torch.utils.data  # noqa: F401
    import tornado.platform.asyncio  # noqa: F401

    from autograder import kernel

    kernel.chapter_folders()  # read while the package's folder is in sight
    _template.update(pristine=kernel.pristine_state(), cap_last=_cap_last(),
                     package=Path(kernel.PACKAGE_DIR),
                     # what importing set in the environment (torch: TORCHINDUCTOR_CACHE_DIR)
                     imported_env={k: v for k, v in os.environ.items()
                                   if environment_before.get(k) != v})


def _cap_last():
    try:
        return int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        return 40


def thread_count():
    """This process's threads (a fork is safe with one); 1 where there is no /proc to ask
    (macOS, where no template runs)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def serve(channel):
    """Answer requests until every channel is closed: the first (its starter's), and those
    it handed out (``autograder.zygote.Template.private_copy``)."""
    import select

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the worker's to handle
    channels = [channel]
    while channels:
        for ready in select.select(channels, [], [])[0]:
            try:
                message, fds, _, _ = socket.recv_fds(ready, MAX_REQUEST, 1)
            except OSError:
                message, fds = b"", []
            if not message:
                channels.remove(ready)
                ready.close()
                continue
            answer(ready, message, fds, channels)


def answer(channel, message, fds, channels):
    """One request on ``channel``: a channel of its own for a process forked from the
    template's starter (``{"op": "channel"}`` with its end; answered on that end only), or
    a kernel (answered with its PID or why not)."""
    try:
        request = json.loads(message)
    except ValueError:
        request = {}
    if request.get("op") == "channel":
        if len(fds) == 1:
            private = socket.socket(fileno=fds.pop())
            try:
                private.sendall(b"ready")
                channels.append(private)
            except OSError:
                private.close()
        for fd in fds:
            os.close(fd)
        return
    try:
        reply = {"pid": spawn(request, fds[0], channels)}
    except Exception as error:  # noqa: BLE001 - the worker falls back to a cold start
        reply = {"error": f"{type(error).__name__}: {error}"}
    finally:
        for fd in fds:
            os.close(fd)
    try:
        channel.sendall(json.dumps(reply).encode())
    except OSError:
        pass  # that worker is gone: its channel closes on the next round


def spawn(request, alive_fd, channels):
    """Fork a kernel into the sandbox of ``request["payload"]``; its PID (host's view)."""
    if thread_count() != 1:
        raise RuntimeError(f"la plantilla tiene {thread_count()} hilos: fork no sería seguro")
    namespaces = []
    reader, writer = os.pipe()
    try:
        namespaces = _namespaces_to_join(f"/proc/{int(request['payload'])}/ns/")
        joiner = os.fork()
        if joiner == 0:
            _join_and_fork(request, namespaces, alive_fd, channels, reader, writer)
        os.close(writer)
        writer = None
        answer = b""
        while chunk := os.read(reader, 4096):
            answer += chunk
        os.waitpid(joiner, 0)
    finally:
        for fd in [reader, writer, *(fd for fd, _ in namespaces)]:
            if fd is not None:
                os.close(fd)
    text = answer.decode(errors="replace")
    if not text.isdigit():
        raise RuntimeError(text or "el proceso que entra al entorno aislado terminó sin responder")
    return int(text)


def _namespaces_to_join(folder):
    """[(fd, CLONE_NEW*)] of the sandbox whose /proc/PID/ns is ``folder``, in an order in
    which each join is allowed (see ``NAMESPACES``)."""
    import fcntl

    joins = []
    try:
        others = [(os.open(folder + name, os.O_RDONLY), flag) for name, flag in NAMESPACES]
        joins += others
        if not _capable_here():
            joins.insert(0, (fcntl.ioctl(others[0][0], NS_GET_USERNS), CLONE_NEWUSER))
        joins.append((os.open(folder + "user", os.O_RDONLY), CLONE_NEWUSER))
    except BaseException:
        for fd, _ in joins:
            os.close(fd)
        raise
    users = [fd for fd, flag in joins if flag == CLONE_NEWUSER]
    if len(users) == 2 and os.fstat(users[0]).st_ino == os.fstat(users[1]).st_ino:
        os.close(users[1])  # no nested user namespace: one join is enough
        joins.pop()
    return joins


def _capable_here():
    """Whether this process holds CAP_SYS_ADMIN in its own user namespace."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> CAP_SYS_ADMIN & 1)
    return False


def _join_and_fork(request, namespaces, alive_fd, channels, reader, writer):
    """The first child: join the sandbox's namespaces, fork the kernel (a PID namespace
    applies to children only), write its PID, leave."""
    status = 1
    try:
        os.close(reader)
        libc = ctypes.CDLL(None, use_errno=True)
        for fd, flag in namespaces:
            if libc.setns(fd, flag) != 0:
                raise OSError(ctypes.get_errno(), f"setns {flag:#x}")
            os.close(fd)
        kernel_pid = os.fork()
        if kernel_pid == 0:
            os.close(writer)
            become_kernel(request, alive_fd, channels, libc)
        os.write(writer, str(kernel_pid).encode())
        status = 0
    except BaseException as error:  # noqa: BLE001 - reported through the pipe
        os.write(writer, f"{type(error).__name__}: {error}".encode())
    finally:
        os._exit(status)


def become_kernel(request, alive_fd, channels, libc):
    """In the sandbox: shed what the template holds, then run the hardened kernel."""
    try:
        os.setsid()
        _drop_privileges(libc)
        _only_fds(alive_fd, channels)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update({**_template["imported_env"], **request["env"]})
        _fresh_process_state(int(request["threads"]))
        _relocate_package(request["package_root"])
        from autograder import kernel

        kernel.apply_limits()
        sandboxed_package = Path(request["package_root"]) / "autograder"
        guard = kernel.Guard(
            Path.cwd(), sandboxed=True, pristine=_template["pristine"],
            also_protected=kernel.protected_paths(Path.cwd(), sandboxed_package,
                                                  sandboxed_package.parent / "build"))
        sys.argv = [sys.executable, "-m", "autograder.kernel", *request["argv"]]
        kernel.launch(guard, request["argv"])
        status = 0
    except SystemExit as leaving:
        status = leaving.code if isinstance(leaving.code, int) else 0
    except BaseException:  # noqa: BLE001 - a kernel that cannot start dies, as a cold one
        import traceback

        traceback.print_exc()
        status = 1
    _exit_like_python(status)


def _drop_privileges(libc):
    """No capabilities, none to regain (exec as root in the namespace included), no
    privileges through exec: what ``bwrap --cap-drop ALL`` leaves a cold kernel with."""
    checks = [libc.prctl(PR_SET_SECUREBITS, SECUREBITS_LOCKED_NOROOT, 0, 0, 0)]
    checks += [libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
               for cap in range(_template["cap_last"] + 1)]
    checks.append(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0))
    header = (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: all empty
    checks.append(libc.capset(header, data))
    checks.append(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
    if any(check != 0 for check in checks):
        raise OSError(ctypes.get_errno(), "no se pudieron quitar los privilegios")


def _only_fds(alive_fd, channels):
    """Close every descriptor but the sandbox's keep-alive pipe; the standard streams are
    ``/dev/null``: the template's are the grader's (its terminal, its log), which a kernel
    must neither read nor write. ipykernel captures what the kernel prints on its own."""
    for channel in channels:
        channel.detach()
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd != alive_fd:
            try:
                os.close(fd)
            except OSError:
                pass
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        if fd != null:
            os.dup2(null, fd)
    if null > 2:
        os.close(null)


def _fresh_process_state(threads):
    """What a new Python process would have: its signal handlers, torch's threads, fresh
    seeds for torch, numpy and random (a fork would share the template's)."""
    import random

    import numpy
    import torch

    signal.signal(signal.SIGINT, signal.default_int_handler)
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGUSR1,
                   signal.SIGUSR2):
        signal.signal(number, signal.SIG_DFL)
    torch.seed()
    numpy.random.seed()
    random.seed()
    torch.set_num_threads(threads)


def _relocate_package(package_root):
    """Point this package's modules and the import path at where the sandbox mounts it
    (``sandbox.KERNEL_PACKAGE_ROOT``): the template imported it from the host's folder."""
    import importlib

    host = str(_template["package"])
    sandboxed = str(Path(package_root) / "autograder")
    for name, module in list(sys.modules.items()):
        if name != "autograder" and not name.startswith("autograder."):
            continue
        if getattr(module, "__file__", None):
            module.__file__ = module.__file__.replace(host, sandboxed, 1)
        if getattr(module, "__path__", None) is not None:
            module.__path__[:] = [p.replace(host, sandboxed, 1) for p in module.__path__]
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.origin:
            spec.origin = spec.origin.replace(host, sandboxed, 1)
    spaces, snapshot = _template["pristine"]
    for label, space in spaces.items():  # the new paths are not tampering
        if "__file__" in snapshot[label]:
            snapshot[label]["__file__"] = space.get("__file__")
    repo = str(Path(host).parent)
    sys.path[:] = [package_root if p == repo else p for p in sys.path if p not in ("", ".")]
    if package_root not in sys.path:
        sys.path.insert(0, package_root)
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()


def _exit_like_python(status):
    """Leave as an interpreter does (exit handlers, flushed streams), never returning into
    the template's loop."""
    import atexit

    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status)


def main():
    channel = socket.socket(fileno=int(sys.argv[1]))
    warm_up()
    try:
        channel.sendall(b"ready")
    except OSError:  # whoever started it has left already
        os._exit(0)
    serve(channel)
    # Nothing to flush or clean: skip tearing down torch and the rest (seconds), which the
    # grader's exit would otherwise wait for.
    os._exit(0)


if __name__ == "__main__":
    main()
