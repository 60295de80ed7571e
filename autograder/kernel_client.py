"""The grading kernels' client: jupyter_client's asynchronous one, ready sooner.

jupyter_client 8's ``wait_for_ready`` asks for ``kernel_info`` until the reply comes and an
IOPub message shows that channel connected, waiting 0.2 s for it each time (a kernel that
has just started often publishes before the subscription is in place, and the wait is
lost), then drains IOPub until it has been silent for 0.2 s. That is 0.2 to 0.4 s of
waiting per kernel start, more than the warm kernel takes to answer. This one checks the
same two things every ``POLL_S`` and drains what is already there: nbclient reads only the
IOPub messages of the cell it runs, so a late status message of ``kernel_info`` is ignored.

Its sockets, and those of the manager (``prompt_context``), retry a connection every
``RECONNECT_MS`` instead of ZMQ's 100 ms: they connect as the kernel starts, before it has
bound its sockets, and the first retry used to come after the kernel was ready.
"""

import time
from queue import Empty

import zmq.asyncio
from jupyter_client.asynchronous.client import AsyncKernelClient

POLL_S = 0.02
RECONNECT_MS = 5


def prompt_context():
    """A ZMQ context whose sockets retry a connection every ``RECONNECT_MS``."""
    context = zmq.asyncio.Context()
    context.setsockopt(zmq.RECONNECT_IVL, RECONNECT_MS)
    return context


class PromptKernelClient(AsyncKernelClient):
    def _context_default(self):
        self._created_context = True
        return prompt_context()

    async def wait_for_ready(self, timeout=None):
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            self.kernel_info()
            try:
                msg = await self.shell_channel.get_msg(timeout=1)
            except Empty:
                pass
            else:
                if msg["msg_type"] == "kernel_info_reply" and await self._iopub_connected():
                    self._handle_kernel_info_reply(msg)
                    break
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:.0f} seconds")
        while await self._iopub_connected():  # drain what has arrived
            pass

    async def _iopub_connected(self):
        try:
            await self.iopub_channel.get_msg(timeout=POLL_S)
        except Empty:
            return False
        return True
