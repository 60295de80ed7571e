"""Every grading kernel in an operating-system sandbox (bubblewrap): deny by default.

A kernel started by ``SandboxedKernelManager`` sees only
- the system libraries and the Python environment, read-only;
- the kernel side of this package (``KERNEL_SIDE``: the launcher, the harness and the
  code the student notebooks already carry), read-only, under ``KERNEL_PACKAGE_ROOT``;
- its own working folder (the submission being graded), read-write;
- its own kernel folder (the ZMQ ``ipc`` sockets and the connection file);
- a private, size-capped ``/tmp``, its own ``/proc`` and a minimal ``/dev`` (with an NVIDIA
  GPU's device files where the machine has one: ``_gpu_args``);

and runs in new user, PID, network, IPC, UTS and cgroup namespaces, in a new session,
without capabilities or further user namespaces, killed when its parent dies. It cannot
see or signal the grader, the workers or other kernels, nor read the course (sources,
gradebook, secret), the exchange, the submissions, other workers' folders or any home.
Its kernel loads a system-call filter before any student cell (``autograder.seccomp_filter``:
no programs, no processes but threads, no tracing), whose every refusal is recorded here,
in the grader (``autograder.seccomp_watch``). The in-kernel guard (``autograder.kernel``)
stays as a further layer.

Without bubblewrap (macOS, containers without user namespaces) grading refuses to start
unless told ``off``; then kernels start guarded only in-kernel, and ``isolation()`` says so,
in words, for the summary. ``AUTOGRADER_SANDBOX``: ``auto`` (default) and ``required`` both
refuse to grade without it (``required`` is kept for configurations that name it); ``off``
grades with the guard alone.
"""

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

from jupyter_client import AsyncKernelManager
from traitlets import Type

from autograder import zygote
from autograder.kernel import SANDBOXED_ENV
from autograder.kernel_client import PromptKernelClient, prompt_context
from autograder.seccomp_filter import SOCKET_ENV as SECCOMP_SOCKET_ENV
from autograder.seccomp_watch import SOCKET_NAME as SECCOMP_SOCKET
from autograder.seccomp_watch import SeccompWatch

PACKAGE_DIR = Path(__file__).resolve().parent
# What a kernel may import of this package. Everything else (references, hidden draws,
# variants, the pipeline) is not even visible inside the sandbox.
KERNEL_SIDE = ("__init__.py", "kernel.py", "harness.py", "course.py", "warm_kernel.py",
               "seccomp_filter.py", "student",
               "chapters/__init__.py", "chapters/*/__init__.py", "chapters/*/student.py")
KERNEL_PACKAGE_ROOT = "/opt/autograder-kernel"
SANDBOX_ENV = "AUTOGRADER_SANDBOX"
TMP_BYTES = 512 * 2**20  # the private /tmp lives in memory
# Host files a Python process needs from /etc (the rest of /etc stays hidden).
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "fonts",
             "nsswitch.conf", "mime.types")
# Environment passed into the sandbox (it starts from an empty one).
PASSED_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TZ",
              "CUDA_VISIBLE_DEVICES", "PYDEVD_DISABLE_FILE_VALIDATION")
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
USER = "estudiante"


@dataclass(frozen=True)
class Isolation:
    """Whether kernels run sandboxed here, and why not when they do not."""

    active: bool
    detail: str

    def words(self):
        if self.active:
            return (f"aislamiento del sistema operativo activo ({self.detail}): cada kernel solo "
                    "ve el entorno de Python y su propia carpeta, sin red ni otros procesos")
        return (f"aislamiento del sistema operativo NO activo ({self.detail}): el kernel corre "
                "con el usuario del calificador y puede leer lo que este lea; solo protege "
                "el guardián dentro del kernel")


def _mode():
    mode = os.environ.get(SANDBOX_ENV, "auto").strip().lower() or "auto"
    if mode not in ("auto", "required", "off"):
        raise ValueError(f"{SANDBOX_ENV}={mode!r}: use auto, required u off")
    return mode


# What the probe runs in the sandbox: the system-call filter must load there too.
PROBE_CODE = "import autograder.seccomp_filter as f; f.check()"


@functools.cache
def _probe(bwrap):
    """None if a sandbox with every option we use, system-call filter included, can start
    here, else why not."""
    with tempfile.TemporaryDirectory(prefix="ag-probe-") as folder:
        argv = bwrap_argv(bwrap, Path(folder), Path(folder)) + [sys.executable, "-c",
                                                                 PROBE_CODE]
        try:
            probe = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"bubblewrap no arranca: {error}"
    if probe.returncode:
        return "bubblewrap no puede crear el entorno aislado aquí: " + (
            probe.stderr.strip().splitlines() or ["sin mensaje"])[-1]
    return None


