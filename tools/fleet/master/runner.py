"""The command runner every day-two verb uses for scontrol, sinfo, salt-key and salt:
injectable, so the lab can point the same steps at its own master (``.lab/bin/salt``...);
where the Salt command-line tools are; the master's pki dir; and the runner built from a
Salt config dir and a Slurm command prefix."""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def check(self) -> Result:
        if self.returncode != 0:
            raise CommandError(self)
        return self


class CommandError(Exception):
    def __init__(self, result: Result) -> None:
        last = (result.stderr.strip() or result.stdout.strip()).splitlines()
        detail = last[-1] if last else ""
        super().__init__(f"`{' '.join(result.argv)}` exited {result.returncode}"
                         + (f": {detail}" if detail else ""))
        self.result = result


def through(prefix: Sequence[str], args: Sequence[str]) -> list[str]:
    """``prefix`` (an operator's ``--slurm-command`` / ``--pxe-command``, already split into
    words) followed by ``args``, so that no shell re-parses a value: a local command gets
    them as an argument list; ``ssh`` joins its remote words with spaces for the remote
    shell, so each of ours is ``shlex.quote``d (a drain reason with parentheses, a
    minion's answer with ``$(...)``, stay one literal argument)."""
    if any(Path(word).name == "ssh" for word in prefix):
        return [*prefix, *(shlex.quote(a) for a in args)]
    return [*prefix, *args]


class Runner(Protocol):
    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result: ...


class SubprocessRunner:
    """Runs commands for real. ``prefix`` maps a tool name to the argv that replaces it, e.g.
    ``{"salt": [".venv/bin/salt", "-c", ".lab/etc/salt"]}``."""

    def __init__(self, prefix: dict[str, list[str]] | None = None) -> None:
        self.prefix = prefix or {}

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
        head = self.prefix.get(argv[0])
        full = [argv[0], *argv[1:]] if head is None else through(head, argv[1:])
        if shutil.which(full[0]) is None:
            return Result(tuple(full), 127, "", f"{full[0]}: command not found")
        try:
            # its own session: an operator's second Ctrl-C goes to fleet (which finishes
            # leaving the node safe), not to the scontrol or ssh it is running
            proc = subprocess.run(full, capture_output=True, text=True, timeout=timeout,
                                  check=False, start_new_session=True)
        except subprocess.TimeoutExpired:
            return Result(tuple(full), 124, "", f"timed out after {timeout:g}s")
        return Result(tuple(full), proc.returncode, proc.stdout, proc.stderr)


SALT_TOOLS = ("salt", "salt-key", "salt-run")
SLURM_TOOLS = ("scontrol", "sinfo", "squeue", "scancel", "sbatch")


def tool_path(name: str) -> str:
    """A Salt command-line tool: the one beside this Python (the venv's, the Salt that
    fleet's own Python client is) first, then PATH; the bare name when neither has it."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return os.fspath(beside)
    return shutil.which(name) or name


@functools.lru_cache(maxsize=4)  # once for all the nodes of a parallel run
def master_opts(config_dir: Path) -> dict[str, Any]:
    """The master's options as Salt reads its config in ``config_dir`` (``master``, then
    ``master.d``); Salt's defaults where there is none."""
    import salt.config  # type: ignore[import-untyped]  # heavy; only here

    opts: dict[str, Any] = salt.config.master_config(os.fspath(config_dir / "master"))
    return opts


def pki_dir(config_dir: Path) -> Path:
    """The master's ``pki_dir`` as its config in ``config_dir`` sets it."""
    return Path(master_opts(config_dir)["pki_dir"])


def runner_for(salt_config: Path, slurm_command: str | None = None) -> SubprocessRunner:
    """salt, salt-key and salt-run through ``-c salt_config``; scontrol, sinfo, squeue,
    scancel and sbatch through ``slurm_command`` (e.g. ``ssh head-01``) when one is given."""
    conf = os.fspath(salt_config)
    prefix = {tool: [tool_path(tool), "-c", conf] for tool in SALT_TOOLS}
    if slurm_command:
        for tool in SLURM_TOOLS:
            prefix[tool] = [*shlex.split(slurm_command), tool]
    return SubprocessRunner(prefix)
