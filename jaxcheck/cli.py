"""The `jaxcheck` command line: `jaxcheck check [PATHS]`, `jaxcheck rule CODE|NAME|--all`,
`jaxcheck config --schema`, `jaxcheck run script.py [ARGS]` / `jaxcheck run -m module [ARGS]`.

Exit codes: 0 clean, 1 findings, 2 usage, configuration or internal error; 130 and 143 when SIGINT or
SIGTERM ended the run. `jaxcheck run` exits with the program's own status. JAX is imported only by
`jaxcheck run`, lazily.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn, TextIO

from jaxcheck.version import __version__
from jaxcheck.analyzer.autofix import fix_files, write_fixed
from jaxcheck.analyzer.cache import DEFAULT_CACHE_DIR
from jaxcheck.analyzer.config import ConfigError, ConfigResolver, Configuration, Settings, load_configuration
from jaxcheck.analyzer.diagnostics import FileError
from jaxcheck.analyzer.docs import render_rule
from jaxcheck.analyzer.engine import CheckReport, Linter
from jaxcheck.analyzer.output import FORMATTERS, NEEDS_SOURCES, OutputContext, read_sources
from jaxcheck.analyzer.parallel import terminate_workers
from jaxcheck.analyzer.progress import ProgressBar
from jaxcheck.analyzer.project import common_folder, project_root
from jaxcheck.analyzer.registry import all_rules, is_known_selector, rule_by_code_or_name

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED, EXIT_TERMINATED = 128 + signal.SIGINT, 128 + signal.SIGTERM


class _Parser(argparse.ArgumentParser):
    """argparse that exits with code 2 and a one-line message on usage errors (as it does), but
    never on `--help`/`--version` (exit 0)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


def _selectors(text: str) -> list[str]:
    codes = [code.strip().upper() for code in text.split(",") if code.strip()]
    for code in codes:
        if not is_known_selector(code):
            raise argparse.ArgumentTypeError(f"unknown rule code or prefix {code!r}")
    return codes


