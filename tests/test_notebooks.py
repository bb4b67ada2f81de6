"""Jupyter notebooks: the same findings as the same code in a `.py` file, positions in cells, IPython
syntax, fixes written back byte for byte, bad notebooks, stdin, noqa and per-file-ignores."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import sys
from pathlib import Path

import pytest

from jaxcheck.analyzer.config import Settings
from jaxcheck.analyzer.diagnostics import Diagnostic, Edit, Fix, Position, Range, RelatedLocation, display_column
from jaxcheck.analyzer.engine import check_source
from jaxcheck.analyzer.notebooks import Notebook, read_notebook
from jaxcheck.analyzer.output import FORMATTERS, OutputContext
from jaxcheck.analyzer.registry import all_rules, selected_codes
from jaxcheck.cli import main

SNAPSHOTS = Path(__file__).parent / "snapshots"
ROOT = Path(__file__).resolve().parent.parent
STALE = [
    "import jax\nimport jax.numpy as jnp\nscale = 2.0",
    "@jax.jit\ndef f(x):\n    return x * scale\n",
    "y = f(jnp.ones(3))\n",
    "scale = 3.0\n",
    "print(f(jnp.ones(3)))\n",
]
MUTATION = ["import jax.numpy as jnp\n", "x = jnp.zeros(3)\nx[0] = 1.0\n"]


def notebook(*sources: str | list[str], counts: list[int | None] | None = None, markdown: bool = True,
             indent: int = 1, final_newline: bool = True, newline: str = "\n") -> str:
    """An nbformat 4 notebook (as Jupyter writes it) with a markdown cell first and the code cells given;
    outputs, metadata and ids on every cell, so a round trip that loses them shows."""
    cells: list[dict[str, object]] = [{"cell_type": "markdown", "id": "md", "metadata": {"tags": ["intro"]},
                                       "source": ["# Demo ünïcode\n"]}] if markdown else []
    for number, source in enumerate(sources):
        lines = source if isinstance(source, list) else re.findall(r"[^\n]*\n|[^\n]+", source)
        cells.append({"cell_type": "code", "execution_count": (counts or [None] * len(sources))[number],
                      "id": f"c{number}", "metadata": {"scrolled": True},
                      "outputs": [{"name": "stdout", "output_type": "stream", "text": ["1.0e-05 é\n"]}],
                      "source": lines})
    document = {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "name": "python3"},
                                             "language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    text = json.dumps(document, indent=indent, ensure_ascii=False) + ("\n" if final_newline else "")
    return text.replace("\n", newline)  # (a line break inside a string is written `\n`)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------- same findings as a .py file
def _split(code: str) -> list[str]:
    """`code` cut into cells at top-level statements (decorators stay with their definition)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return [code]
    starts = sorted({min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
                     for node in tree.body} - {1})
    lines = code.splitlines(keepends=True)
    bounds = [1, *starts, len(lines) + 1]
    return ["".join(lines[a - 1 : b - 1]) for a, b in zip(bounds, bounds[1:]) if a < b]


def _as_cells(found: list[Diagnostic], cells: list[str]) -> set[tuple[object, ...]]:
    """Findings of the concatenated `.py` as the notebook shows them (the markdown cell is cell 1)."""
    starts = [1]
    for cell in cells:
        starts.append(starts[-1] + len(cell.splitlines()))

    def place(line: int) -> tuple[int, int]:
        slot = max(i for i, start in enumerate(starts[:-1]) if start <= line)
        return slot + 2, line - starts[slot] + 1

    def named(match: re.Match[str]) -> str:
        cell, line = place(int(match.group(1)))
        return f"line {line} of cell {cell}"

    def at(position: Position) -> tuple[int, int, int]:
        return (*place(position.line), display_column(position.column))

    return {(d.code, *at(d.range.start), *at(d.range.end), re.sub(r"\bline (\d+)\b", named, d.message),
             tuple((*at(n.range.start), re.sub(r"\bline (\d+)\b", named, n.message)) for n in d.related))
            for d in found}


def _in_notebook(found: list[Diagnostic], book: Notebook) -> set[tuple[object, ...]]:
    context = OutputContext(notebooks={"demo.ipynb": book.index})

    def at(position: Position) -> tuple[object, int, int]:
        place = context.place("demo.ipynb", position)
        return place.cell, place.line, display_column(place.column)

    return {(d.code, *at(d.range.start), *at(d.range.end), d.message,
             tuple((*at(n.range.start), n.message) for n in d.related)) for d in found}


