#!/usr/bin/env python3
"""Runs an interactive shell in a pseudo-terminal, types keys into it and prints every byte it
wrote to the terminal, raw, on stdout: the completion tests (hostile_completion.rs) use it to
press TAB in real bash, zsh and fish and see what reached the screen.

Usage: pty_shell.py SPEC.json, where SPEC is {"argv": [...], "cwd": DIR, "env": {...},
"steps": [["send", TEXT] | ["sleep", SECONDS], ...]}. The shell is killed after the last step.
"""
import json
import os
import pty
import select
import signal
import sys
import time


def drain(fd, out, seconds):
    """Reads what the shell writes for `seconds`."""
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return
        if not chunk:
            return
        out.extend(chunk)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(spec["cwd"])
        os.execve(spec["argv"][0], spec["argv"], spec["env"])
    out = bytearray()
    # Answer nothing to terminal queries; give the shell time to start.
    drain(fd, out, 1.0)
    for step in spec["steps"]:
        if step[0] == "send":
            os.write(fd, step[1].encode("utf-8"))
            drain(fd, out, 0.3)
        else:
            drain(fd, out, float(step[1]))
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    sys.stdout.buffer.write(bytes(out))


if __name__ == "__main__":
    main()
