"""The `jaxcheck` command line: `jaxcheck check [PATHS]`.

Exit codes: 0 clean, 1 findings, 2 usage, configuration or internal error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from jaxcheck import __version__
from jaxcheck.analyzer.cache import DEFAULT_CACHE_DIR
from jaxcheck.analyzer.config import ConfigError, load_configuration
from jaxcheck.analyzer.engine import Linter
from jaxcheck.analyzer.output import FORMATTERS
from jaxcheck.analyzer.progress import ProgressBar
from jaxcheck.analyzer.project import project_root
from jaxcheck.analyzer.registry import is_known_selector

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


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
    check.add_argument("--config", type=Path, help="read settings from this TOML file instead of pyproject.toml")
    check.add_argument("-j", "--jobs", type=_jobs, default=os.cpu_count() or 1,
                       help="worker processes (default: the number of CPUs; 1: in this process)")
    check.add_argument("--cache-dir", type=Path, help=f"cache folder (default: {DEFAULT_CACHE_DIR} in the project root)")
    check.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with `argv` (default: sys.argv[1:]); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return _check(args)


def _check(args: argparse.Namespace) -> int:
    missing = [path for path in args.paths if not path.exists()]
    if missing:
        print(f"jaxcheck: error: {missing[0]}: no such file or folder", file=sys.stderr)
        return EXIT_ERROR
    try:
        configuration = load_configuration(args.config, args.paths[0])
        linter = Linter(configuration, args.select, args.ignore)
        cache_dir = None if args.no_cache else args.cache_dir or project_root(args.paths[0]) / DEFAULT_CACHE_DIR
        progress = ProgressBar(sys.stderr) if sys.stderr.isatty() else None
        report = linter.check_paths(args.paths, jobs=args.jobs, cache_dir=cache_dir, progress=progress)
    except ConfigError as exc:
        print(f"jaxcheck: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    output = FORMATTERS[args.format](report.diagnostics)
    sys.stdout.write(output)
    for error in report.errors:
        print(str(error), file=sys.stderr)
    if report.errors:
        return EXIT_ERROR
    if report.diagnostics and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def run() -> None:
    """Console-script entry point."""
    raise SystemExit(main())
