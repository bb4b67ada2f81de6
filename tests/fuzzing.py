"""Fuzzing jaxcheck: programs generated from Python's grammar (hypothesmith), the same programs wrapped
in a jitted function whose names are traced, and mutations of real files. Shared by the bounded property
tests (`test_fuzz.py`) and the long run (`bench/fuzz.py`).

The contract checked on every program: the engine with every rule enabled raises nothing and reports no
error, only findings or JAX001, each inside the file; and the safe fixes of those findings give code
that parses, that a second round does not change, and that shows none of the fixed findings again.

Through the command line (:func:`check_through_cli`, programs written as files and fixed in batches by
`python -m jaxcheck check --fix`): no traceback, only one-line file errors that are not internal errors,
exit code 0, 1 or 2 (2 only with a file error), no file checked and fixed twice in over 10 s, every
changed file compiles, and a second `--fix` changes nothing.
"""

from __future__ import annotations

import ast
import difflib
import functools
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

from jaxcheck.analyzer.config import Configuration, Settings
from jaxcheck.analyzer.diagnostics import Diagnostic
from jaxcheck.analyzer.engine import Linter, acyclic_allocations
from jaxcheck.analyzer.fixes import apply_fixes
from jaxcheck.analyzer.parsing import ParseFailure, parse_source, run_with_deep_stack
from jaxcheck.analyzer.project import ModuleName
from jaxcheck.analyzer.registry import all_rules
from jaxcheck.analyzer.source import SourceDecodeError, decode_source, source_lines

REPOSITORY = Path(__file__).resolve().parent.parent
LINTER = Linter(Configuration(settings=Settings(select=[rule.code for rule in all_rules()])))
MODULE = ModuleName("fuzzed", "")
TRACED_PRELUDE = "import jax\nimport jax.numpy as jnp\nfrom jax import lax, random\n\n\n@jax.jit\ndef fuzzed(x, key, *args):\n"


class ContractViolation(AssertionError):
    """jaxcheck broke its contract on one program."""


def corpus_files() -> list[Path]:
    """Real files to mutate: the corpus (`$JAXCHECK_CORPUS`, else `.corpus/` as
    `../shared/corpus/fetch.sh` makes it) when fetched, and always this repository's own package and
    examples."""
    corpus = Path(os.environ.get("JAXCHECK_CORPUS", REPOSITORY / ".corpus"))
    files = sorted(corpus.rglob("*.py")) if corpus.is_dir() else []
    return files + sorted((REPOSITORY / "jaxcheck").rglob("*.py")) + sorted((REPOSITORY / "examples").rglob("*.py"))


def traced(program: str) -> str:
    """`program` as the body of a jitted function, with every name it loads bound to a traced value
    first (so the tracing rules have something to find)."""
    try:
        names = sorted({node.id for node in ast.walk(ast.parse(program)) if isinstance(node, ast.Name)})
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        names = []
    bindings = "".join(f"{name} = x\n" for name in names if name not in ("x", "key", "args"))
    return TRACED_PRELUDE + textwrap.indent(bindings + program + "\nreturn x\n", "    ")


@st.composite
def mutated(draw: st.DrawFn, files: list[Path]) -> str:
    """A real file with a few lines deleted, indentation broken, tokens swapped, brackets unbalanced
    or characters inserted."""
    text = draw(st.sampled_from(files)).read_text(encoding="utf-8", errors="surrogateescape")
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        index = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["delete", "indent", "dedent", "swap", "bracket", "insert", "duplicate"]))
        line = lines[index]
        if kind == "delete":
            del lines[index]
        elif kind == "indent":
            lines[index] = draw(st.sampled_from([" ", "\t", "   ", "        "])) + line
        elif kind == "dedent":
            lines[index] = line.lstrip()
        elif kind == "swap":
            words = line.split(" ")
            if len(words) > 1:
                a, b = draw(st.integers(0, len(words) - 1)), draw(st.integers(0, len(words) - 1))
                words[a], words[b] = words[b], words[a]
                lines[index] = " ".join(words)
        elif kind == "bracket":
            position = draw(st.integers(0, len(line)))
            lines[index] = line[:position] + draw(st.sampled_from("()[]{}:'\"")) + line[position:]
        elif kind == "insert":
            position = draw(st.integers(0, len(line)))
            lines[index] = line[:position] + draw(st.text(max_size=5)) + line[position:]
        else:
            lines.insert(index, line)
    return "\n".join(lines)


def check_program(text: str) -> list[Diagnostic]:
    """Run every rule over `text`; raise ContractViolation (or let an exception through) when the
    contract above does not hold. Returns the findings."""
    data = text.encode("utf-8", "surrogateescape")
    with acyclic_allocations():
        outcome = run_with_deep_stack(lambda: LINTER.check_file("fuzzed.py", data, MODULE))
    if outcome.errors:
        raise ContractViolation(f"file error: {outcome.errors}")
    try:
        lines = source_lines(decode_source(data).text)
    except SourceDecodeError:
        lines = None
    for diagnostic in outcome.diagnostics:
        _check_position(diagnostic, lines)
    if lines is not None and not any(d.code == "JAX001" for d in outcome.diagnostics):
        _check_fixes(decode_source(data).text, outcome.diagnostics)
    return outcome.diagnostics