def _jobs(text: str) -> int:
    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of jobs, got {text!r}")
    return jobs


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="jaxcheck", description="Find JAX purity and tracing errors before they run.")
    parser.add_argument("--version", action="version", version=f"jaxcheck {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    check = commands.add_parser("check", help="check files and folders (default: the current folder)")
    check.add_argument("paths", nargs="*", type=Path, default=[Path(".")], help="files or folders to check")
    check.add_argument("--select", type=_selectors, help="comma-separated codes or prefixes to enable")
    check.add_argument("--ignore", type=_selectors, default=[], help="comma-separated codes or prefixes to disable")
    check.add_argument("--format", "--output-format", dest="format", choices=sorted(FORMATTERS), default="text")
    sources = check.add_mutually_exclusive_group()
    sources.add_argument("--config", type=Path,
                         help="read settings for every file from this TOML file instead of each file's nearest one")
    sources.add_argument("--isolated", action="store_true", help="ignore all configuration files (default settings)")
    check.add_argument("--show-settings", type=Path, metavar="FILE",
                       help="print the settings that apply to FILE and the file they come from, then exit")
    check.add_argument("-j", "--jobs", type=_jobs, default=os.cpu_count() or 1,
                       help="worker processes (default: the number of CPUs; 1: in this process)")
    check.add_argument("--cache-dir", type=Path, help=f"cache folder (default: {DEFAULT_CACHE_DIR} in the project root)")
    check.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    check.add_argument("--fix", action="store_true", help="apply safe fixes, then report what is left")
    check.add_argument("--unsafe-fixes", action="store_true", help="with --fix or --diff, apply unsafe fixes too")
    check.add_argument("--diff", action="store_true", help="print the fixes as a unified diff and write nothing")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply excludes and .gitignore to files named on the command line too")
    rule = commands.add_parser("rule", help="print a rule's documentation as Markdown")
    which = rule.add_mutually_exclusive_group(required=True)
    which.add_argument("rule", nargs="?", metavar="CODE|NAME", help="a rule code (JAX301) or name")
    which.add_argument("--all", action="store_true", help="print every rule")
    run_parser = commands.add_parser("run", help="run a Python program with the runtime checks (needs JAX)")
    run_parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module, like `python -m`")
    run_parser.add_argument("--mode", choices=("warn", "raise", "collect"),
                            help="override [tool.jaxcheck.runtime] mode")
    run_parser.add_argument("--nans", action="store_true", default=None, help="also locate NaN/Inf (JAX701)")
    run_parser.add_argument("--index-checks", action="store_true", default=None,
                            help="also report out-of-bounds indexing (JAX203)")
    run_parser.add_argument("--config", type=Path, help="read settings from this TOML file instead of pyproject.toml")
    run_parser.add_argument("argv", nargs=argparse.REMAINDER, metavar="script.py [ARGS]",
                            help="the script and its arguments (with -m: the module's arguments)")
    config = commands.add_parser("config", help="show information about the settings")
    config.add_argument("--schema", action="store_true", required=True,
                        help="print the JSON Schema of [tool.jaxcheck]")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with `argv` (default: sys.argv[1:]); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.command == "rule":
        return _rule(args)
    if args.command == "config":
        return _config_schema()
    if args.command == "run":
        return _run(parser, args)
    return _check(args)


def _rule(args: argparse.Namespace) -> int:
    rules = all_rules() if args.all else (rule_by_code_or_name(args.rule),)
    if None in rules:
        print(f"jaxcheck: error: unknown rule {args.rule!r}", file=sys.stderr)
        return EXIT_ERROR
    sys.stdout.write("\n".join(render_rule(rule) for rule in rules if rule is not None))
    return EXIT_CLEAN


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """`jaxcheck run`: the program's exit status, or 2 for usage and configuration errors."""
    if args.module is None and not args.argv:
        parser.exit(EXIT_ERROR, "jaxcheck run: error: give a script (jaxcheck run script.py) or -m module\n")
    try:
        from jaxcheck.runtime_checks.runner import run_program
    except ImportError as exc:
        print(f"jaxcheck: error: `jaxcheck run` needs JAX ({exc}): pip install 'jaxcheck[runtime]'", file=sys.stderr)
        return EXIT_ERROR
    try:
        settings = load_configuration(args.config, Path(".")).settings.runtime
    except ConfigError as exc:
        print(f"jaxcheck: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    chosen = (("mode", args.mode), ("nans", args.nans), ("index_checks", args.index_checks))
    overrides = {key: value for key, value in chosen if value is not None}
    settings = settings.model_copy(update=overrides)
    if args.module is not None:
        return run_program(args.module, True, args.argv, settings)
    return run_program(args.argv[0], False, args.argv[1:], settings)


def _config_schema() -> int:
    print(json.dumps(Settings.model_json_schema(by_alias=True), indent=2))
    return EXIT_CLEAN


def _check(args: argparse.Namespace) -> int:
    if isinstance(sys.stdout, io.TextIOWrapper):  # file names that are not valid UTF-8 print as their bytes
        sys.stdout.reconfigure(errors="surrogateescape")
    missing = [path for path in args.paths if not os.path.lexists(path)]
    if missing:
        print(f"jaxcheck: error: {missing[0]}: no such file or folder", file=sys.stderr)
        return EXIT_ERROR
    if args.show_settings is not None:
        return _show_settings(args)
    try:
        start = common_folder(args.paths)
        resolver = _resolver(args, start)
        linter = Linter(resolver.for_path(start), args.select, args.ignore, resolver=resolver)
        cache_dir = None if args.no_cache else args.cache_dir or project_root(start) / DEFAULT_CACHE_DIR
        progress = ProgressBar(sys.stderr) if sys.stderr.isatty() else None
        report = linter.check_paths(args.paths, force_exclude=args.force_exclude, jobs=args.jobs,
                                    cache_dir=cache_dir, progress=progress)
    except ConfigError as exc:
        print(f"jaxcheck: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.diff:
        return _diff(linter, report, args.unsafe_fixes)
    if args.fix:
        report = _fix(linter, report, args, cache_dir)
    sources = read_sources(d.path for d in report.diagnostics) if args.format in NEEDS_SOURCES else {}
    context = OutputContext(sources=sources, color=_use_color(sys.stdout))
    sys.stdout.write(FORMATTERS[args.format](report.diagnostics, context))
    for line in [*report.notes, *map(str, report.errors)]:
        print(line, file=sys.stderr)
    if report.errors:
        return EXIT_ERROR
    if report.diagnostics and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _resolver(args: argparse.Namespace, start: Path) -> ConfigResolver:
    """Each file's configuration: its nearest configuration file, `--config` for all, or none (`--isolated`)."""
    return ConfigResolver(Configuration(root=start), args.config, args.isolated)


def _show_settings(args: argparse.Namespace) -> int:
    """`check --show-settings FILE`: the resolved settings of FILE, the files they come from, the rules
    they enable (after --select/--ignore)."""
    path: Path = args.show_settings
    if not os.path.lexists(path):
        print(f"jaxcheck: error: {path}: no such file or folder", file=sys.stderr)
        return EXIT_ERROR
    try:
        resolver = _resolver(args, common_folder([path]))
        profile = Linter(resolver.for_path(path), args.select, args.ignore).profile_of(resolver.for_path(path))
    except ConfigError as exc:
        print(f"jaxcheck: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    configuration = profile.configuration
    origin = "none (--isolated)" if args.isolated else "none (defaults)"
    print(f"Resolved settings for: {path}")
    print(f"Settings path: {configuration.source if configuration.source is not None else origin}")
    for extended in configuration.sources[1:]:
        print(f"Extends: {extended}")
    print(f"Excludes relative to: {configuration.root}")
    print(f"Per-file-ignores relative to: {configuration.per_file_ignores_root}")
    print(f"Enabled rules: {', '.join(sorted(profile.codes)) or '(none)'}")
    if not path.is_dir():
        print(f"Ignored in this file (per-file-ignores): {', '.join(Linter.per_file_ignores(str(path), profile)) or '(none)'}")
    settings = configuration.settings.model_dump(mode="json", by_alias=True)
    print(json.dumps(settings, indent=2, sort_keys=True))
    return EXIT_CLEAN


def _diff(linter: Linter, report: CheckReport, unsafe: bool) -> int:
    """Print what the fixes would change; exit 1 when there is a change, 2 on errors."""
    results = fix_files(linter, report.diagnostics, unsafe)
    sys.stdout.write("".join(result.diff() for result in results if result.error is None))
    errors = [*report.errors, *(FileError(str(r.path), r.error) for r in results if r.error is not None)]
    for error in errors:
        print(str(error), file=sys.stderr)
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if any(result.after != result.before for result in results) else EXIT_CLEAN


def _fix(linter: Linter, report: CheckReport, args: argparse.Namespace, cache_dir: Path | None) -> CheckReport:
    """Apply fixes and write the files, then check again: the report of what is left."""
    errors: list[FileError] = []
    applied = 0
    for result in fix_files(linter, report.diagnostics, args.unsafe_fixes):
        if result.error is not None:
            errors.append(FileError(str(result.path), result.error))
            continue
        try:
            write_fixed(result)
        except OSError as exc:
            errors.append(FileError(str(result.path), f"cannot write: {exc.strerror or exc}"))
            continue
        applied += result.applied
    if applied:
        print(f"Fixed {applied} finding{'s' if applied != 1 else ''}.", file=sys.stderr)
    remaining = linter.check_paths(args.paths, force_exclude=args.force_exclude, jobs=args.jobs,
                                   cache_dir=cache_dir)
    remaining.errors.extend(errors)
    remaining.notes[:0] = report.notes
    return remaining


def _use_color(stream: TextIO) -> bool:
    """ANSI colours only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    return stream.isatty() and not os.environ.get("NO_COLOR")


class _Terminated(Exception):
    """SIGTERM arrived."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise _Terminated


def run() -> None:
    """Console-script entry point. SIGINT (Ctrl-C) and SIGTERM end jaxcheck and its worker processes
    at once, with exit code 130 or 143 and one line on stderr instead of a traceback; a file being
    written by --fix is finished first (see :mod:`jaxcheck.analyzer.files`)."""
    signal.signal(signal.SIGTERM, _raise_terminated)
    # Workers stopped mid-task leave their queues' semaphores to multiprocessing's resource tracker,
    # which removes them and would print a UserWarning per run; the tracker inherits these options.
    sys.warnoptions.append("ignore::UserWarning:multiprocessing.resource_tracker")
    try:
        code = main()
    except KeyboardInterrupt:
        _abort(EXIT_INTERRUPTED, "interrupted")
    except _Terminated:
        _abort(EXIT_TERMINATED, "terminated")
    raise SystemExit(code)


def _abort(code: int, what: str) -> NoReturn:
    """End now: stop the workers and exit. `os._exit` skips interpreter shutdown, where Python 3.10's
    process-pool exit hook can wait for the stopped workers forever; no write is under way here (--fix
    holds signals while it writes, in this thread)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    terminate_workers()
    print(f"jaxcheck: {what}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
