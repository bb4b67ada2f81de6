"""The `jaxcheck` command line, modelled on ruff's: `jaxcheck check [PATHS | -]`, `jaxcheck rule
CODE|NAME|--all`, `jaxcheck config [KEY | --schema]`, `jaxcheck server` (the language server over stdio),
`jaxcheck run script.py [ARGS]` / `jaxcheck run -m module [ARGS]`.

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
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import NoReturn, TextIO

from jaxcheck.version import __version__
from jaxcheck.extras import install_hint
from jaxcheck.analyzer.cache import DEFAULT_CACHE_DIR
from jaxcheck.analyzer.config import (
    ConfigError, ConfigResolver, Configuration, RuntimeSettings, Settings, did_you_mean, load_configuration,
    unknown_selector,
)
from jaxcheck.analyzer.diagnostics import Diagnostic, FileError
from jaxcheck.analyzer.docs import render_rule
from jaxcheck.analyzer.engine import SYNTAX_ERROR_CODE, CheckReport, Linter
from jaxcheck.analyzer.output import (
    FORMATTERS, HUMAN_FORMATS, NEEDS_SOURCES, OutputContext, is_fixable, read_sources, summary,
)
from jaxcheck.analyzer.parallel import terminate_workers
from jaxcheck.analyzer.progress import ProgressBar
from jaxcheck.analyzer.notebooks import NotebookError, NotebookIndex, is_notebook, read_notebook
from jaxcheck.analyzer.output.context import read_notebook_indexes
from jaxcheck.analyzer.project import ModuleName, common_folder, project_root
from jaxcheck.analyzer.source import SourceDecodeError, decode_source, source_lines
from jaxcheck.analyzer.registry import all_rules, resolve_selector, rule_by_code_or_name
from jaxcheck.runtime_checks.program_exit import ProgramEnded, raise_as_python

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED, EXIT_TERMINATED = 128 + signal.SIGINT, 128 + signal.SIGTERM
_INHERITED_SIGTERM = signal.getsignal(signal.SIGTERM) or signal.SIG_DFL
"""SIGTERM's disposition before jaxcheck set its own: `jaxcheck run` gives it back to the program."""


