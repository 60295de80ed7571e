#!/usr/bin/env bash
# Make sure the grading sandbox (bubblewrap) is here: installed with apt-get when this runs
# as root on Debian/Ubuntu (CI, containers), else explained. Without it `python -m autograder
# grade` refuses to start unless told --no-sandbox (then only the in-kernel guard protects).
command -v bwrap >/dev/null && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing bubblewrap (the sandbox for grading kernels)..."
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; } \
    >/dev/null 2>&1 && exit 0
  echo "apt-get could not install bubblewrap." >&2
fi
cat >&2 <<'TXT'
bubblewrap (bwrap) is not installed: `grade` will refuse to start (--no-sandbox: grade
with the in-kernel guard only, which a determined student can get around).
Install it for real grading: Debian/Ubuntu `sudo apt install bubblewrap`,
Fedora `sudo dnf install bubblewrap`, Arch `sudo pacman -S bubblewrap`
(macOS has none: grade on Linux, see README "Threat model").
TXT
exit 0
