"""JupyterLab in a real browser, for tests: Debian's Chromium driven by Playwright.

Chromium is Debian's package, installed on first use where it is missing and the test runs
as root (CI), like tests/postgres.py installs PostgreSQL; Playwright never downloads a
browser of its own. The lab server runs on loopback with a token, with its own settings and
workspaces folders so that nothing a developer configured changes what the test sees.
"""

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from debian import apt_install, free_port

CHROMIUM = Path("/usr/bin/chromium")
# fonts-dejavu-core: readable screenshots on a bare machine (no recommends pull fonts in).
DEBIAN_PACKAGES = ("chromium", "fonts-dejavu-core")
CHROMIUM_ARGS = [
    "--no-sandbox",  # root in containers and CI
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
TOKEN = "prueba-navegador"

# Lab settings a test needs, as a user would set them in Settings → Settings Editor:
# - every cell in the DOM (the default windowing renders only the cells on screen, and the
#   test reads every output);
# - no news or update pop-ups over the notebook (no network here anyway).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false",
                                                    "checkForUpdates": False},
}


def ensure_chromium():
    """(path, None) when Chromium is there, installing Debian's package if needed (root
    only); (None, why) when it is missing and cannot be installed."""
    if CHROMIUM.exists():
        return CHROMIUM, None
    why_not = apt_install(DEBIAN_PACKAGES)
    if why_not:
        return None, f"{CHROMIUM} is missing; {why_not}"
    if not CHROMIUM.exists():
        return None, f"apt-get installed {DEBIAN_PACKAGES} but {CHROMIUM} is still missing"
    return CHROMIUM, None


def launch(playwright):
    """Headless Debian Chromium, one per test module."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


class LabServer:
    """``jupyter lab`` on a folder, on loopback, with a token and private settings."""

    def __init__(self, root, private_dir):
        self.root, self.private = Path(root), Path(private_dir)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process = None

    def _write_settings(self):
        for plugin, values in LAB_SETTINGS.items():
            path = self.private / "settings" / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        (self.private / "workspaces").mkdir(parents=True, exist_ok=True)

    def start(self, timeout=120):
        self._write_settings()
        jupyter = Path(sys.executable).parent / "jupyter"
        self.log = open(self.private / "lab.log", "w")  # closed in stop()
        self.process = subprocess.Popen(
            [str(jupyter), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
             f"--IdentityProvider.token={TOKEN}", "--ServerApp.open_browser=False",
             "--ServerApp.port_retries=0",  # on our port or not at all (we poll that port)
             f"--LabApp.user_settings_dir={self.private / 'settings'}",
             f"--LabApp.workspaces_dir={self.private / 'workspaces'}",
             *(["--allow-root"] if os.getuid() == 0 else [])],
            cwd=self.root, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.api("GET", "status")
                return self
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("JupyterLab did not start; its log:\n"
                                       + (self.private / "lab.log").read_text()[-3000:]) from None
                time.sleep(0.3)

    def api(self, method, path, timeout=10):
        request = urllib.request.Request(f"{self.base}/api/{path}?token={TOKEN}", method=method)
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def url(self, path, workspace):
        """A lab URL in its own workspace: no tab of an earlier test is restored."""
        return f"{self.base}/lab/workspaces/{workspace}/{path}?token={TOKEN}"

    def shut_down_kernels(self):
        for session in self.api("GET", "sessions"):
            self.api("DELETE", f"sessions/{session['id']}")

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


# What the page shows, read in the browser. Cells are addressed by their index in the
# notebook (every cell is in the DOM: windowing is off, see LAB_SETTINGS).
KERNEL_IDLE_JS = """() => [...document.querySelectorAll('.jp-StatusBar-TextItem')]
    .some(e => /\\|\\s*Idle/.test(e.textContent))"""

# Run All has finished: the first code cell ran (so the run started), nothing is queued or
# running ("[*]"), and the kernel is idle. After an error JupyterLab clears the queue.
RUN_FINISHED_JS = """(panel) => {
    const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
        .map(p => p.textContent.trim());
    const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator');
    return prompts.length > 0 && /\\[\\d+\\]/.test(prompts[0])
        && !prompts.some(p => p.includes('*'))
        && indicator !== null && indicator.dataset.status === 'idle';
}"""

# What a widget shows: its output text and the images in it.
WIDGET_SHOWS_JS = """(widget) => JSON.stringify({
    text: [...widget.querySelectorAll('.widget-output')].map(o => o.innerText),
    images: [...widget.querySelectorAll('img')].map(i => i.src),
})"""

IMAGE_RENDERED_JS = "(img) => img.complete && img.naturalWidth > 0"

# A widget's callback has finished: the kernel is idle and the widget's images are decoded.
WIDGET_SETTLED_JS = f"""([panel, widget]) =>
    panel.querySelector('.jp-Notebook-ExecutionIndicator').dataset.status === 'idle'
    && [...widget.querySelectorAll('img')].every({IMAGE_RENDERED_JS})"""