class _Parser(argparse.ArgumentParser):
    """argparse that exits with code 2 and a one-line message on usage errors (as it does), but
    never on `--help`/`--version` (exit 0)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


def _selectors(text: str) -> list[str]:
    """Comma-separated codes, prefixes, rule names or ALL, as selectors (names become codes)."""
    selectors = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        selector = resolve_selector(item)
        if selector is None:
            raise argparse.ArgumentTypeError(unknown_selector(item))
        selectors.append(selector)
    return selectors


def _merged(groups: list[list[str]] | None) -> list[str] | None:
    """Repeated `--select A --select B` means `--select A,B` (as in ruff); None when not given."""
    return None if groups is None else [selector for group in groups for selector in group]


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
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    check = commands.add_parser("check", help="check files and folders (default: the current folder)")
    check.add_argument("paths", nargs="*", type=Path, default=[Path(".")],
                       help="files or folders to check; `-` reads the source from standard input")
    rules = check.add_argument_group("rule selection")
    rules.add_argument("--select", type=_selectors, action="append", metavar="RULES",
                       help="comma-separated codes, prefixes, rule names or ALL to enable (repeatable; "
                            "replaces the `select` setting)")
    rules.add_argument("--extend-select", type=_selectors, action="append", metavar="RULES",
                       help="like --select, but added to the selected rules (repeatable)")
    rules.add_argument("--ignore", type=_selectors, action="append", metavar="RULES",
                       help="comma-separated codes, prefixes or rule names to disable (repeatable)")
    output = check.add_argument_group("output")
    output.add_argument("--format", "--output-format", dest="format", choices=sorted(FORMATTERS), default="text")
    output.add_argument("-o", "--output-file", type=Path, help="write the report to this file instead of stdout")
    output.add_argument("-q", "--quiet", action="store_true",
                        help="print the findings only: no summary, no 'All checks passed!', no warnings")
    output.add_argument("-v", "--verbose", action="store_true",
                        help="also say what the analysis could not follow (a project's jit wrapper) and when the "
                             "findings come from an earlier run's record")
    output.add_argument("--statistics", action="store_true", help="print how many findings each rule has")
    output.add_argument("--show-fixes", action="store_true", help="with --fix, list the fixed findings per file")
    output.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    output.add_argument("--exit-non-zero-on-fix", action="store_true",
                        help="exit 1 when a fix was applied, even if nothing is left")
    fixing = check.add_argument_group("fixes")
    fixing.add_argument("--fix", action="store_true", help="apply safe fixes, then report what is left")
    fixing.add_argument("--fix-only", action="store_true", help="apply fixes and report nothing that is left")
    fixing.add_argument("--unsafe-fixes", action="store_true", help="with --fix or --diff, apply unsafe fixes too")
    fixing.add_argument("--diff", action="store_true", help="print the fixes as a unified diff and write nothing")
    fixing.add_argument("--add-noqa", action="store_true",
                        help="add `# noqa: CODE` to the line of every finding (merged into existing ones)")
    check.add_argument("--stdin-filename", type=Path, metavar="PATH",
                       help="the path of the source read from standard input (for configuration and messages)")
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
    commands.add_parser("server", help="run the language server over stdio (needs the `server` extra: pygls)")
    config = commands.add_parser("config", help="list the settings, or explain one (like `ruff config`)")
    config.add_argument("key", nargs="?", metavar="KEY", help="a setting, e.g. select or runtime.mode")
    config.add_argument("--schema", action="store_true", help="print the JSON Schema of [tool.jaxcheck]")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with `argv` (default: sys.argv[1:]); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.command is None:  # bare `jaxcheck`: help and exit 2, as ruff does
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    if args.command == "rule":
        return _rule(args)
    if args.command == "config":
        return _config(args)
    if args.command == "run":
        return _run(parser, args)
    if args.command == "server":
        return _server()
    return _check(args)


def _server() -> int:
    """`jaxcheck server`: the language server over stdio (imported only here: pygls is optional)."""
    try:
        from jaxcheck.lsp import serve
    except ImportError as exc:
        print(f"jaxcheck: error: `jaxcheck server` needs pygls ({exc}): {install_hint('server')}", file=sys.stderr)
        return EXIT_ERROR
    return serve()


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
        print(f"jaxcheck: error: `jaxcheck run` needs JAX ({exc}): {install_hint('runtime')}", file=sys.stderr)
        return EXIT_ERROR
    try:
        settings = load_configuration(args.config, Path(".")).settings.runtime
    except ConfigError as exc:
        print(f"jaxcheck: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    chosen = (("mode", args.mode), ("nans", args.nans), ("index_checks", args.index_checks))
    overrides = {key: value for key, value in chosen if value is not None}
    settings = settings.model_copy(update=overrides)
    signal.signal(signal.SIGTERM, _INHERITED_SIGTERM)  # the program dies by SIGTERM, as under python
    if args.module is not None:
        return run_program(args.module, True, args.argv, settings)
    return run_program(args.argv[0], False, args.argv[1:], settings)


def _config(args: argparse.Namespace) -> int:
    """`jaxcheck config`: every setting with its description; `config KEY`: one setting in full;
    `config --schema`: the JSON Schema of `[tool.jaxcheck]`."""
    if args.schema:
        print(json.dumps(Settings.model_json_schema(by_alias=True), indent=2))
        return EXIT_CLEAN
    settings = _settings_table()
    if args.key is None:
        width = max(map(len, settings))
        for key, (description, _) in settings.items():
            print(f"{key.ljust(width)}  {description}")
        return EXIT_CLEAN
    if args.key not in settings:
        print(f"jaxcheck: error: unknown setting {args.key!r}{did_you_mean(args.key, list(settings))}", file=sys.stderr)
        return EXIT_ERROR
    description, default = settings[args.key]
    print(f"{args.key}\n\n{description}\n\nDefault value: {default}")
    return EXIT_CLEAN


def _settings_table() -> dict[str, tuple[str, str]]:
    """`key` (runtime keys as `runtime.key`) -> (description, default as JSON)."""
    table: dict[str, tuple[str, str]] = {}
    for prefix, model in (("", Settings), ("runtime.", RuntimeSettings)):
        defaults = model().model_dump(mode="json", by_alias=True)
        for name, info in model.model_fields.items():
            key = info.alias or name
            if model is Settings and key == "runtime":
                continue
            table[prefix + key] = (info.description or "", json.dumps(defaults[key]))
    return table


def _check(args: argparse.Namespace) -> int:
    if args.show_settings is not None:
        return _show_settings(args)
    if isinstance(sys.stdout, io.TextIOWrapper):  # file names that are not valid UTF-8 print as their bytes
        sys.stdout.reconfigure(errors="surrogateescape")
    stdin = [str(path) for path in args.paths] == ["-"]
    if not stdin and "-" in (str(path) for path in args.paths):
        print("jaxcheck: error: `-` (standard input) cannot be combined with other paths", file=sys.stderr)
        return EXIT_ERROR
    missing = [] if stdin else [path for path in args.paths if not os.path.lexists(path)]
    if missing:
        print(f"jaxcheck: error: {missing[0]}: no such file or folder", file=sys.stderr)
        return EXIT_ERROR
    display = str(args.stdin_filename) if args.stdin_filename is not None else "-"
    data = sys.stdin.buffer.read() if stdin else b""
    try:
        start = (args.stdin_filename or Path(".")) if stdin else common_folder(args.paths)
        resolver = _resolver(args, start)
        linter = Linter(resolver.for_path(start), _merged(args.select), _merged(args.ignore) or (),
                        extend_select=_merged(args.extend_select) or (), resolver=resolver)
        cache_dir = None if args.no_cache else args.cache_dir or project_root(start) / DEFAULT_CACHE_DIR
        if stdin and args.force_exclude and args.stdin_filename is not None \
                and linter.force_excluded(args.stdin_filename):
            report = CheckReport()  # as ruff: nothing to report, and `--fix` gives the text back unchanged
        elif stdin:
            report = _check_stdin(linter, display, data)
        else:
            progress = ProgressBar(sys.stderr) if sys.stderr.isatty() else None
            report = linter.check_paths(args.paths, force_exclude=args.force_exclude, jobs=args.jobs,
                                        cache_dir=cache_dir, progress=progress)
    except ConfigError as exc:
        print(f"jaxcheck: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if not stdin and report.files_checked == 0 and not report.errors and not args.quiet:
        print("warning: No Python files found under the given path(s)", file=sys.stderr)
    if report.traced is False and report.files_checked and args.format in HUMAN_FORMATS and not args.quiet \
            and not report.errors and not any(d.code == SYNTAX_ERROR_CODE for d in report.diagnostics):
        report.notes.append(NOTHING_TRACED)  # (a file that could not be read may hold what is traced)
    if args.verbose:
        report.notes.extend(report.details)
    if args.add_noqa:
        return _add_noqa(linter, report, stdin)
    if stdin and (args.fix or args.fix_only or args.diff):
        return _fix_stdin(linter, report, display, data, args)
    if args.diff:
        return _diff(linter, report, args)
    fixed: Counter[tuple[str, str]] = Counter()
    if args.fix or args.fix_only:
        report, fixed = _fix(linter, report, args, cache_dir)
    return _report(report, fixed, args, sys.stdout if args.output_file is None else None,
                   *(_stdin_views(display, data) if stdin else (None, None)))


NOTHING_TRACED = ("note: no function was found traced (by `jax.jit`, `grad`, `vmap`, a `lax` loop or another "
                  "transform), so the rules about traced code had nothing to check; if the code applies them "
                  "through a wrapper of its own, name it in `extra-jit-decorators`")
"""Said once, on stderr, after a run in a human format that found no function traced."""


def _stdin_views(display: str, data: bytes) -> tuple[dict[str, list[str]], dict[str, NotebookIndex]]:
    """The lines of standard input's text for the output formats, and its cell map when it is a notebook."""
    if is_notebook(display):
        try:
            notebook = read_notebook(data)
        except NotebookError:
            return {}, {}
        return {display: notebook.display_lines()}, {display: notebook.index}
    try:
        return {display: source_lines(decode_source(data).text)}, {}
    except SourceDecodeError:
        return {display: [""]}, {}


