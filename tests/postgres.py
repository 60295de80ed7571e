"""A throwaway PostgreSQL server for tests: Debian's package, on loopback, in a temp folder.

Installed on first use where it is missing and the test runs as root (CI); started as
the ``postgres`` user when running as root (the server refuses to run as root).
"""

import glob
import os
import shutil
import subprocess
import time
from pathlib import Path

from debian import apt_install, free_port


def _bin_dir():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


def ensure_installed():
    """The server's bin folder, installing Debian's ``postgresql`` if needed; raises with
    the reason when it is missing and cannot be installed."""
    if _bin_dir() is None:
        why_not = apt_install(["postgresql"])
        if why_not:
            raise RuntimeError(f"PostgreSQL is not installed and cannot be installed here: "
                               f"{why_not}")
    return _bin_dir()


class Server:
    def __init__(self, folder):
        self.bin = ensure_installed()
        self.folder, self.port = Path(folder), free_port()
        self.data = self.folder / "data"
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            shutil.chown(self.folder, "postgres")
            os.chmod(self.folder, 0o755)
            for parent in self.folder.parents:  # let the postgres user reach its folder
                if parent == Path("/"):
                    break
                os.chmod(parent, os.stat(parent).st_mode | 0o111)

    def _run(self, *command):
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_postgres else []
        return subprocess.run(prefix + [str(self.bin / command[0]), *command[1:]], check=True,
                              capture_output=True, text=True)

    def start(self):
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l",
                  str(self.folder / "server.log"), "-w", "start")
        return self

    def create_database(self, name):
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def stop(self):
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        time.sleep(0.1)