def isolation():
    """The isolation grading kernels get on this machine (probed once per process)."""
    if _mode() == "off":
        return Isolation(False, f"desactivado con {SANDBOX_ENV}=off")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Isolation(False, "bubblewrap no está instalado; en Debian/Ubuntu: "
                                "apt install bubblewrap")
    problem = _probe(bwrap)
    if problem:
        return Isolation(False, problem)
    return Isolation(True, f"bubblewrap, {bwrap}, y filtro seccomp de llamadas al sistema")


def require_isolation():
    """Raise unless kernels here will be sandboxed or the instructor turned the sandbox off
    (``AUTOGRADER_SANDBOX=off``; the CLI's ``--no-sandbox`` sets it): no mode, and no
    caller (the CLI, ``pipeline.grade``, a Dask worker), grades unsandboxed by default."""
    found = isolation()
    if not found.active and _mode() != "off":
        raise RuntimeError(
            f"{SANDBOX_ENV}={_mode()}: no se califica sin el aislamiento del sistema operativo"
            f" ({found.detail}); {SANDBOX_ENV}=off califica solo con el guardián")
    return found


def protections():
    """Which protections a grading kernel gets on this machine, in words (for the summary)."""
    probe = subprocess.run([sys.executable, "-c",
                            "from autograder.kernel import apply_limits; print(apply_limits())"],
                           capture_output=True, text=True, timeout=60)
    limits = probe.stdout.strip() or "ninguno (la plataforma no los admite)"
    return [
        isolation().words(),
        "pruebas ocultas calificadas en el proceso del calificador (fuera del kernel)",
        f"límites de recursos del kernel: {limits}",
        "guardián de auditoría: lecturas privadas, procesos y bibliotecas nativas bloqueados; "
        "cambios en torch/numpy/builtins/utilidades detectados",
    ]


def _python_dirs():
    """The Python environment: prefixes, and where the interpreter really lives."""
    dirs = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    dirs.add(Path(sys.executable).resolve().parent.parent)
    # Keep only the outermost (a venv inside a prefix needs no second mount).
    return sorted(d for d in dirs if not any(o != d and o in d.parents for o in dirs))


def _python_links():
    """(real path, path as named) of the environment where it is reached through a link
    (``.venv`` linked to a shared venv or a conda env): the kernel is started by the name,
    so the name must exist inside the sandbox too. Names under the system folders already
    resolve there."""
    links = set()
    for prefix in (sys.prefix, sys.exec_prefix, Path(sys.executable).parent.parent):
        named = Path(os.path.abspath(prefix))
        real = named.resolve()
        if named != real and not any(named.is_relative_to(d) for d in SYSTEM_DIRS):
            links.add((real, named))
    return sorted(links)


def _system_args():
    args = []
    for name in SYSTEM_DIRS:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    for name in ETC_FILES:
        if Path("/etc", name).exists():
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    return args


def _gpu_args(dev=Path("/dev")):
    """CUDA in the kernel, where this machine has an NVIDIA GPU: its device files
    (``/dev/nvidia0``, ``nvidiactl``, ``nvidia-uvm``, ``nvidia-caps/``, ...), the DRM nodes
    (``/dev/dri``) beside them, and the sysfs CUDA reads, read-only; nothing on a machine
    without one. Device files are bound with ``--dev-bind``, read-write: a read-only bind
    in bubblewrap is also ``nodev``, and CUDA opens them for writing."""
    devices = sorted(str(p) for p in Path(dev).glob("nvidia*"))
    if not devices:
        return []
    if (Path(dev) / "dri").is_dir():
        devices.append(str(Path(dev) / "dri"))
    args = [arg for device in devices
            for arg in ("--dev-bind", device, "/dev/" + Path(device).name)]
    return args + ["--ro-bind", "/sys", "/sys"]


def _package_args():
    """The kernel side of this package, and nothing else of it, on the kernel's path."""
    args = []
    for root in _python_dirs():  # a non-editable install would put all of it there
        if root == PACKAGE_DIR or root in PACKAGE_DIR.parents:
            args += ["--tmpfs", str(PACKAGE_DIR)]
    target = Path(KERNEL_PACKAGE_ROOT) / "autograder"
    for path in kernel_side_paths():
        args += ["--ro-bind", str(path), str(target / path.relative_to(PACKAGE_DIR))]
    return args


def kernel_side_paths():
    """The files and folders of this package a kernel sees (``KERNEL_SIDE``)."""
    return [path for pattern in KERNEL_SIDE for path in sorted(PACKAGE_DIR.glob(pattern))]


