"""Parsing source into a LibCST module without ever crashing the process.

LibCST's native parser overflows the C stack (a segmentation fault, no exception) on deeply nested
input. Two guards make parsing total:

1. CPython's own parser runs first (about a tenth of LibCST's cost). It rejects the pathological
   inputs CPython cannot compile either: 5,000 nested parentheses with a SyntaxError, 100,000 unary
   minus signs and a 20,000-term sum by running out of memory or recursion depth (catchable).
2. Everything else runs on a worker thread with a large stack (see :func:`run_with_deep_stack`), so
   inputs CPython accepts but LibCST nests deeply (a 10,000-term ``and`` chain) parse too.

The running interpreter's parser is the judge of what is Python: a file it refuses is a syntax error
(JAX001) and a file it accepts is not, with one exception. When the host is older than the grammar
LibCST knows (NEWEST_GRAMMAR), a file using syntax of a newer Python (PEP 695 `type X = ...` and type
parameters, PEP 701 f-strings on 3.10/3.11, `except*` on 3.10, PEP 696 defaults, PEP 758 `except A, B`
and t-strings before 3.14) would be refused for its newer syntax alone. Such a file is parsed with
LibCST (validating), its newer constructs are written in the host's grammar (a type alias as `pass`,
an f-string as `''`, ...: same lines) and the host judges the rest: the file is analysed when that
passes, else the host's error there is the verdict. So newer constructs themselves are judged by
LibCST, all else by the host; errors no Python accepts (a bad escape in a literal: "(value error)",
"(unicode error)"; a non-printable or invalid character; limits) are final at once on any host. Running out of memory
or recursion depth in a parser is no verdict on the code: it is a ParseFailure marked `valid` ("file
too large to check"), an error of the tool rather than JAX001.

Valid code LibCST cannot parse is parsed simplified: the middle literals of runs of more than about 3,000
adjacent string literals blanked out, tabs in indentation written as one space each, a line
continuation into the end of the file or from a line holding nothing else dropped (positions
unchanged), and indentation that a form feed
resets written without it (columns on that line shift); what still fails is a ParseFailure marked `valid`,
an error of the tool rather than a JAX001 finding.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from jaxcheck.analyzer.stack import run_with_deep_stack as run_with_deep_stack  # re-exported: its old home

MAX_EXPRESSION_DEPTH = 2500
"""LibCST parses nested binary operations in quadratic time (4,000 terms: about 5 s); CPython 3.11+
rejects deeper ones itself, but 3.10 accepts them. Only files with a very long line are measured."""
LONG_LINE = 2000
CPYTHON_RECURSION_LIMIT = 1000
"""CPython's default limit: the gate rejects exactly what a default interpreter rejects."""
NEWEST_GRAMMAR = (3, 14)
"""The newest Python grammar LibCST parses: on older hosts a host SyntaxError is not final."""
_FINAL = re.compile(r"too (?:many|complex|deeply|large)|null bytes|\((?:value|unicode) error\)"
                    r"|non-printable character|invalid character")
"""Host parser errors that no Python version accepts (limits, bad escapes in literals, characters that
are no Python): final on any host (LibCST may crash on such input, or accept it)."""
TOO_LARGE = "file too large to check"
"""The message of a file a parser ran out of memory or recursion depth on."""
MAX_BRACKET_DEPTH = 200
"""CPython's tokenizer limit; deeper text is never handed to LibCST without the host's approval."""
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
"""Line breaks as LibCST and CPython count lines."""
_FORM_FEED_INDENT = re.compile(r"^[ \t\f]*\f", re.MULTILINE)
"""Indentation up to its last form feed: CPython restarts counting columns there, LibCST does not."""
_TAB_INDENT = re.compile(r"^[ \t]*\t[ \t]*", re.MULTILINE)
"""Indentation with tabs. CPython accepts it when counting a tab as 1 column and as up to 8 columns
give the same blocks; LibCST also wants each block's indentation to start with the enclosing one's
(`  ` then `\\t    ` fails). One space per character is the count-as-1 reading: same blocks, same
columns."""
_BLANK_CONTINUATION = re.compile(r"^([ \t]*)\\(?=(?:\r\n|\r|\n)\1[^ \t\r\n])", re.MULTILINE)
"""A line that is only a backslash continuation, followed by a line indented the same: the same code
as a blank line there, which LibCST (unlike CPython) wants."""
_TRAILING_CONTINUATION = re.compile(r"\\(?=(?:\r\n|\r|\n)[ \t\f\r\n]*\Z)")
"""A backslash continuing the last line into the end of the file (CPython accepts it before \\r\\n)."""
MAX_STRING_RUN = 1000
"""Runs of adjacent string literals longer than this are shortened for LibCST (it fails near 3,000)."""



@dataclass(frozen=True, slots=True)
class ParseFailure:
    """Why a source text could not be parsed: a one-line message and the 1-based line/0-based column.
    `valid` marks a failure that is no verdict on the code (a limit of the tool): code CPython accepts
    that LibCST cannot parse, or a parser that ran out of memory or recursion depth."""

    message: str
    line: int
    column: int
    valid: bool = False


