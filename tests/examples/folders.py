"""Helpers shared by the program checks in this folder: folder snapshots and dead pids."""
import os


def dead_pid():
    """A process id that no process has now."""
    pid = 4_000_000
    while os.path.exists(f"/proc/{pid}"):
        pid += 1
    return pid


def snapshot(folder):
    """Every file below `folder`, relative path -> bytes."""
    files = {}
    for root, _, names in os.walk(folder):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                files[os.path.relpath(p, folder)] = f.read()
    return files