def _invalid_examples():
    for rule in all_rules():
        for number, example in enumerate(rule.INVALID):
            if isinstance(example.code, str):
                yield pytest.param(rule, example.code, id=f"{rule.code}-invalid-{number}")


@pytest.mark.parametrize(("rule", "code"), list(_invalid_examples()))
def test_invalid_examples_split_across_cells_give_the_same_findings(rule, code):
    settings = Settings(select=tuple(sorted(selected_codes(None, ()) | {rule.code})))
    cells = _split(code if code.endswith("\n") else code + "\n")
    as_python = check_source("".join(cells), "demo.py", settings=settings, module="demo")
    data = notebook(*cells).encode()
    as_notebook = check_source(data, "demo.ipynb", settings=settings, module="demo")
    assert not as_notebook.errors
    expected = _as_cells(as_python.diagnostics, cells)
    assert any(item[0] == rule.code for item in expected)
    assert _in_notebook(as_notebook.diagnostics, read_notebook(data)) == expected


def test_a_global_changed_in_a_later_cell_is_jax101_with_notes_in_both_cells():
    data = notebook(*STALE).encode()
    [finding] = [d for d in check_source(data, "demo.ipynb").diagnostics if d.code == "JAX101"]
    context = OutputContext(notebooks={"demo.ipynb": read_notebook(data).index})
    assert context.label(finding.path, finding.range.start) == "demo.ipynb:cell 3:3:16"
    assert "reassigned at line 1 of cell 5" in finding.message
    notes = {context.label(finding.path, note.range.start).split(":")[1] for note in finding.related}
    assert {"cell 3", "cell 4", "cell 5"} <= notes


def test_cells_run_in_another_order_are_noted_once():
    in_order = notebook(*STALE, counts=[1, 2, 3, 4, 5]).encode()
    assert not any("execution counts" in note.message
                   for d in check_source(in_order, "demo.ipynb").diagnostics for note in d.related)
    shuffled = notebook(*STALE, counts=[1, 2, 9, 4, 5]).encode()
    [finding] = [d for d in check_source(shuffled, "demo.ipynb").diagnostics if d.code == "JAX101"]
    order = [note.message for note in finding.related if "execution counts" in note.message]
    assert order == ["the saved execution counts show these cells last ran in another order: "
                     "cell 3 [2], cell 5 [4], cell 4 [9]"]


# --------------------------------------------------------------------------------- IPython syntax
def test_magics_are_understood_and_positions_stay_exact():
    cells = [
        "import jax\nimport jax.numpy as jnp\n!pip install -q jax\n%matplotlib inline\n%env XLA_FLAGS=--x\n",
        "jnp.ones?\n?jnp.zeros\nfiles = !ls\nif True:\n    %timeit -n 10 jnp.ones(3)\nx = jnp.zeros(3)\nx[0] = 1\n",
        "%%bash\nfor i in 1 2; do echo $i; done\n",
        "%%writefile out.py\nthis is not = python(\n",
        '"""a docstring\n%not a magic\n"""\n',
    ]
    data = notebook(*cells).encode()
    report = check_source(data, "demo.ipynb", settings=Settings(extend_select=("JAX902",)))
    assert not report.errors and not any(d.code == "JAX001" for d in report.diagnostics)
    context = OutputContext(notebooks={"demo.ipynb": read_notebook(data).index})
    labels = {(d.code, context.label(d.path, d.range.start)) for d in report.diagnostics}
    assert ("JAX201", "demo.ipynb:cell 3:7:1") in labels
    assert ("JAX902", "demo.ipynb:cell 3:5:19") in labels  # `jnp.ones(3)` in `    %timeit -n 10 jnp.ones(3)`