def parse_source(text: str, host: ast.Module | ParseFailure | None = None) -> cst.Module | ParseFailure:
    """Parse `text`; return the module, or a ParseFailure: JAX001 for what the running interpreter refuses
    (save newer syntax, see the module docstring), `valid` for what a parser could not finish. `host`: the
    result of :func:`host_parse` of `text` when the caller has it."""
    tree = host_parse(text) if host is None else host
    if isinstance(tree, ParseFailure):
        if tree.valid or sys.version_info >= NEWEST_GRAMMAR or _FINAL.search(tree.message) \
                or _bracket_depth(text) > MAX_BRACKET_DEPTH:
            return tree
        newer = _libcst_parse(text, validated=True)  # the code may use syntax newer than this Python's
        if isinstance(newer, ParseFailure):
            return tree
        older = host_parse(_without_newer_syntax(newer, text, sys.version_info[:2]))
        return older if isinstance(older, ParseFailure) else newer
    if too_deep(text, tree):
        return ParseFailure("expression too deeply nested to analyze", 1, 0, valid=True)
    parsed = _libcst_parse(text)
    if isinstance(parsed, ParseFailure) and not parsed.valid:
        simplified = _shorten_string_runs(text)
        simplified = _FORM_FEED_INDENT.sub("", simplified)
        simplified = _TAB_INDENT.sub(lambda match: " " * len(match.group()), simplified)
        simplified = _TRAILING_CONTINUATION.sub(" ", simplified)
        simplified = _BLANK_CONTINUATION.sub(r"\1 ", simplified)
        if simplified != text:
            parsed = _libcst_parse(simplified)
    if isinstance(parsed, ParseFailure) and not parsed.valid:
        return ParseFailure(f"valid Python that LibCST cannot parse ({parsed.message})", parsed.line, parsed.column,
                            valid=True)
    return parsed


def too_deep(text: str, tree: ast.Module) -> bool:
    """Whether `text` (whose host tree is `tree`) nests an expression deeper than LibCST parses in
    reasonable time (see :data:`MAX_EXPRESSION_DEPTH`)."""
    return max(map(len, text.splitlines()), default=0) > LONG_LINE and _depth(tree) > MAX_EXPRESSION_DEPTH