def _check_position(diagnostic: Diagnostic, lines: list[str] | None) -> None:
    start, end = diagnostic.range.start, diagnostic.range.end
    if lines is None:  # an undecodable file: JAX001 at the line of the bad byte
        if diagnostic.code != "JAX001" or start.line < 1:
            raise ContractViolation(f"bad finding in an undecodable file: {diagnostic}")
        return
    if not (1 <= start.line <= len(lines) and 0 <= start.column <= len(lines[start.line - 1])):
        raise ContractViolation(f"start outside the file: {diagnostic}")
    if not (start <= end and end.line <= len(lines) and end.column <= len(lines[end.line - 1])):
        raise ContractViolation(f"end outside the file: {diagnostic}")


def _check_fixes(text: str, diagnostics: list[Diagnostic]) -> None:
    fixes = [d.fix for d in diagnostics if d.fix is not None and d.fix.applicability == "safe"]
    if not fixes:
        return
    fixed = apply_fixes(text, fixes)
    if isinstance(run_with_deep_stack(lambda: parse_source(fixed)), ParseFailure):
        return  # the CLI refuses such a fix and leaves the file unchanged (autofix._fix_file)
    with acyclic_allocations():
        after = run_with_deep_stack(lambda: LINTER.check_file("fuzzed.py", fixed.encode(), MODULE)).diagnostics
    fixed_codes = {d.code for d in diagnostics if d.fix is not None and d.fix.applicability == "safe"}
    new = {(d.code, d.message) for d in after} - {(d.code, d.message) for d in diagnostics}
    if any(code in fixed_codes for code, _ in new) or any(code == "JAX001" for code, _ in new):
        raise ContractViolation(f"fixing gave new findings: {sorted(new)}")


def grammar_programs() -> st.SearchStrategy[str]:
    """Programs generated from Python's grammar (hypothesmith, imported only when fuzzing)."""
    import hypothesmith

    return hypothesmith.from_grammar()


FIX_BAITS = (
    "x.at[0].set(1)",
    "_tree = jax.tree_map(abs, x)",
    "from jax import tree_map",
    "_zeros = jnp.zeros(3); _zeros[0] = 1",
    "_kept = 1  # noqa: JAX101",
)
"""Statements with safe fixes under `traced` (JAX202, JAX601, JAX201, JAX002): grammar-generated code
alone has almost none, so `--fix` would rarely write anything."""


@st.composite
def with_fix_baits(draw: st.DrawFn, program: str) -> str:
    """`program` under jit (:func:`traced`) with one to three of `FIX_BAITS` inserted at drawn lines of
    the function body, each indented as the line it precedes."""
    lines = traced(program).split("\n")
    body = TRACED_PRELUDE.count("\n")
    for _ in range(draw(st.integers(1, 3))):
        index = draw(st.integers(body, len(lines) - 1))
        line = lines[index]
        indent = line[: len(line) - len(line.lstrip(" \t"))] or "    "
        lines.insert(index, indent + draw(st.sampled_from(FIX_BAITS)))
    return "\n".join(lines)


CLI = (sys.executable, "-m", "jaxcheck", "check", "--no-cache", "--isolated", "--fix", "--select", "ALL", "-j", "1")
"""The command each batch goes through (its folder appended), run from this checkout."""
HANG_SECONDS = 10.0
"""A run on one file that takes longer than this beyond start-up hangs; a batch's run that does has
its files run one at a time."""
KILL_SECONDS = 60.0
"""One file's runs are stopped after this long; a batch's after this plus 2 s per file."""
INTERNAL_ERRORS = ("internal error:", "rule JAX")
"""File errors that are jaxcheck failing (`rule JAX123 (name) failed: ...`), not the file."""


@dataclass(frozen=True, slots=True)
class CliFailure:
    """A broken promise: `name` is the program's (file stem), or '' when only the whole batch shows it."""

    name: str
    kind: str
    detail: str


@dataclass(slots=True)
class CliOutcome:
    """What a batch showed: failures, the one-line file errors and notes by their first words (not
    failures), and its time."""

    failures: list[CliFailure] = field(default_factory=list)
    messages: Counter[str] = field(default_factory=Counter)
    fixed: int = 0
    """Files the first `--fix` changed."""
    seconds: float = 0.0
    singled_out: bool = False
    """True when the batch was slow or failed as a whole, and each file was run on its own."""


@dataclass(frozen=True, slots=True)
class _Run:
    code: int | None  # None: stopped at the time limit
    stderr: str
    seconds: float