def test_a_cell_magic_body_is_python_unless_the_magic_says_otherwise():
    cells = ["import jax.numpy as jnp\n", "%%autovisualize\nx = jnp.zeros(3)\nx[0] = 1\n",
             "%%writefile step.py\ny = jnp.zeros(3)\ny[0] = 1\n", "%%someextension\nnot python at all\n"]
    for extra, expected in [((), ("JAX201", "demo.ipynb:cell 3:3:1")),
                            (("%%capture\ndef broken(:\n",), ("JAX001", "demo.ipynb:cell 6:2:12"))]:
        data = notebook(*cells, *extra).encode()
        context = OutputContext(notebooks={"demo.ipynb": read_notebook(data).index})
        found = [(d.code, context.label(d.path, d.range.start)) for d in check_source(data, "demo.ipynb").diagnostics]
        assert found == [expected]


def test_a_timed_cell_without_block_until_ready_is_jax902():
    cells = ["import jax\n\n@jax.jit\ndef f(x):\n    return x * 2\n", "%%time\ny = f(1.0)\n",
             "%%timeit\ny = f(1.0).block_until_ready()\n", "%time f(2.0)\n"]
    data = notebook(*cells).encode()
    report = check_source(data, "demo.ipynb", settings=Settings(extend_select=("JAX902",)))
    context = OutputContext(notebooks={"demo.ipynb": read_notebook(data).index})
    found = sorted(context.label(d.path, d.range.start) for d in report.diagnostics if d.code == "JAX902")
    assert found == ["demo.ipynb:cell 3:2:5", "demo.ipynb:cell 5:1:7"]
    assert all(d.fix is None for d in report.diagnostics if "cell 5" in d.message or d.range.start.line > 12)


def test_time_and_timeit_of_statements_and_assigned_are_jax902_at_the_code(tmp_path: Path, capsys):
    timed = ["%time y = f(x)  # slow?\n", "y = %time f(x)\n", "t = %timeit -o -n 3 f(x)\n", "%timeit y = f(x)\n",
             "if True:\n    %time z = f(x); w = f(z)\n", "%%time\ny = f(x)\n"]
    waited = ["%time print(f(x))\n", "%time y = f(x).block_until_ready()\n", "%time for i in range(3): f(x)\n",
              "%time\n", "y = %time z = f(x)\n"]
    path = tmp_path / "demo.ipynb"
    path.write_text(notebook("import jax\n\n@jax.jit\ndef f(x):\n    return x * 2\n", *timed, *waited))
    data = path.read_bytes()
    report = check_source(data, "demo.ipynb", settings=Settings(extend_select=("JAX902",)))
    assert not report.errors and not any(d.code == "JAX001" for d in report.diagnostics)
    context = OutputContext(notebooks={"demo.ipynb": read_notebook(data).index})
    said = re.compile(r"read on line \d+ of cell \d+|`timeit` discards")
    found = [(context.label(d.path, d.range.start), said.findall(d.message))
             for d in report.diagnostics if d.code == "JAX902"]
    # the clock of a `%%time` cell is read by its magic line, not on a line past the cell's end
    assert found == [("demo.ipynb:cell 3:1:11", ["read on line 1 of cell 3"]),
                     ("demo.ipynb:cell 4:1:11", ["read on line 1 of cell 4"]),
                     ("demo.ipynb:cell 5:1:21", ["`timeit` discards"]),
                     ("demo.ipynb:cell 6:1:13", ["`timeit` discards"]),
                     ("demo.ipynb:cell 7:2:25", ["read on line 2 of cell 7"]),
                     ("demo.ipynb:cell 8:2:5", ["read on line 1 of cell 8"])]
    assert all(d.fix is None for d in report.diagnostics if context.place(d.path, d.range.start).cell != 8)
    code, _, err = run(capsys, "check", "--no-cache", "--extend-select", "JAX902", "--add-noqa", str(path))
    assert code == 0 and err == "Added 6 noqa directives.\n"
    cells = [cell["source"] for cell in json.loads(path.read_text())["cells"][2:8]]
    assert cells == [["%time y = f(x)  # slow?  # noqa: JAX902\n"], ["y = %time f(x)  # noqa: JAX902\n"],
                     ["t = %timeit -o -n 3 f(x)  # noqa: JAX902\n"], ["%timeit y = f(x)  # noqa: JAX902\n"],
                     ["if True:\n", "    %time z = f(x); w = f(z)  # noqa: JAX902\n"],
                     ["%%time\n", "y = f(x)  # noqa: JAX902\n"]]


