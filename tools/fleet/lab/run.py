"""The one way the lab runs commands: argv lists only, logged (quoted) when they fail."""

from __future__ import annotations

import logging
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

log = logging.getLogger("fleet.lab")


class LabError(RuntimeError):
    """A lab step failed; the message names the command and its output."""


def quoted(argv: Sequence[str | os.PathLike[str]]) -> str:
    return shlex.join(os.fspath(a) for a in argv)


def run(argv: Sequence[str | os.PathLike[str]], *, check: bool = True,
        input: str | bytes | None = None, env: Mapping[str, str] | None = None,
        timeout: float | None = None, cwd: Path | None = None,
        text: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` and capture its output. With ``check`` a non-zero exit raises
    :class:`LabError` carrying the quoted command line and the last of its output."""
    args = [os.fspath(a) for a in argv]
    full_env = None
    if env is not None:
        full_env = {**os.environ, **env}
    log.debug("run: %s", quoted(args))
    try:
        proc = subprocess.run(args, input=input, capture_output=True, text=text,
                              env=full_env, timeout=timeout, cwd=cwd, check=False)
    except subprocess.TimeoutExpired as exc:
        log.error("timed out after %ss: %s", timeout, quoted(args))
        raise LabError(f"timed out after {timeout}s: {quoted(args)}") from exc
    except FileNotFoundError as exc:
        log.error("not found: %s", quoted(args))
        raise LabError(f"command not found: {args[0]} (in: {quoted(args)})") from exc
    if check and proc.returncode != 0:
        out = (str(proc.stdout or "") + str(proc.stderr or ""))[-4000:]
        log.error("exit %d: %s\n%s", proc.returncode, quoted(args), out)
        raise LabError(f"exit {proc.returncode}: {quoted(args)}\n{out}")
    return proc


def wait_for(what: str, probe: Callable[[], bool], timeout: float,
             interval: float = 1.0) -> float:
    """Poll ``probe`` until it is true; return the seconds it took, raise after ``timeout``."""
    t0 = time.monotonic()
    while True:
        if probe():
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise LabError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def live_pid(pidfile: Path) -> int | None:
    """The process ``pidfile`` names, if it runs."""
    try:
        p = int(pidfile.read_text().strip())
        os.kill(p, 0)
    except (OSError, ValueError):
        return None
    return p


def stop_daemon(what: str, pid: Callable[[], int | None], timeout: float) -> None:
    """SIGTERM the daemon whose pid ``pid()`` reads, wait until it is gone, else SIGKILL."""
    p = pid()
    if p is None:
        return
    os.kill(p, signal.SIGTERM)
    try:
        wait_for(f"{what} to stop", lambda: pid() is None, timeout=timeout)
    except LabError:
        os.kill(p, signal.SIGKILL)
