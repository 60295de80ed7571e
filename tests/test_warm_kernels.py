"""Warm kernels (``autograder.zygote``, ``autograder.warm_kernel``): forked from a template,
yet each in its own sandbox, as isolated as a cold one, and sharing nothing with the next."""

import asyncio
import json
import os
import time

import pytest

from autograder import sandbox, zygote
from autograder.kernel import _hidden_module
from autograder.sandbox import SandboxedKernelManager

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sandbox.isolation().active,
                                 reason="bubblewrap is not available here")]

PROBE = """
import json, os, socket, sys, torch, numpy, builtins
status = dict(line.split(':\\t', 1) for line in open('/proc/self/status').read().splitlines()
              if ':\\t' in line)
try:
    socket.create_connection(('1.1.1.1', 53), timeout=2)
    net = True
except OSError:
    net = False
try:
    import autograder.chapters.ch01.hidden
    hidden = 'imported'
except Exception as error:
    hidden = type(error).__name__
def links(folder):
    found = []
    for fd in os.listdir(folder):
        try:
            found.append(os.readlink(os.path.join(folder, fd)))
        except OSError:
            pass  # the descriptor listdir itself had open
    return found
fds = {'self': links('/proc/self/fd'), 'init': links('/proc/1/fd')}
leftover = getattr(torch, 'left_by_the_last_kernel', None), hasattr(builtins, 'planted')
torch.left_by_the_last_kernel = 1
builtins.planted = True
print(json.dumps({'pid': os.getpid(), 'procs': sorted(p for p in os.listdir('/proc')
                  if p.isdigit()), 'files': sorted(os.listdir('.')), 'net': net,
                  'hidden': hidden, 'caps': [status[k].strip() for k in
                  ('CapPrm', 'CapEff', 'CapBnd', 'CapAmb')], 'nnp': status['NoNewPrivs'].strip(),
                  'leftover': leftover, 'torch_seed': torch.initial_seed(),
                  'numpy': int(numpy.random.randint(1 << 30)), 'threads': torch.get_num_threads(),
                  'file': __import__('autograder.harness').harness.__file__,
                  'environ': sorted(os.environ), 'fds': fds,
                  'modules': sorted(m for m in sys.modules if m.startswith('autograder'))}))
"""


async def _started(work):
    """A grading kernel working in ``work``, ready: (manager, client)."""
    manager = SandboxedKernelManager(kernel_name="autograder-hardened")
    await manager.start_kernel(cwd=str(work))
    client = manager.client()
    client.start_channels()
    await client.wait_for_ready(timeout=120)
    return manager, client


def _probe(work):
    """What ``PROBE`` finds in a fresh grading kernel."""
    async def go():
        manager, client = await _started(work)
        outputs = []
        try:
            await client.execute_interactive(PROBE, timeout=60, output_hook=outputs.append)
        finally:
            client.stop_channels()
            await manager.shutdown_kernel(now=True)
        return json.loads("".join(m["content"].get("text", "") for m in outputs
                                  if m["msg_type"] == "stream"))
    return asyncio.run(go())


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.setenv(zygote.WARM_ENV, "1")
    # As `make grade` runs: without OMP_NUM_THREADS (importing torch then starts a thread),
    # and a template of this test's own.
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(zygote, "_shared", {"template": None, "failed": None})
    folder = tmp_path / "entrega"
    folder.mkdir()
    (folder / "notebook.ipynb").write_text("{}")
    return folder


def test_warm_kernels_are_sandboxed_and_share_nothing(work):
    first, second = _probe(work), _probe(work)
    for found in (first, second):
        # bubblewrap's init, the waiting payload, the kernel: a PID namespace of its own
        assert found["procs"] == ["1", "2", "3"] and found["pid"] == 3
        assert found["files"] == ["notebook.ipynb"] and not found["net"]
        assert found["hidden"] == "PermissionError"  # the guard is on
        assert set(found["caps"]) == {"0000000000000000"} and found["nnp"] == "1"
        assert found["file"].startswith(sandbox.KERNEL_PACKAGE_ROOT)
        assert "COURSE_SECRET" not in found["environ"]
        # the template imported nothing a kernel may not import itself
        assert not [m for m in found["modules"] if _hidden_module(m)], found["modules"]
    assert first["threads"] == len(os.sched_getaffinity(0))  # as many as a cold kernel's
    assert first["leftover"] == second["leftover"] == [None, False]
    assert first["torch_seed"] != second["torch_seed"] and first["numpy"] != second["numpy"]
    assert zygote._shared["template"] is not None and zygote._shared["failed"] is None


