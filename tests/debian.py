"""Helpers the tests that need a system service share: Debian packages installed on first
use (root and apt-get only, as in CI) and a free loopback port."""

import os
import shutil
import socket
import subprocess


def apt_install(packages):
    """Install Debian ``packages``; None when done, else why not (no root, no apt-get, or
    apt-get's error)."""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return f"installing Debian's {' '.join(packages)} needs root and apt-get"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]):
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            return f"`{' '.join(command)}` failed:\n{done.stderr[-2000:]}"
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