def _check_stdin(linter: Linter, display: str, data: bytes) -> CheckReport:
    """Check source read from standard input: as the file `--stdin-filename` names when it exists (the
    rest of the project read from disk), otherwise on its own."""
    path = Path(display)
    if display != "-" and path.is_file():
        return linter.check_file_in_project(path, data)
    outcome = linter.check_isolated(display, data, ModuleName(path.stem if display != "-" else "stdin", ""))
    return CheckReport(outcome.diagnostics, outcome.errors, 1)


def _report(report: CheckReport, fixed: Counter[tuple[str, str]], args: argparse.Namespace,
            stream: TextIO | None, sources: dict[str, list[str]] | None,
            notebooks: dict[str, NotebookIndex] | None = None) -> int:
    """Print the findings (or statistics) and notes; the exit code. `sources` and `notebooks` (None:
    read from the files) are the checked text's lines and cell maps."""
    paths = {path for d in report.diagnostics for path in (d.path, *map(d.related_path, d.related))}
    context = OutputContext(
        sources=sources if sources is not None else
        read_sources(d.path for d in report.diagnostics) if args.format in NEEDS_SOURCES else {},
        color=stream is not None and _use_color(stream), unsafe_fixes=args.unsafe_fixes,
        fixed=sum(fixed.values()), summary=not args.quiet, unchecked=len({error.path for error in report.errors}),
        notebooks=notebooks if notebooks is not None else read_notebook_indexes(paths),
    )
    if args.statistics:
        text = _statistics(report.diagnostics, context, args.format)
    elif args.fix_only:
        count = sum(fixed.values())
        text = "" if args.quiet else _fix_listing(fixed) if args.show_fixes and count else \
            f"Fixed {count} error{'s' if count != 1 else ''}.\n" if count else "No errors fixed.\n"
    elif args.format in HUMAN_FORMATS and args.show_fixes and fixed and not args.quiet:
        body = FORMATTERS[args.format](report.diagnostics, replace(context, summary=False))
        text = body + ("\n" if body and not body.endswith("\n\n") else "") + _fix_listing(fixed)
        text += "\n" + summary(report.diagnostics, context)
    else:
        text = FORMATTERS[args.format](report.diagnostics, context)
    if not _write_output(text, stream, args.output_file):
        return EXIT_ERROR
    for line in [*report.notes, *map(str, report.errors)]:
        print(line, file=sys.stderr)
    if report.errors:
        return EXIT_ERROR
    if args.exit_zero:
        return EXIT_CLEAN
    if args.exit_non_zero_on_fix and fixed:
        return EXIT_FINDINGS
    return EXIT_FINDINGS if report.diagnostics and not args.fix_only else EXIT_CLEAN