def test_a_warm_kernel_that_dies_is_seen_dead_and_leaves_nothing(work):
    async def go():
        manager, client = await _started(work)
        sandbox_pid = manager.provisioner.process.pid
        client.execute("import os\nos._exit(3)")
        deadline = time.monotonic() + 20
        while await manager.is_alive() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        alive = await manager.is_alive()
        client.stop_channels()
        await manager.shutdown_kernel(now=True)
        return alive, sandbox_pid
    alive, sandbox_pid = asyncio.run(go())
    assert not alive
    assert not os.path.exists(f"/proc/{sandbox_pid}")


def test_a_grading_kernels_sockets_connect_promptly_and_its_end_is_reaped(work):
    """The client and the manager retry connections every ``RECONNECT_MS`` (they connect
    before the kernel binds), and a kernel shut down is gone when the shutdown returns."""
    import zmq

    from autograder.kernel_client import RECONNECT_MS

    async def go():
        manager, client = await _started(work)
        sockets = [client.shell_channel.socket, client.iopub_channel.socket,
                   manager._control_socket]
        intervals = [s.getsockopt(zmq.RECONNECT_IVL) for s in sockets]
        pid = manager.provisioner.process.pid
        client.stop_channels()
        await manager.shutdown_kernel(now=True)
        return intervals, pid, manager.has_kernel
    intervals, pid, has_kernel = asyncio.run(go())
    assert intervals == [RECONNECT_MS] * 3
    assert not has_kernel and not os.path.exists(f"/proc/{pid}")


def test_a_warm_kernel_can_be_interrupted(work):
    async def go():
        manager, client = await _started(work)
        request = client.execute("while True:\n    pass")
        await asyncio.sleep(2)
        await manager.interrupt_kernel()
        reply = await client.get_shell_msg(timeout=30)
        while reply["parent_header"].get("msg_id") != request:  # kernel_info replies
            reply = await client.get_shell_msg(timeout=30)
        client.stop_channels()
        await manager.shutdown_kernel(now=True)
        return reply["content"]
    reply = asyncio.run(go())
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"


def _graders_streams():
    """What this process's stdin/stdout/stderr are, as /proc/PID/fd names them."""
    return {os.readlink(f"/proc/self/fd/{fd}") for fd in (0, 1, 2)} - {"/dev/null"}


def assert_nothing_inherited(found):
    """Inside the kernel and in bubblewrap's init (PID 1, reachable through /proc/1/fd):
    no file but /dev/null, and none of the grader's streams (its terminal, its log)."""
    for where, targets in found["fds"].items():
        for target in targets:
            assert target == "/dev/null" or not target.startswith("/"), (where, target)
            assert target not in _graders_streams(), (where, target)


def test_a_warm_kernel_inherits_no_descriptor_of_the_grader(work):
    assert_nothing_inherited(_probe(work))


def test_without_a_template_kernels_start_cold(work, monkeypatch):
    def fails(env):
        raise zygote.WarmStartFailed("no disponible en esta prueba")

    monkeypatch.setattr(zygote, "_shared", {"template": None, "failed": None})
    monkeypatch.setattr(zygote, "Template", fails)
    found = _probe(work)
    assert found["procs"] == ["1", "2"] and found["pid"] == 2  # bubblewrap runs it directly
    assert set(found["caps"]) == {"0000000000000000"} and found["hidden"] == "PermissionError"
    assert_nothing_inherited(found)
    monkeypatch.setenv(zygote.WARM_ENV, "0")
    monkeypatch.setattr(zygote, "_shared", {"template": None, "failed": None})
    assert zygote.shared(dict) is None


def _probe_in_worker(work):
    """In a grading worker forked from the seed: ``PROBE`` in a kernel, and which template
    forked it (this worker's channel to it, not a template of its own)."""
    found = _probe(work)
    template = zygote._shared["template"]
    return found, template.pid, template.process is None, os.getpid()


def test_workers_forked_from_the_seed_share_its_template(work, monkeypatch):
    from autograder import grading_seed, workers

    seeded = [grading_seed.PRELOAD]
    results = workers.run([work] * 3, _probe_in_worker, workers=2, preload=seeded,
                          starter=grading_seed.start_worker)
    assert all(isinstance(result, tuple) for result in results), results
    assert len({worker for *_, worker in results}) == 2
    assert len({template for _, template, _, _ in results}) == 1  # one for the machine
    assert all(borrowed for _, _, borrowed, _ in results)
    for found, *_ in results:
        assert found["procs"] == ["1", "2", "3"] and found["pid"] == 3  # forked, sandboxed
        assert set(found["caps"]) == {"0000000000000000"} and found["nnp"] == "1"
        assert found["hidden"] == "PermissionError" and not found["net"]
        assert found["leftover"] == [None, False]
        assert found["threads"] == len(os.sched_getaffinity(0))
    assert len({found["torch_seed"] for found, *_ in results}) == 3
