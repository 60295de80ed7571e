"""Kernel side of the system-call filter: what a grading kernel may never do, enforced by
Linux (seccomp), not by Python.

``install`` runs in the kernel before ipykernel starts and before any student cell
(``autograder.kernel.launch``). It loads a filter that cannot be removed or loosened (with
``no_new_privs``, for this process and every thread it has or will have) on the calls that
grading never needs: running a program, creating a process (a thread is allowed), tracing or
reading another process's memory, namespaces and mounts, kernel modules and keys, eBPF,
io_uring (whose operations no filter sees). Each such call is handed to the grader (a
seccomp "user notification"): the grader records it and answers EPERM, so the call fails
in the kernel and the fact that it was tried is known outside it
(``autograder.seccomp_watch``). The listener that receives the notifications is sent to the
grader over the Unix socket named by ``SOCKET_ENV`` and closed here at once: no student code
ever holds it (whoever held it could let a blocked call through).

``clone3`` cannot be filtered by its flags (they are behind a pointer): it fails with
ENOSYS, which makes the C library fall back to ``clone`` for threads.
"""

import errno
import os
import socket

SOCKET_ENV = "AUTOGRADER_SECCOMP_SOCKET"  # set by the grader; unset: no filter (not grading)
CLONE_THREAD = 0x00010000
BLOCKED = ("execve", "execveat", "fork", "vfork", "ptrace", "process_vm_readv",
           "process_vm_writev", "process_madvise", "pidfd_getfd", "unshare", "setns", "mount",
           "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsmount",
           "bpf", "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load",
           "init_module", "finit_module", "delete_module", "add_key", "request_key", "keyctl",
           "io_uring_setup", "io_uring_enter", "io_uring_register", "personality", "acct",
           "swapon", "swapoff", "reboot", "syslog", "quotactl", "mknod", "mknodat",
           # A filter of the student's own, stacked later, would win over this one's
           # notifications for the same calls and could let them through.
           "seccomp")
PR_SET_SECCOMP = 22


def build():
    """The filter, not loaded yet (``pyseccomp`` over the system's libseccomp)."""
    import pyseccomp

    rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)  # another architecture's calls: killed
    for name in BLOCKED:
        try:
            rules.add_rule(pyseccomp.NOTIFY, name)
        except (OSError, ValueError):
            pass  # a call this architecture does not have
    rules.add_rule(pyseccomp.NOTIFY, "clone",
                   pyseccomp.Arg(0, pyseccomp.MASKED_EQ, CLONE_THREAD, 0))
    rules.add_rule(pyseccomp.NOTIFY, "prctl", pyseccomp.Arg(0, pyseccomp.EQ, PR_SET_SECCOMP))
    rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
    rules.set_attr(pyseccomp.Attr.CTL_TSYNC, 1)  # every thread, the ones running already too
    return rules


def check():
    """Raise if the filter cannot be built here (the sandbox's probe runs this)."""
    build()


def install(path=None):
    """Load the filter and hand its listener to the grader at ``path`` (default: from
    ``SOCKET_ENV``); nothing where the grader asked for none. Failing here fails the
    kernel's start: the grader never grades with a filter it asked for missing."""
    path = path or os.environ.pop(SOCKET_ENV, None)
    if not path:
        return False
    import pyseccomp

    rules = build()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as channel:
        channel.connect(path)
        rules.load()
        listener = pyseccomp._libseccomp.seccomp_notify_fd(rules._filter)
        if listener < 0:
            raise OSError(-listener, "seccomp: sin descriptor de notificaciones")
        try:
            socket.send_fds(channel, [b"seccomp"], [listener])
        finally:
            os.close(listener)
    # The filter object keeps the listener's number: released, libseccomp would close that
    # number again, which may be another descriptor by then. It lives as long as the kernel.
    _loaded.append(rules)
    return True


_loaded = []