def test_timeit_binds_and_consumes_nothing_in_the_session_and_time_does():
    """`%timeit x = jax.random.normal(key)` runs in timeit's own scope; `%time` runs in the session's."""
    cells = ["import jax\nkey = jax.random.key(0)\n", "%timeit x = jax.random.normal(key, (3,))\n",
             "%timeit -n 3 jax.random.normal(key, (3,))\n", "y = jax.random.normal(key, (3,))\n"]
    assert not check_source(notebook(*cells).encode(), "demo.ipynb").diagnostics
    data = notebook(*cells[:1], "%time x = jax.random.normal(key, (3,))\n", *cells[3:]).encode()
    context = OutputContext(notebooks={"demo.ipynb": read_notebook(data).index})
    assert [(d.code, context.label(d.path, d.range.start)) for d in check_source(data, "demo.ipynb").diagnostics] \
        == [("JAX401", "demo.ipynb:cell 4:1:5")]


def test_fixes_never_touch_magic_lines(tmp_path: Path, capsys):
    path = tmp_path / "demo.ipynb"
    cells = ["import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return x\n",
             "%timeit f(jnp.ones(3))\nx = jnp.zeros(3)\nx[0] = 1\n"]
    path.write_text(notebook(*cells))
    code, _, err = run(capsys, "check", "--no-cache", "--fix", "--unsafe-fixes", "--extend-select", "JAX902",
                       str(path))
    fixed = json.loads(path.read_text())["cells"][2]["source"]
    assert fixed == ["%timeit f(jnp.ones(3))\n", "x = jnp.zeros(3)\n", "x = x.at[0].set(1)\n"], err
    assert code == 1  # the %timeit finding stays: its fix would rewrite the magic


# ------------------------------------------------------------------------------- fixes written back
def _outside_sources(data: bytes) -> list[str]:
    """The notebook's JSON text with every code cell's `source` value cut out."""
    book = read_notebook(data)
    raw, pieces, cursor = data.decode("utf-8-sig"), [], 0
    for cell in book.cells:
        pieces.append(raw[cursor : cell.span[0]])
        cursor = cell.span[1]
    return [*pieces, raw[cursor:]]


@pytest.mark.parametrize("layout", [{}, {"indent": 2}, {"final_newline": False}, {"markdown": False},
                                    {"newline": "\r\n"}])
def test_fix_round_trips_byte_for_byte_except_the_fixed_cells(tmp_path: Path, capsys, layout):
    path = tmp_path / "demo.ipynb"
    before = notebook(MUTATION[0], "%matplotlib inline\n", MUTATION[1], "z = 1", counts=[3, None, 1, 2],
                      **layout).encode()
    path.write_bytes(before)
    code, out, _ = run(capsys, "check", "--no-cache", "--fix", str(path))
    after = path.read_bytes()
    assert code == 0 and "1 fixed" in out
    assert _outside_sources(after) == _outside_sources(before)
    assert set(re.findall(rb"\r?\n", after)) == set(re.findall(rb"\r?\n", before))  # the JSON's line breaks kept
    old, new = json.loads(before)["cells"], json.loads(after)["cells"]
    changed = [number for number, (a, b) in enumerate(zip(old, new)) if a != b]
    assert changed == [3 if layout.get("markdown", True) else 2]
    assert new[changed[0]]["source"] == ["x = jnp.zeros(3)\n", "x = x.at[0].set(1.0)\n"]


def test_diff_shows_each_changed_cell_and_writes_nothing(tmp_path: Path, capsys):
    path = tmp_path / "demo.ipynb"
    path.write_text(notebook(*MUTATION))
    before = path.read_bytes()
    code, out, _ = run(capsys, "check", "--no-cache", "--diff", str(path))
    name = path.as_posix()
    assert code == 1 and path.read_bytes() == before
    assert out == (f"--- {name}:cell 3\n+++ {name}:cell 3\n@@ -1,2 +1,2 @@\n x = jnp.zeros(3)\n-x[0] = 1.0\n"
                   "+x = x.at[0].set(1.0)\n")