def host_parse(text: str) -> ast.Module | ParseFailure:
    """The running interpreter's parser (as `compile(..., ast.PyCF_ONLY_AST)`), under CPython's default
    recursion limit; running out of memory or recursion depth is a `valid` failure, no verdict."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(CPYTHON_RECURSION_LIMIT)
    try:
        with warnings.catch_warnings():  # SyntaxWarnings about the checked code are not ours to print
            warnings.simplefilter("ignore")
            tree = compile(text, "<unknown>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        line = exc.lineno or 1
        column = max((exc.offset or 1) - 1, 0)
        return ParseFailure(f"syntax error: {exc.msg}", line, column)
    except (RecursionError, MemoryError) as exc:
        reason = "recursion depth" if isinstance(exc, RecursionError) else "memory"
        return ParseFailure(f"{TOO_LARGE} (the Python parser ran out of {reason})", 1, 0, valid=True)
    except ValueError as exc:  # "source code string cannot contain null bytes" before Python 3.12
        return ParseFailure(f"syntax error: {exc}", 1, 0)
    finally:
        sys.setrecursionlimit(limit)
    assert isinstance(tree, ast.Module)
    return tree


def _without_newer_syntax(module: cst.Module, text: str, host: tuple[int, int]) -> str:
    """`text` (parsed as `module`) with each construct of a grammar newer than Python `host`'s written in
    `host`'s grammar (a type alias as `pass`, an f-string as `''`, type parameters removed, ...): the
    same lines, the rest of the text unchanged, so that the host judges all but those constructs."""
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    starts = [0, *(match.end() for match in _LINE_BREAK.finditer(text))]
    edits: list[tuple[int, int, str]] = []
    for node in positions:
        older = _older_form(node, host)
        if older is not None:
            target, skip, length, replacement = older
            where = positions[target]
            start = starts[where.start.line - 1] + where.start.column + skip
            end = start + length if length >= 0 else starts[where.end.line - 1] + where.end.column
            edits.append((start, end, replacement))
    pieces, done = [], 0
    for start, end, replacement in sorted(edits, key=lambda edit: (edit[0], -edit[1])):
        if start >= done:  # not inside a construct already written older
            pieces += [text[done:start], _blanked(text[start:end], replacement)]
            done = end
    return "".join([*pieces, text[done:]])


def _older_form(node: cst.CSTNode, host: tuple[int, int]) -> tuple[cst.CSTNode, int, int, str] | None:
    """When `node` is a construct newer than Python `host`: the node its text is in, the characters to
    skip there, how many to replace (-1: to the node's end) and what to write instead; else None."""
    if host < (3, 11) and isinstance(node, cst.ExceptStarHandler):  # PEP 654: `except*` as `except`
        return node, len("except") + len(node.whitespace_after_except.value), 1, " "
    if host < (3, 11) and isinstance(node, cst.Index) and node.star:  # PEP 646: `x[*a]`
        return node, 0, 1, " "
    if host < (3, 11) and isinstance(node, cst.Annotation) and isinstance(node.annotation, cst.StarredElement) \
            and not node.annotation.lpar:  # PEP 646: `*args: *Ts`
        return node.annotation, 0, 1, " "
    if host < (3, 12) and isinstance(node, cst.TypeAlias):  # PEP 695
        return node, 0, -1, "pass"
    if host < (3, 12) and isinstance(node, cst.TypeParameters) \
            or host < (3, 13) and isinstance(node, cst.TypeParameters) \
            and any(param.default is not None for param in node.params):  # PEP 695, 696
        return node, 0, -1, ""
    if host < (3, 12) and isinstance(node, cst.FormattedString) \
            or host < (3, 14) and isinstance(node, cst.TemplatedString):  # PEP 701, 750
        return node, 0, -1, "''"
    if host < (3, 14) and isinstance(node, (cst.ExceptHandler, cst.ExceptStarHandler)) \
            and isinstance(node.type, cst.Tuple) and not node.type.lpar:  # PEP 758: `except A, B`
        return node.type, 0, -1, "E"
    return None


def _blanked(segment: str, replacement: str) -> str:
    """`segment` overwritten by `replacement` and then spaces, its line breaks kept and continued with a
    backslash (the replacement is shorter than the segment's first line)."""
    chars = [char if char in "\r\n" else " " for char in segment]
    chars[:len(replacement)] = replacement
    for match in _LINE_BREAK.finditer(segment):
        before = match.start() - 1
        if before >= len(replacement) and chars[before] == " ":
            chars[before] = "\\"
        else:
            chars[match.start()] = "\\" + chars[match.start()]
    return "".join(chars)


def _bracket_depth(text: str) -> int:
    """The deepest nesting of brackets in `text`, counting those in strings and comments too (an
    over-estimate is safe: it only keeps a host SyntaxError final)."""
    depth = deepest = 0
    for match in re.finditer(r"[][(){}]", text):
        depth = depth + 1 if match.group() in "([{" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    return deepest


def _libcst_parse(text: str, validated: bool = False) -> cst.Module | ParseFailure:
    """LibCST's tree of `text`, its nodes `validated` as LibCST does by default (for text the host parser
    rejected: validation is then what tells some invalid code), else not (see
    :func:`_parser_nodes_unvalidated`)."""
    try:
        if validated:
            return cst.parse_module(text)
        with _parser_nodes_unvalidated():
            return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        return ParseFailure(f"syntax error: {exc.message}", exc.raw_line, exc.raw_column)
    except cst.CSTValidationError as exc:  # parsed, but a node is invalid (a name that is no identifier)
        return ParseFailure(f"syntax error: {exc}", 1, 0)
    except (RecursionError, MemoryError) as exc:
        reason = "recursion depth" if isinstance(exc, RecursionError) else "memory"
        return ParseFailure(f"{TOO_LARGE} (LibCST ran out of {reason})", 1, 0, valid=True)


@contextmanager
def _parser_nodes_unvalidated() -> Iterator[None]:
    """Within: LibCST nodes are built without their validation (`CSTNode.__post_init__`, about a sixth
    of a parse). For text the host parser accepted, the parser's nodes are valid by construction
    (LibCST notes the cost where it validates); nodes jaxcheck builds (fixes) are validated as ever,
    outside. Exiting always restores LibCST's own validation, whatever other threads did."""
    if _VALIDATE is None:  # another LibCST: nothing to skip
        yield
        return
    setattr(cst.CSTNode, "__post_init__", _unvalidated)
    try:
        yield
    finally:
        setattr(cst.CSTNode, "__post_init__", _VALIDATE)


def _unvalidated(node: cst.CSTNode) -> None:
    """A node's `__post_init__` that skips validation."""


_VALIDATE = cst.CSTNode.__dict__.get("__post_init__")
"""LibCST's validating `__post_init__`."""


def _shorten_string_runs(text: str) -> str:
    """`text` with the middle literals of each run of more than MAX_STRING_RUN adjacent string literals
    replaced by spaces (line breaks kept), so every other position is unchanged. Only for text the
    host parser accepted, so the host tokenizer reads it."""
    lines = io.StringIO(text).readlines()  # the lines tokenize numbers
    runs: list[list[tokenize.TokenInfo]] = [[]]
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING:
                runs[-1].append(token)
            elif token.type not in (tokenize.NL, tokenize.COMMENT):
                runs.append([])
    except (tokenize.TokenError, SyntaxError):
        return text
    for run in runs:
        for token in run[1:-1] if len(run) > MAX_STRING_RUN else ():
            (start_line, start_column), (end_line, end_column) = token.start, token.end
            for number in range(start_line, end_line + 1):
                line = lines[number - 1]
                first = start_column if number == start_line else 0
                last = end_column if number == end_line else len(line.rstrip("\r\n"))
                lines[number - 1] = line[:first] + " " * (last - first) + line[last:]
    return "".join(lines)


def _depth(tree: ast.AST) -> int:
    """The nesting depth of `tree` (iteratively: the tree may be deeper than the recursion limit)."""
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest
