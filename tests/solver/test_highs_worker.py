"""The HiGHS child process ends when the process that spawned it is gone."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

from placewise.solver.highs import PARENT_ENV, WORKER

SPAWN = textwrap.dedent(
    """
    import os, subprocess, sys
    fd = int(sys.argv[1])
    child = subprocess.Popen(
        [sys.executable, "-m", sys.argv[2]],
        stdin=fd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, sys.argv[3]: str(os.getpid())},
        pass_fds=(fd,),
    )
    print(child.pid, flush=True)
    os._exit(0)  # killed mid-solve: Running.stop is never called
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # Reparented zombies count as gone: the child has exited (and may be
    # reaped between the two reads).
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_worker_whose_parent_died_exits_on_its_own() -> None:
    # The worker's stdin stays open (this test holds the write end), so
    # only the watch on its parent can end it: without it, it waits forever.
    read, write = os.pipe()
    try:
        out = subprocess.run(
            [sys.executable, "-c", SPAWN, str(read), WORKER, PARENT_ENV],
            pass_fds=(read,),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        pid = int(out.stdout.strip())
        deadline = time.monotonic() + 20
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        gone = not _alive(pid)
        if not gone:
            os.kill(pid, 9)
        assert gone, "the HiGHS worker outlived its parent"
    finally:
        os.close(read)
        os.close(write)