def test_add_noqa_writes_into_the_cell_and_after_a_magic(tmp_path: Path, capsys):
    path = tmp_path / "demo.ipynb"
    path.write_text(notebook(*STALE, "%timeit -n 3 f(jnp.ones(3))\n"))
    code, _, err = run(capsys, "check", "--no-cache", "--extend-select", "JAX902", "--add-noqa", str(path))
    assert code == 0 and err == "Added 2 noqa directives.\n"
    cells = json.loads(path.read_text())["cells"]
    assert cells[2]["source"][2] == "    return x * scale  # noqa: JAX101\n"
    assert cells[6]["source"] == ["%timeit -n 3 f(jnp.ones(3))  # noqa: JAX902\n"]
    assert run(capsys, "check", "--no-cache", "--extend-select", "JAX902", str(path))[0] == 0


# ------------------------------------------------------------------------------------ bad notebooks
@pytest.mark.parametrize(("cells", "where"), [
    (['import jax\ns = """abc\n', 'x = 1"""\n'], "cell 2:2"),  # a string the next cell would close
    (["import jax\nif True:\n", "    x = 1\n"], "cell 2:2"),  # a block whose body is in the next cell
    (["x = (1,\n", "2)\n"], "cell 2:1"),  # a bracket the next cell would close
    (["import jax\n@jax.jit\n", "def f(x):\n    return x\n"], "cell 2:2"),  # a decorator without its def
    (["x = 1 + \\\n", "2\n"], "cell 2:1"),  # a line continuation into the next cell
])
def test_a_cell_is_python_by_itself_as_the_kernel_compiles_it(cells, where):
    """The kernel runs each cell alone: what only the next cell completes is a syntax error in the cell."""
    data = notebook(*cells).encode()
    context = OutputContext(notebooks={"demo.ipynb": read_notebook(data).index})
    found = [(d.code, context.label(d.path, d.range.start)) for d in check_source(data, "demo.ipynb").diagnostics]
    assert [(code, label.rsplit(":", 1)[0]) for code, label in found] == [("JAX001", f"demo.ipynb:{where}")], found
    [finding] = check_source(data, "demo.ipynb").diagnostics
    assert "of cell 3" not in finding.message and re.findall(r"line \d+(?! of cell)", finding.message) == []


def test_an_indented_cell_is_dedented_as_ipython_does_with_positions_as_written(tmp_path: Path, capsys):
    path = tmp_path / "demo.ipynb"
    path.write_text(notebook("import jax.numpy as jnp\n", "    x = jnp.zeros(3)\n    if True:\n        x[0] = 1.0\n",
                             "\n  %timeit jnp.ones(3)\n  y = jnp.zeros(2)\n"))
    data = path.read_bytes()
    report = check_source(data, "demo.ipynb", settings=Settings(extend_select=("JAX902",)))
    context = OutputContext(notebooks={"demo.ipynb": read_notebook(data).index})
    assert sorted((d.code, context.label(d.path, d.range.start)) for d in report.diagnostics) == [
        ("JAX201", "demo.ipynb:cell 3:3:9"), ("JAX902", "demo.ipynb:cell 4:2:11")]
    code, _, err = run(capsys, "check", "--no-cache", "--extend-select", "JAX902", "--add-noqa", str(path))
    assert code == 0 and err == "Added 2 noqa directives.\n"
    cells = [cell["source"] for cell in json.loads(path.read_text())["cells"][2:]]
    assert cells == [["    x = jnp.zeros(3)\n", "    if True:\n", "        x[0] = 1.0  # noqa: JAX201\n"],
                     ["\n", "  %timeit jnp.ones(3)  # noqa: JAX902\n", "  y = jnp.zeros(2)\n"]]


def test_cells_that_are_python_alone_are_no_syntax_error():
    cells = ["import asyncio\nawait asyncio.sleep(0)\n", "%%time\nx = 1\n", "%%bash\nif [ 1 ]; then\n",
             "y = [\n    1,\n]\n", '"""a docstring\n%not a magic\n"""\n', "%time z = (1 +\n"]
    report = check_source(notebook(*cells).encode(), "demo.ipynb")
    assert not report.errors and not report.diagnostics
