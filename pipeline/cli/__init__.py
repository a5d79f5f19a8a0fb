"""`pipeline` command. Each module in this package that defines `register(subparsers)` adds its subcommand(s);
a subcommand's handler is stored as `func` and returns the process exit code.

Exit codes shared by all commands: 0 ok / valid, 1 invalid (a finding about the input), 2 error (could not run),
3 indeterminate (validation: what the document claims was not judged; never 0, so that a script fails closed).
"""
from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

from pipeline.cli.files import shown

EXIT_CODES = ("exit codes: 0 ok / valid, 1 invalid (a finding about the input), 2 error (could not run), "
              "3 indeterminate (not judged: rules the document claims are not installed, or a check could not run)")


def _each_command(parser: argparse.ArgumentParser):
    """Every (sub)command parser under `parser`, nested ones (`run transform`, `keys create`) included."""
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                yield command
                yield from _each_command(command)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pipeline", description="E-invoice pipeline: generate and validate e-invoices.",
                                     epilog=EXIT_CODES)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    for command in _each_command(parser):
        # `--help` of every command states the exit codes; an unknown option is reported by the command that
        # was given, with its own usage (the innermost parser's default wins)
        command.epilog = "\n".join(x for x in (command.epilog, EXIT_CODES) if x)
        command.set_defaults(_parser=command)
    return parser


def _tolerant_output() -> None:
    """A file name that is no UTF-8 reaches print() as lone surrogates; where stdout / stderr are strict (a UTF-8
    locale other than C, PYTHONIOENCODING=utf-8) printing it ended the command with a traceback. Such a name is
    written back as the bytes it was read from, as `ls` does."""
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="surrogateescape")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        getattr(args, "_parser", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    _tolerant_output()
    program = getattr(args, "_parser", parser).prog  # "pipeline run normalize", not just "pipeline run"
    code = None
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe is found here, not when Python exits
    except KeyboardInterrupt:  # Ctrl-C: no traceback; said, so that a script's log shows why the output is short
        print(f"\n{program}: interrupted", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader stopped reading (`| head -1`): what it took was written, the rest not
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        # a verdict reached before the pipe closed stays the exit code (`set -o pipefail` read 2 or the verdict,
        # by the race of the two processes); a command sets `args.exit_code` once it knows its own
        return int(code if code is not None else getattr(args, "exit_code", 2))
    except OSError as exc:  # a file named on the command line cannot be read or written: say which, no traceback
        if exc.filename is None:
            raise
        name = shown(exc.filename) if isinstance(exc.filename, (str, bytes, os.PathLike)) else exc.filename
        print(f"{program}: {exc.strerror or exc}: {name}", file=sys.stderr)
        return 2
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
