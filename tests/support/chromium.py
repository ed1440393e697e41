"""Real headless Chromium (the OS's `chromium` package, tools/install-host-deps.sh) on a
page served by a real HTTP server in a thread: the DOM after its scripts ran, and a
screenshot."""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-extensions", "--virtual-time-budget=5000")


def binary() -> str:
    """The chromium binary; AssertionError (a failure, never a skip) without it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, ("no chromium on PATH: `bash tools/install-host-deps.sh` installs the OS "
                   "package chromium (make test runs it)")
    return found


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve(root: Path) -> Iterator[str]:
    """``root`` over HTTP on 127.0.0.1 (a free port): its base URL."""
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _run(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    cmd = [binary(), *FLAGS, f"--user-data-dir={profile}", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, f"{cmd}: exit {proc.returncode}: {proc.stderr[-2000:]}"
    return proc


def dump_dom(url: str, profile: Path) -> str:
    return _run(["--dump-dom", url], profile).stdout


def screenshot(url: str, out: Path, profile: Path, size: str = "1600,1200") -> Path:
    _run([f"--screenshot={out}", f"--window-size={size}", "--hide-scrollbars", url], profile)
    assert out.is_file() and out.stat().st_size > 0, f"chromium wrote no screenshot {out}"
    return out