@pytest.mark.parametrize(("content", "message"), [
    ('{"cells": [', "invalid JSON"),
    ('{"nbformat": 4}', "no `cells` list"),
    ('{"cells": [{"cell_type": "code", "source": 3}]}', "cell 1 has no text `source`"),
    (b"\xff\xfe{}", "not valid UTF-8"),
])
def test_a_notebook_that_is_not_one_is_an_error_and_is_never_changed(tmp_path: Path, capsys, content, message):
    bad = tmp_path / "bad.ipynb"
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    (tmp_path / "good.py").write_text(MUTATION[0] + MUTATION[1])
    code, out, err = run(capsys, "check", "--no-cache", "--fix", "--output-format", "concise", str(tmp_path))
    assert code == 2 and bad.read_bytes() == (content if isinstance(content, bytes) else content.encode())
    [line] = [line for line in err.splitlines() if "bad.ipynb" in line]
    assert line.startswith(f"{bad}: error: ") and message in line
    assert "1 fixed" in out  # the other file is still checked and fixed


def test_a_cell_that_does_not_parse_is_a_syntax_error_in_that_cell(tmp_path: Path, capsys):
    path = tmp_path / "demo.ipynb"
    path.write_text(notebook("import jax\n", "def f(:\n    pass\n", "x = 1\n"))
    before = path.read_bytes()
    code, out, _ = run(capsys, "check", "--no-cache", "--fix", "--output-format", "concise", str(path))
    assert code == 1 and out.startswith(f"{path}:cell 3:1:") and " JAX001 " in out
    assert path.read_bytes() == before


# ------------------------------------------------------------------------- stdin, noqa, discovery
def test_stdin_notebook_is_checked_and_fixed(capsys, monkeypatch):
    text = notebook(*MUTATION)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    code, out, _ = run(capsys, "check", "-", "--stdin-filename", "demo.ipynb", "--output-format", "concise")
    assert code == 1 and out.startswith("demo.ipynb:cell 3:2:1: JAX201 ")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    code, out, err = run(capsys, "check", "-", "--stdin-filename", "demo.ipynb", "--fix")
    assert code == 0 and out == text.replace('"x[0] = 1.0\\n"', '"x = x.at[0].set(1.0)\\n"'), err


def test_noqa_in_a_cell_and_per_file_ignores_apply(tmp_path: Path, capsys):
    (tmp_path / "a.ipynb").write_text(notebook(MUTATION[0], "x = jnp.zeros(3)\nx[0] = 1.0  # noqa: JAX201\n"))
    (tmp_path / "b.ipynb").write_text(notebook(*MUTATION))
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck]\nper-file-ignores = {'c*.ipynb' = ['JAX201']}\n")
    (tmp_path / "c.ipynb").write_text(notebook(*MUTATION))
    code, out, _ = run(capsys, "check", "--no-cache", "--output-format", "concise", str(tmp_path))
    assert code == 1 and [line.split(":")[0] for line in out.splitlines()[:-2]] == [str(tmp_path / "b.ipynb")]


def test_notebooks_are_found_by_default_and_include_and_exclude_apply(tmp_path: Path, capsys):
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "demo.ipynb").write_text(notebook(*MUTATION))
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "demo-checkpoint.ipynb").write_text(notebook(*MUTATION))
    (tmp_path / "script.jaxpy").write_text(MUTATION[0] + MUTATION[1])
    code, out, _ = run(capsys, "check", "--no-cache", "--output-format", "concise", str(tmp_path))
    assert code == 1 and out.count("JAX201") == 1 and "nb/demo.ipynb:cell 3:2:1" in out
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck]\nextend-include = ['*.jaxpy']\n"
                                            "extend-exclude = ['nb']\n")
    code, out, _ = run(capsys, "check", "--no-cache", "--output-format", "concise", str(tmp_path))
    assert out.count("JAX201") == 1 and "script.jaxpy:3:1" in out
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck]\ninclude = ['*.py']\n")
    assert run(capsys, "check", "--no-cache", str(tmp_path))[0] == 0


def test_pre_commit_hooks_take_notebooks():
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert hooks.count("types_or: [python, pyi, jupyter]") == 2