def kernel_environment(kernel_dir):
    """The whole environment of a sandboxed kernel."""
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": "/tmp",
           "USER": USER, "LOGNAME": USER, "LANG": "C.UTF-8", "PYTHONPATH": KERNEL_PACKAGE_ROOT,
           "MPLCONFIGDIR": str(kernel_dir / "matplotlib"), "PYTHONDONTWRITEBYTECODE": "1",
           # ipykernel: "launched by a parent" (no banner on the grader's console), and
           # PID 1, which it never polls (its real parent is outside the PID namespace).
           "JPY_PARENT_PID": "1", SANDBOXED_ENV: "1"}
    env.update({k: os.environ[k] for k in PASSED_ENV if k in os.environ})
    return env


def template_environment():
    """The warm kernels' template's environment: a kernel's, but importing this package
    from where the grader does, and matplotlib's backend and font list chosen as ipykernel
    and ``_prepare_kernel_dir`` would (the template imports matplotlib for its kernels).
    Nothing private: a kernel forked from it can read it in /proc/self/environ."""
    env = kernel_environment(Path(tempfile.gettempdir()))
    # numpy's OpenBLAS starts threads as torch imports it without this, and a process with
    # threads cannot fork safely: the template imports on one; each kernel is asked for
    # with a cold one's count (``kernel_threads``).
    env["OMP_NUM_THREADS"] = "1"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # debugpy's import warning, once per template
    env["PYTHONPATH"] = str(PACKAGE_DIR.parent)
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    cache = _font_cache()
    if cache is not None:
        env["MPLCONFIGDIR"] = str(cache.parent)
    return env


def kernel_threads():
    """torch's thread count in a cold kernel: OMP_NUM_THREADS, else the usable cores."""
    return os.environ.get("OMP_NUM_THREADS") or str(len(os.sched_getaffinity(0)))