def _write_output(text: str, stream: TextIO | None, path: Path | None) -> bool:
    if stream is not None:
        stream.write(text)
        return True
    assert path is not None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        print(f"jaxcheck: error: {path}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return False
    return True


def _statistics(diagnostics: Sequence[Diagnostic], context: OutputContext, form: str) -> str:
    """`--statistics`: per code, how many findings and whether they are fixable (ruff's layout);
    a JSON list of `{code, name, count, fixable}` with `--format json`."""
    counts = Counter(d.code for d in diagnostics)
    names = {d.code: d.name for d in diagnostics}
    fixable = {code for code in counts if any(d.code == code and is_fixable(d, context) for d in diagnostics)}
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if form in ("json", "json-lines"):
        items = [{"code": code, "name": names[code], "count": count, "fixable": code in fixable} for code, count in rows]
        return json.dumps(items, indent=2) + "\n"
    if not rows:
        return ""
    count_width = max(len(str(count)) for _, count in rows)
    code_width = max(len(code) for code, _ in rows)
    markers = {code: ("[*] " if code in fixable else "[ ] ") if fixable else "" for code in counts}
    return "".join(f"{str(count).rjust(count_width)}\t{code.ljust(code_width)}\t{markers[code]}{names[code]}\n"
                   for code, count in rows)


def _fix_listing(fixed: Counter[tuple[str, str]]) -> str:
    """`--show-fixes`: `Fixed N errors:` then, per file, `    2 × JAX201 (in-place-array-update)`."""
    total = sum(fixed.values())
    names = {rule.code: rule.name for rule in all_rules()}
    lines = [f"Fixed {total} error{'s' if total != 1 else ''}:"]
    for path in sorted({path for path, _ in fixed}):
        lines.append(f"- {path}:")
        for (where, code), count in sorted(fixed.items()):
            if where == path and count:
                lines.append(f"    {count} \u00d7 {code} ({names.get(code, code)})")
    return "\n".join(lines) + "\n"


def _add_noqa(linter: Linter, report: CheckReport, stdin: bool) -> int:
    """`--add-noqa`: write `# noqa: CODE` for every finding of a fresh check of each file that has
    findings; `Added N noqa directives.` on stderr."""
    from jaxcheck.analyzer.autofix import noqa_file, write_fixed  # loads LibCST: only when fixing

    if stdin:
        print("jaxcheck: error: --add-noqa cannot be used with standard input", file=sys.stderr)
        return EXIT_ERROR
    errors = list(report.errors)
    added = 0
    for path in sorted({d.path for d in report.diagnostics}):
        result = noqa_file(linter, Path(path))
        if result.error is not None:
            errors.append(FileError(path, result.error))
            continue
        if not result.applied:
            continue
        try:
            write_fixed(result)
        except OSError as exc:
            errors.append(FileError(path, f"cannot write: {exc.strerror or exc}"))
            continue
        added += result.applied
    print(f"Added {added} noqa directive{'s' if added != 1 else ''}.", file=sys.stderr)
    for error in errors:
        print(str(error), file=sys.stderr)
    return EXIT_ERROR if errors else EXIT_CLEAN


def _fix_stdin(linter: Linter, report: CheckReport, display: str, data: bytes, args: argparse.Namespace) -> int:
    """`--fix`/`--fix-only`/`--diff` on standard input: the fixed source (or the diff) on stdout, the
    findings that are left on stderr, as ruff does."""
    from jaxcheck.analyzer.autofix import FileFix, encoder, fix_source  # loads LibCST: only when fixing

    try:
        notebook = read_notebook(data) if is_notebook(display) else None
        text = notebook.text if notebook is not None else decode_source(data).text
    except (SourceDecodeError, NotebookError):
        sys.stdout.buffer.write(data)
        return _report(report, Counter(), args, sys.stderr, {}, {})
    encode = encoder(data, notebook)
    try:
        result = replace(fix_source(Path(display), text, report.diagnostics, args.unsafe_fixes,
                                    lambda fixed: _check_stdin(linter, display, encode(fixed)).diagnostics),
                         notebook=notebook)
        if notebook is not None:
            encode(result.after)
    except NotebookError as exc:
        result = FileFix(Path(display), text, text, 0, f"{exc}; file left unchanged", notebook)
    if result.error is not None:
        report.errors.append(FileError(display, result.error))
    if args.diff:
        sys.stdout.write(result.diff())
        for error in report.errors:
            print(str(error), file=sys.stderr)
        if report.errors:
            return EXIT_ERROR
        return EXIT_FINDINGS if result.after != result.before and not args.exit_zero else EXIT_CLEAN
    if notebook is None:
        sys.stdout.write(result.after)
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(encode(result.after) if result.after != result.before else data)
        sys.stdout.buffer.flush()
    remaining = _check_stdin(linter, display, encode(result.after)) \
        if result.after != result.before else report
    remaining.errors[:0] = [e for e in report.errors if e not in remaining.errors]
    fixed = Counter({(display, code): count for code, count in
                     (Counter(d.code for d in report.diagnostics) - Counter(d.code for d in remaining.diagnostics)).items()})
    return _report(remaining, fixed, args, sys.stderr, *_stdin_views(display, encode(result.after)))


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
        profile = Linter(resolver.for_path(path), _merged(args.select), _merged(args.ignore) or (),
                         extend_select=_merged(args.extend_select) or ()).profile_of(resolver.for_path(path))
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


def _diff(linter: Linter, report: CheckReport, args: argparse.Namespace) -> int:
    """Print what the fixes would change; exit 1 when there is a change (0 with --exit-zero), 2 on errors."""
    from jaxcheck.analyzer.autofix import fix_files  # loads LibCST: only when fixing

    results = fix_files(linter, report.diagnostics, args.unsafe_fixes)
    sys.stdout.write("".join(result.diff() for result in results if result.error is None))
    errors = [*report.errors, *(FileError(str(r.path), r.error) for r in results if r.error is not None)]
    for error in errors:
        print(str(error), file=sys.stderr)
    if errors:
        return EXIT_ERROR
    changed = any(result.after != result.before for result in results)
    return EXIT_FINDINGS if changed and not args.exit_zero else EXIT_CLEAN


def _fix(linter: Linter, report: CheckReport, args: argparse.Namespace,
         cache_dir: Path | None) -> tuple[CheckReport, Counter[tuple[str, str]]]:
    """Apply fixes and write the files, then check again: the report of what is left, and how many
    findings of each (path, code) the fixes removed."""
    from jaxcheck.analyzer.autofix import fix_files, write_fixed  # loads LibCST: only when fixing

    errors: list[FileError] = []
    written: set[str] = set()
    for result in fix_files(linter, report.diagnostics, args.unsafe_fixes):
        if result.error is not None:
            errors.append(FileError(str(result.path), result.error))
            continue
        try:
            write_fixed(result)
        except OSError as exc:
            errors.append(FileError(str(result.path), f"cannot write: {exc.strerror or exc}"))
            continue
        if result.applied:
            written.add(str(result.path))
    if not written:
        report.errors.extend(errors)
        return report, Counter()
    remaining = linter.check_paths(args.paths, force_exclude=args.force_exclude, jobs=args.jobs,
                                   cache_dir=cache_dir)
    remaining.errors.extend(errors)
    remaining.notes[:0] = report.notes
    before = Counter((d.path, d.code) for d in report.diagnostics if d.path in written)
    after = Counter((d.path, d.code) for d in remaining.diagnostics if d.path in written)
    return remaining, before - after

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
    written by --fix is finished first (see :mod:`jaxcheck.analyzer.files`). Under `jaxcheck run` the
    signals are the program's, and the program's ending is raised again here, as python would end."""
    signal.signal(signal.SIGTERM, _raise_terminated)
    # Workers stopped mid-task leave their queues' semaphores to multiprocessing's resource tracker,
    # which removes them and would print a UserWarning per run; the tracker inherits these options.
    sys.warnoptions.append("ignore::UserWarning:multiprocessing.resource_tracker")
    try:
        code = main()
    except ProgramEnded as ended:  # `jaxcheck run`: the program's own ending
        program = ended.exception
    except KeyboardInterrupt:
        _abort(EXIT_INTERRUPTED, "interrupted")
    except _Terminated:
        _abort(EXIT_TERMINATED, "terminated")
    except BrokenPipeError:  # `jaxcheck config | head`: the reader left; nothing more to say, no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (as the Python docs advise)
        raise SystemExit(EXIT_ERROR) from None
    else:
        raise SystemExit(code)
    raise_as_python(program)


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