# ---------------------------------------------------------------------------------- output formats
def _snapshot_findings() -> tuple[list[Diagnostic], OutputContext]:
    """Findings of a notebook as the engine states them (module positions), fixed here so that the
    snapshots change with the formats only, not with the rules' wording."""
    book = read_notebook(notebook(*STALE, "x = jnp.zeros(3)\nx[0] = 1.0\n%timeit f(x)\n",
                                  counts=[1, 2, 9, 4, 5, 6]).encode())
    starts = book.index.starts

    def at(slot: int, line: int, column: int, end: int) -> Range:
        return Range(Position(starts[slot] + line - 1, column), Position(starts[slot] + line - 1, end))

    timeit = book.index.shifts[starts[5] + 2]
    findings = [
        Diagnostic("demo.ipynb", at(1, 3, 15, 20), "JAX101", "stale-global-read",
                   "module-level variable `scale` is read in traced code but reassigned at line 1 of cell 5",
                   related=(RelatedLocation("`f` is traced by `@jax.jit`", at(1, 1, 1, 8)),
                            RelatedLocation("this call may trace the reader of `scale` before the change", at(2, 1, 4, 5)),
                            RelatedLocation("`scale` is reassigned here", at(3, 1, 0, 11)),
                            RelatedLocation("the saved execution counts show these cells last ran in another order: "
                                            "cell 3 [2], cell 5 [4], cell 4 [9]", at(3, 1, 0, 0)))),
        Diagnostic("demo.ipynb", at(5, 2, 0, 4), "JAX201", "in-place-array-update", "item assignment on a JAX array",
                   Fix((Edit(at(5, 2, 0, 10), "x = x.at[0].set(1.0)"),), "safe", "Use `.at[...].set()`")),
        Diagnostic("demo.ipynb", at(5, 3, timeit.virtual, timeit.virtual + 4), "JAX902", "unsynchronized-timing",
                   "`f(...)` returns before its JAX computation finishes"),
    ]
    return findings, OutputContext(sources={"demo.ipynb": book.display_lines()}, notebooks={"demo.ipynb": book.index})


@pytest.mark.parametrize("name", sorted(FORMATTERS))
def test_notebook_output_snapshot(name: str):
    findings, context = _snapshot_findings()
    out = FORMATTERS[name](findings, context)
    if name == "sarif":
        log = json.loads(out)
        log["runs"][0]["tool"]["driver"] = "DRIVER"
        out = json.dumps(log, indent=2) + "\n"
    snapshot = SNAPSHOTS / f"notebook.{name}"
    if os.environ.get("JAXCHECK_UPDATE_SNAPSHOTS"):
        snapshot.write_text(out)
    assert out == snapshot.read_text()


def test_the_cli_gives_the_formats_the_cells(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("demo.ipynb").write_text(notebook(*STALE, "x = jnp.zeros(3)\nx[0] = 1.0\n%timeit f(x)\n"))
    for name, expected in [("concise", "demo.ipynb:cell 7:3:9: JAX902 "), ("json", '"cell": 7'),
                           ("github", "line=3,col=9,endLine=3,endColumn=13,title=JAX902 (unsynchronized-timing)::cell 7: "),
                           ("text", "3 | %timeit f(x)\n  |         ^^^^")]:
        code, out, _ = run(capsys, "check", "--no-cache", "--extend-select", "JAX902", "--output-format", name,
                           "demo.ipynb")
        assert code == 1 and expected in out, (name, out)


CORPUS = ROOT / ".notebooks"


@pytest.mark.skipif(not CORPUS.is_dir(), reason="fetch the notebook corpus first: ../shared/corpus/fetch-notebooks.sh")
def test_fix_on_every_corpus_notebook_round_trips_except_the_fixed_cells(tmp_path: Path, capsys):
    originals = {path.relative_to(CORPUS): path.read_bytes() for path in sorted(CORPUS.rglob("*.ipynb"))}
    for relative, data in originals.items():
        assert read_notebook(data).with_text(read_notebook(data).text) == data, relative
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_bytes(data)
    run(capsys, "check", "--no-cache", "--fix", "--unsafe-fixes", "--select", "ALL", str(tmp_path))
    changed = 0
    for relative, before in originals.items():
        after = (tmp_path / relative).read_bytes()
        assert _outside_sources(after) == _outside_sources(before), relative
        old, new = json.loads(before)["cells"], json.loads(after)["cells"]
        assert all(a == b or {k: v for k, v in a.items() if k != "source"} == {k: v for k, v in b.items() if k != "source"}
                   for a, b in zip(old, new)) and len(old) == len(new), relative
        changed += after != before
    assert changed  # the corpus has fixable findings, so the comparison above saw fixed cells


def test_ci_fetches_the_notebook_corpus_so_the_round_trip_test_runs_there():
    assert "../shared/corpus/fetch-notebooks.sh .notebooks" in (ROOT / ".ci" / "run").read_text()