def _cli(folder: Path, timeout: float) -> _Run:
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    started = time.perf_counter()
    try:
        done = subprocess.run([*CLI, str(folder)], cwd=REPOSITORY, env=environment, capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return _Run(None, "", time.perf_counter() - started)
    return _Run(done.returncode, done.stderr.decode(errors="replace"), time.perf_counter() - started)


@functools.cache
def startup_seconds() -> float:
    """The time the command takes on one empty file (interpreter and imports), measured once."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "empty.py").write_bytes(b"")
        return min(_cli(Path(folder), KILL_SECONDS).seconds for _ in range(3))


def compiles(data: bytes) -> bool:
    """Whether the running Python compiles `data` (a module's bytes, in its declared encoding)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(data, "<fuzzed>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True


def _run_failures(run: _Run, names: set[str], outcome: CliOutcome) -> list[CliFailure]:
    """The failures one run's stderr and exit code show; one-line file errors and notes are counted in
    `outcome.messages`."""
    if run.code is None:
        return [CliFailure("", "hang", f"stopped after {run.seconds:.0f} s")]
    if "Traceback (most recent call last)" in run.stderr:
        return [CliFailure("", "traceback", run.stderr[-4000:])]
    failures, errors = [], 0
    for line in run.stderr.splitlines():
        path, separator, message = line.partition(": error: ")
        name = Path(path).stem
        if line.startswith("note: "):
            outcome.messages[" ".join(line.split()[2:6])] += 1
        elif not separator or name not in names:
            failures.append(CliFailure("", "stderr", line))
        else:
            errors += 1
            if message.startswith(INTERNAL_ERRORS):
                failures.append(CliFailure(name, "internal-error", message))
            else:
                outcome.messages[" ".join(message.split()[:4])] += 1
    if run.code not in (0, 1, 2) or (run.code == 2) != (errors > 0):
        failures.append(CliFailure("", "exit", f"exit code {run.code} with {errors} file errors"))
    return failures


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def check_through_cli(programs: dict[str, str], folder: Path) -> CliOutcome:
    """Write `programs` (file stem to text) into `folder` (emptied of files first), run :data:`CLI` on
    it twice, and return what broke the contract above. A batch that is slow (a run over
    :data:`HANG_SECONDS` beyond start-up) or fails as a whole is run again one file at a time to find
    the culprit."""
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.iterdir():
        stale.unlink()
    paths = {name: folder / f"{name}.py" for name in programs}
    for name, text in programs.items():
        paths[name].write_text(text, encoding="utf-8", errors="surrogateescape", newline="")
    originals = {name: path.read_bytes() for name, path in paths.items()}
    single = len(programs) == 1
    timeout = KILL_SECONDS if single else KILL_SECONDS + 2 * len(programs)
    outcome = CliOutcome()
    runs = [_cli(folder, timeout)]
    fixed = {name: _read(path) for name, path in paths.items()}
    if runs[0].code is not None:
        runs.append(_cli(folder, timeout))
    again = {name: _read(path) for name, path in paths.items()}
    outcome.seconds = sum(run.seconds for run in runs)
    failures = [failure for run in runs for failure in _run_failures(run, set(programs), outcome)]
    slowest = max(run.seconds for run in runs) - startup_seconds()  # a stopped run is already a failure
    for name in programs:
        failures += _file_failures(name, originals[name], fixed[name], again[name])
    outcome.fixed = sum(fixed[name] != originals[name] for name in programs)
    if single:
        if slowest > HANG_SECONDS and runs[-1].code is not None:
            failures.append(CliFailure("", "hang", f"a run took {slowest:.1f} s beyond start-up"))
        outcome.failures = [CliFailure(failure.name or next(iter(programs)), failure.kind, failure.detail)
                            for failure in failures]
        return outcome
    if slowest > HANG_SECONDS or any(not failure.name for failure in failures):
        return _one_by_one(programs, folder, failures, outcome.seconds)
    outcome.failures = failures
    return outcome


def _file_failures(name: str, original: bytes, fixed: bytes | None, again: bytes | None) -> list[CliFailure]:
    if fixed is None or again is None:
        return [CliFailure(name, "file-lost", "the file is gone after --fix")]
    failures = []
    if fixed != original and not compiles(fixed):
        was = "compiled" if compiles(original) else "did not compile either"
        failures.append(CliFailure(name, "unparsable-fix", f"the fixed file does not compile (the original {was})"))
    if again != fixed:
        diff = difflib.unified_diff(fixed.decode(errors="replace").splitlines(), again.decode(errors="replace").splitlines(),
                                    "after the first --fix", "after the second", lineterm="")
        failures.append(CliFailure(name, "not-idempotent", "\n".join(diff)[:4000]))
    return failures


def _one_by_one(programs: dict[str, str], folder: Path, batch: list[CliFailure], seconds: float) -> CliOutcome:
    """Run each program on its own. The batch's named failures are kept, and so are its unnamed ones
    of a kind no single file shows (found only among other files: '' names the batch)."""
    outcome = CliOutcome(seconds=seconds, singled_out=True)
    for name, text in programs.items():
        alone = check_through_cli({name: text}, folder)
        outcome.failures += alone.failures
        outcome.messages += alone.messages
        outcome.fixed += alone.fixed
        outcome.seconds += alone.seconds
    found = {(failure.name, failure.kind) for failure in outcome.failures}
    kinds = {failure.kind for failure in outcome.failures}
    outcome.failures += [failure for failure in batch if (failure.name, failure.kind) not in found
                         and (failure.name or failure.kind not in kinds)]
    return outcome
