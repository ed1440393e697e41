"""The ``fleet`` command line: the parser built from one registry (fleet.commands.VERBS),
and main(), which runs the chosen verb's ``run(args, ctx)`` and turns what escapes it
into the exit code of fleet.exitcodes. Only the chosen verb's module is imported: the
others are listed with their short help, so ``fleet --help`` imports none."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any, NoReturn

from fleet import __version__
from fleet.cliparts import common_options
from fleet.commands import VERBS, module_name
from fleet.exitcodes import Exit, for_signal
from fleet.exitcodes import summary as exit_summary


class UsageError(Exception):
    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors main() reports (a JSON document with --json)
    instead of exiting from inside parse_args; its subparsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self, message)


class _Verbs(argparse._SubParsersAction):  # type: ignore[type-arg]
    """The verbs' subparsers: each verb's short help is its line in VERBS (the verbs'
    modules, and fleet.cliparts below them, never look the registry up)."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        kwargs.setdefault("help", VERBS[name])
        parser: argparse.ArgumentParser = super().add_parser(name, **kwargs)
        return parser


def _chosen(argv: Sequence[str]) -> str | None:
    """The verb argv names: its first word that is not an option (the top-level parser
    has only -h and --version, neither with a value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser, every verb listed; the full arguments only for the verb argv names
    (None: all of them, e.g. for the docs' checks)."""
    parser = Parser(
        prog="fleet",
        description="Declarative provisioning for a GPU datacenter: validate inventory.yaml "
                    "and render Salt pillars and PXE boot configs from it.",
        epilog=f"exit codes: {exit_summary()}")
    parser.add_argument("--version", action="version", version=f"fleet {__version__}")
    parser.register("action", "parsers", _Verbs)
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    chosen = None if argv is None else _chosen(argv)
    parents = [common_options()]
    for verb, short in VERBS.items():
        if argv is None or verb == chosen:
            _module(verb).register(sub, parents)
        else:
            sub.add_parser(verb, help=short)
    return parser


def _module(verb: str) -> ModuleType:
    return importlib.import_module(module_name(verb))


def main(argv: Sequence[str] | None = None) -> int:
    """Run one verb; a reader of stdout that went away (``fleet node list --json | head``)
    ends the run quietly, as every Unix tool does, with 128 + SIGPIPE."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # the last of the output, while a closed pipe can still be told
    except BrokenPipeError:
        # stdout to /dev/null: the interpreter's own flush at exit would fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return Exit.PIPE
    return code


def _main(argv: Sequence[str] | None = None) -> int:
    from fleet.context import Context

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser(argv).parse_args(argv)
    except UsageError as exc:
        return _usage(exc, argv)
    module = _module(args.verb)
    ctx = Context.of(args)
    ctx.out.capture_stderr()
    # A run builds a large, acyclic heap and then exits: the cyclic garbage collector
    # would only re-scan it again and again as it grows (a third of load time for 10,000
    # nodes). Off for the run; back on for callers that run main() in-process (tests),
    # with the run's heap frozen first: re-enabled as it was, the collector's next pass
    # (the audit's or the summary's allocations) walked all of it once more, 0.3-0.4 s of
    # CPU at 10,000 nodes. Frozen objects are still freed by their reference counts.
    collecting = gc.isenabled()
    gc.disable()
    started = time.monotonic()
    try:
        code = int(module.run(args, ctx))
    except BaseException as exc:
        if isinstance(exc, SystemExit | GeneratorExit | BrokenPipeError):
            raise
        code = _failed(exc, args, ctx)
    finally:
        if collecting:
            gc.freeze()
            gc.enable()
        ctx.out.release_stderr()
    _audit(args, argv, code, time.monotonic() - started, ctx)
    ctx.out.finish(code)
    return code


def _audit(args: argparse.Namespace, argv: list[str], code: int, seconds: float,
           ctx: object) -> None:
    """The one place a run is recorded (fleet.audit): a verb that changes something."""
    from fleet.audit import log, record
    from fleet.context import Context

    assert isinstance(ctx, Context)
    if record.changes(args):
        log.keep(record.make(args, argv, code, seconds, ctx.out.document),
                 quiet=ctx.out.quiet, verbose=ctx.out.verbose)


def _usage(exc: UsageError, argv: Sequence[str]) -> int:
    """A usage error, as argparse says it (usage and message on stderr), exit 2; with
    --json also the one document."""
    from fleet.output import Output

    exc.parser.print_usage(sys.stderr)
    print(f"{exc.parser.prog}: error: {exc}", file=sys.stderr)
    chosen = _chosen(argv)
    out = Output(chosen if chosen in VERBS else "", json_mode="--json" in argv, quiet=False,
                 verbose=False)
    out.error(str(exc))
    out.finish(Exit.USAGE)
    return Exit.USAGE


def _failed(exc: BaseException, args: argparse.Namespace, ctx: object) -> int:
    """What escaped a verb, said on stderr (and kept for the JSON document), as its code."""
    from fleet.context import Context
    from fleet.inventory.masters import NotActiveError
    from fleet.inventory.target import TargetError
    from fleet.problems import InventoryError, format_text
    from fleet.render.errors import RenderBusyError
    from fleet.signals import Stopped

    assert isinstance(ctx, Context)
    if isinstance(exc, Stopped):  # a long verb's one catcher (fleet.signals.long_verb)
        msg = f"fleet {args.verb}: stopped by {exc.name}; {exc.left}"
        print(msg, file=sys.stderr)
        ctx.out.error(msg)
        return for_signal(exc.signum)
    if isinstance(exc, TargetError):
        print(f"fleet: target: {exc}", file=sys.stderr)
        return Exit.USAGE
    if isinstance(exc, InventoryError):
        if not ctx.out.json:
            print(format_text(exc.problems, wrote_nothing=args.verb == "render"),
                  file=sys.stderr)
        for p in exc.problems:
            ctx.out.error(**p.as_dict())  # type: ignore[arg-type]
        # an inventory that cannot be read is an I/O error, not an invalid one
        return Exit.IO if all(p.code == "io" for p in exc.problems) else Exit.INVALID
    if isinstance(exc, RenderBusyError):
        print(f"fleet: {exc}", file=sys.stderr)
        return Exit.IO
    if isinstance(exc, NotActiveError):  # another master owns the nodes
        print(f"fleet: {exc}", file=sys.stderr)
        ctx.out.error(str(exc))
        return Exit.BUSY
    if isinstance(exc, OSError):
        print(f"fleet: {exc.filename or ''}: {exc.strerror or exc}; previous output kept",
              file=sys.stderr)
        return Exit.IO
    if isinstance(exc, KeyboardInterrupt):
        print("fleet: interrupted; previous output kept", file=sys.stderr)
        return for_signal(2)
    if args.debug:
        import traceback  # here: only --debug prints one

        traceback.print_exception(exc)
    print(f"fleet: internal error: {type(exc).__name__}: {exc} (rerun with --debug for "
          "the traceback, and please report it)", file=sys.stderr)
    return Exit.INTERNAL


if __name__ == "__main__":
    sys.exit(main())
