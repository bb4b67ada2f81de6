"""Fuzzing jaxcheck: programs generated from Python's grammar (hypothesmith), the same programs wrapped
in a jitted function whose names are traced, and mutations of real files. Shared by the bounded property
tests (`test_fuzz.py`) and the long run (`bench/fuzz.py`).

The contract checked on every program: the engine with every rule enabled raises nothing and reports no
error, only findings or JAX001, each inside the file; and the safe fixes of those findings give code
that parses, that a second round does not change, and that shows none of the fixed findings again.
"""

from __future__ import annotations

import ast
import os
import textwrap
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