def shared_kernel_threads(workers):
    """The thread count for each of ``workers`` grading processes side by side, and their
    kernels: the usable cores shared among them, at least one each; None where
    OMP_NUM_THREADS already sets it or one worker has the machine. With a cold kernel's
    count each, 2 workers on 2 cores ran chapter 4's cells 1.5 times slower: more threads
    than cores, each intra-op pool waiting on CPU the others held."""
    if workers <= 1 or os.environ.get("OMP_NUM_THREADS"):
        return None
    return max(1, len(os.sched_getaffinity(0)) // workers)


def prestart_warm_kernels():
    """Start this process's warm-kernel template now, without waiting for it, where
    kernels will be sandboxed (``autograder.zygote``)."""
    if isolation().active:
        zygote.shared(template_environment, wait=False)


def bwrap_argv(bwrap, cwd, kernel_dir, scratch=None, env=None):
    """bubblewrap's command line for a kernel working in ``cwd`` with ``kernel_dir``.
    ``scratch``: the host folder the kernel sees as ``cwd`` (default ``cwd`` itself);
    ``env``: its whole environment (default ``kernel_environment``)."""
    cwd, kernel_dir = Path(cwd).resolve(), Path(kernel_dir).resolve()
    scratch = cwd if scratch is None else Path(scratch).resolve()
    args = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
            "--new-session", "--hostname", "calificacion", "--clearenv"]
    if os.geteuid() == 0:  # a root sandbox keeps its capabilities unless told otherwise
        args += ["--cap-drop", "ALL"]
    args += _system_args()
    # The private /tmp first: what is bound next may live under /tmp (a venv there).
    args += ["--proc", "/proc", "--dev", "/dev", *_gpu_args(),
             "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    for root in _python_dirs():
        args += ["--ro-bind", str(root), str(root)]
    for real, named in _python_links():
        args += ["--ro-bind", str(real), str(named)]
    args += _package_args()
    args += ["--bind", str(kernel_dir), str(kernel_dir),
             "--bind", str(scratch), str(cwd), "--chdir", str(cwd)]
    for name in ("passwd", "group"):
        if (kernel_dir / name).exists():
            args += ["--ro-bind", str(kernel_dir / name), f"/etc/{name}"]
    env = kernel_environment(kernel_dir) if env is None else env
    return args + [arg for key, value in env.items() for arg in ("--setenv", key, value)] + [
        "--"]


def _prepare_kernel_dir(folder):
    """What the kernel reads from its own folder: a one-user passwd/group (so Python and
    torch can name the user without the host's), and matplotlib's font cache."""
    uid, gid = os.getuid(), os.getgid()
    (folder / "passwd").write_text(f"{USER}:x:{uid}:{gid}::/tmp:/bin/sh\n")
    (folder / "group").write_text(f"{USER}:x:{gid}:\n")
    mpl = folder / "matplotlib"
    mpl.mkdir()
    cache = _font_cache()
    if cache is not None:
        shutil.copy2(cache, mpl / cache.name)


@functools.cache
def _font_cache():
    """matplotlib's font list, built once in this process (a fresh /tmp would rebuild it
    in every kernel that imports pyplot: about a second, and a warning)."""
    try:
        from matplotlib import font_manager

        return next(Path(font_manager.get_cachedir()).glob("fontlist-*.json"), None)
    except Exception:  # noqa: BLE001 - without matplotlib there is nothing to copy
        return None


def _remove(*folders):
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels talk over ZMQ ``ipc`` sockets in a folder of their
    own, and start inside the sandbox when it is available."""

    client_factory = Type(PromptKernelClient, klass="jupyter_client.client.KernelClient")
    exit_poll_s = 0.005  # how often a kernel being shut down is checked (jupyter_client: 0.1)

    def _context_default(self):
        self._created_context = True
        return prompt_context()

    async def _async_wait(self, pollinterval=0.1):
        await super()._async_wait(pollinterval=min(pollinterval, self.exit_poll_s))

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        folder = Path(tempfile.mkdtemp(prefix="ag-kernel-"))
        scratch = Path(tempfile.mkdtemp(prefix="ag-work-"))
        self._finalizer = weakref.finalize(self, _remove, folder, scratch)
        self.kernel_dir, self.scratch = folder, scratch
        self.transport = "ipc"
        self.connection_file = str(folder / "kernel.json")
        self.ip = str(folder / "ipc")

    seccomp = None  # the watch over this kernel's system-call filter, when sandboxed
    sandboxed = False  # whether the kernel started inside bubblewrap

    def _new_seccomp_watch(self):
        if self.seccomp is not None:
            self.seccomp.close()
        self.seccomp = SeccompWatch(self.kernel_dir)

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        self._warm = None
        found = require_isolation()
        self.sandboxed = found.active
        if not found.active:
            return cmd
        if not (self.kernel_dir / "passwd").exists():
            _prepare_kernel_dir(self.kernel_dir)
        # The kernel works in a copy of its folder: nbgrader writes the graded notebook
        # into the real one afterwards, and must never write through a link the kernel
        # planted there (native code in the kernel could make one).
        cwd = Path(self._launch_args.get("cwd") or os.getcwd())
        shutil.rmtree(self.scratch)
        shutil.copytree(cwd, self.scratch, symlinks=True)
        env = kernel_environment(self.kernel_dir)
        ours = cmd[1:3] == ["-m", "autograder.kernel"]
        if ours:  # the hardened kernel loads the system-call filter (autograder.kernel)
            self._new_seccomp_watch()  # listening before the kernel can connect
            env[SECCOMP_SOCKET_ENV] = str(self.kernel_dir / SECCOMP_SOCKET)
        argv = bwrap_argv(shutil.which("bwrap"), cwd, self.kernel_dir, self.scratch, env)
        self._cold_cmd = argv + cmd
        template = zygote.shared(template_environment) if ours else None
        if template is None:
            return self._cold_cmd
        self._warm = zygote.WarmStart(template, {
            "cwd": str(cwd), "env": env, "argv": cmd[3:],
            "package_root": KERNEL_PACKAGE_ROOT, "threads": kernel_threads()})
        return self._warm.payload_argv(argv)

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        # Nothing of the grader's is inherited: its stdout/stderr are the instructor's
        # terminal or log, which a kernel (or bubblewrap's init, PID 1 in the sandbox, whose
        # descriptors a kernel can reach through /proc/1/fd) must neither read nor write.
        kw.update(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        warm, self._warm = getattr(self, "_warm", None), None
        if warm is None:
            return await super()._async_launch_kernel(kernel_cmd, **kw)
        try:
            await super()._async_launch_kernel(kernel_cmd, stdin=warm.alive_reader,
                                               pass_fds=(warm.info_writer,), **kw)
        except BaseException:
            warm.close()
            raise
        finally:
            warm.launched()
        try:
            warm.start()
        except zygote.WarmStartFailed as error:
            self.log.warning("Kernel en frío: %s", error)
            await self.provisioner.kill()
            await self.provisioner.wait()
            self._new_seccomp_watch()  # the warm kernel may have connected before failing
            await super()._async_launch_kernel(self._cold_cmd, **kw)

    async def _async_cleanup_resources(self, restart=False):
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            if self.seccomp is not None:
                self.seccomp.close()
            self._finalizer()


MAX_KERNEL_FILE = 256 * 2**20


def read_untrusted(path, limit=MAX_KERNEL_FILE):
    """The bytes of a file a kernel wrote, without following a link it may have planted,
    blocking on a FIFO or reading past ``limit``; OSError when it is not a regular file."""
    import stat

    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            raise OSError(f"{path}: no es un archivo normal de tamaño razonable")
        return handle.read(limit + 1)[:limit]
