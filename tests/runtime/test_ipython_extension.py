"""`%load_ext jaxcheck` in IPython's own shell (no browser, no kernel): findings displayed under the cell
that caused them at their cell and line, cells run in and out of order, `%jaxcheck on|off|status`."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import pytest

pytest.importorskip("IPython")

from IPython.core.displaypub import CapturingDisplayPublisher  # noqa: E402
from IPython.core.error import UsageError  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from traitlets.config import Config  # noqa: E402

from jaxcheck.runtime_checks import originals  # noqa: E402
from jaxcheck.runtime_checks.session import current  # noqa: E402
from tests.runtime.conftest import ROOT, run_python  # noqa: E402


class Notebook:
    """IPython's shell running cells as a notebook does (history stored, numbered from 1), with what each
    cell displays captured."""

    def __init__(self, shell: InteractiveShell) -> None:
        self.shell = shell
        self.displayed: dict[int, list[dict[str, Any]]] = {}

    def run(self, code: str) -> Any:
        """Run one cell; its display outputs land in `displayed[its number]`."""
        number = self.shell.execution_count
        publisher = self.shell.display_pub
        assert isinstance(publisher, CapturingDisplayPublisher)
        publisher.clear_output()
        result = self.shell.run_cell(code, store_history=True)
        self.displayed[number] = [output["data"] for output in publisher.outputs]
        return result

    def text(self, number: int) -> str:
        """The plain text displayed under cell `number`."""
        return "\n".join(data["text/plain"] for data in self.displayed[number])


@pytest.fixture()
def notebook() -> Iterator[Notebook]:
    config = Config()
    config.HistoryManager.hist_file = ":memory:"  # the user's IPython history stays untouched
    main = sys.modules["__main__"]  # the shell puts its user module there; later tests spawn processes
    shell = InteractiveShell.instance(config=config)
    shell.reset(new_session=True)
    saved = shell.display_pub
    shell.display_pub = CapturingDisplayPublisher()
    try:
        yield Notebook(shell)
    finally:
        shell.run_line_magic("unload_ext", "jaxcheck")
        shell.display_pub = saved
        shell.reset(new_session=True)
        sys.modules["__main__"] = main


CELLS = {
    "imports": "import jax\nimport jax.numpy as jnp\nscale = 2.0",
    "define": "@jax.jit\ndef f(x):\n    return x * scale",
    "call": "y = f(jnp.ones(3))",
}


def test_a_global_changed_in_a_later_cell_is_reported_under_the_stale_call_with_both_values(notebook):
    for code in ("%load_ext jaxcheck", CELLS["imports"], CELLS["define"], CELLS["call"], "scale = 3.0"):
        assert notebook.run(code).success
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        notebook.run(CELLS["call"])  # In [6]: the compiled f still multiplies by 2.0
    assert [notebook.text(number) for number in range(1, 6)] == [""] * 5
    text = notebook.text(6)
    assert text.startswith("jaxcheck: Cell In[3], line 3: JAX101 `f` read `scale` while tracing (2.0); it is now 3.0")
    assert "    return x * scale" in text
    assert "Fix: pass `scale` as an argument" in text
    assert not warned, "shown twice: as a display and as a warning"


def test_a_global_changed_again_names_the_value_the_program_still_holds_and_changed_back_is_quiet(notebook):
    for code in ("%load_ext jaxcheck", CELLS["imports"], CELLS["define"], CELLS["call"], "scale = 3.0",
                 CELLS["call"], "scale = 4.0", CELLS["call"], "scale = 2.0", CELLS["call"]):
        notebook.run(code)
    assert "(2.0); it is now 3.0" in notebook.text(6)
    assert notebook.text(8).startswith("jaxcheck: Cell In[3], line 3: JAX101 `f` read `scale` while tracing (2.0); "
                                       "it is now 4.0"), notebook.text(8)  # the program multiplies by 2.0 still
    assert notebook.text(10) == ""  # 2.0 again: what the program holds


def test_a_global_changed_while_off_is_reported_at_the_first_call_after_on(notebook):
    for code in ("%load_ext jaxcheck", CELLS["imports"], CELLS["define"], CELLS["call"], "%jaxcheck off",
                 "scale = 3.0", CELLS["call"], "%jaxcheck on", CELLS["call"], CELLS["call"]):
        notebook.run(code)
    assert notebook.text(7) == ""  # off
    assert "JAX101 `f` read `scale` while tracing (2.0); it is now 3.0" in notebook.text(9)
    assert notebook.text(10) == ""  # once


def test_cells_run_out_of_order_follow_the_function_the_session_holds_now(notebook):
    for code in ("%load_ext jaxcheck", CELLS["imports"], CELLS["define"], CELLS["call"], "scale = 3.0"):
        notebook.run(code)
    notebook.run(CELLS["define"])  # In [6]: cell 3 run again, so f traces with 3.0
    notebook.run(CELLS["call"])  # In [7]
    assert notebook.text(7) == ""
    notebook.run("scale = 4.0")  # In [8]
    notebook.run(CELLS["call"])  # In [9]
    assert "Cell In[6], line 3: JAX101 `f` read `scale` while tracing (3.0); it is now 4.0" in notebook.text(9)


def test_print_in_a_jitted_function_is_shown_under_its_cell_at_its_line(notebook):
    notebook.run("%load_ext jaxcheck")
    notebook.run("import jax\n\n@jax.jit\ndef g(x):\n    print('x is', x)\n    return x + 1\n\ng(1.0)\ng(2.0)")
    assert notebook.text(2).startswith("jaxcheck: Cell In[2], line 5: JAX103 `g` printed while tracing")


def test_a_key_reused_by_running_a_cell_again_names_both_cells(notebook):
    notebook.run("%load_ext jaxcheck")
    notebook.run("import jax\nkey = jax.random.key(0)\n\n@jax.jit\ndef sample(k):\n    return jax.random.normal(k)")
    notebook.run("x = sample(key)")  # In [3]
    assert notebook.text(3) == ""
    notebook.run("x = sample(key)")  # In [4]: cell 3 again, with the same key
    text = notebook.text(4)
    assert text.startswith("jaxcheck: Cell In[4], line 1: JAX401 the PRNG key passed to `sample` as 'k' was already "
                           "consumed on line 1 of Cell In[3]")


def test_html_for_front_ends_that_render_it(notebook):
    notebook.run("%load_ext jaxcheck")
    notebook.run("import jax\n\n@jax.jit\ndef g(x):\n    print('<x>', x)\n    return x\n\ng(1.0)")
    [data] = notebook.displayed[2]
    assert "Cell In[2], line 5" in data["text/html"]
    assert "print(&#x27;&lt;x&gt;&#x27;, x)" in data["text/html"]
    assert "print-in-traced-function.md" in data["text/html"]


@pytest.mark.parametrize("notes_in_tracebacks", [False, True])
def test_a_finding_carried_by_a_traceback_note_is_shown_once(notebook, monkeypatch, capsys, notes_in_tracebacks):
    """IPython 8.12 shows no exception notes, so the finding is displayed; later versions show them."""
    if notes_in_tracebacks:
        formatter = notebook.shell.InteractiveTB
        plain = formatter.structured_traceback

        def with_notes(etype: Any, value: Any, tb: Any, *args: Any, **kwargs: Any) -> list[str]:
            return [*plain(etype, value, tb, *args, **kwargs), *getattr(value, "__notes__", ())]

        monkeypatch.setattr(formatter, "structured_traceback", with_notes)
    notebook.run("%load_ext jaxcheck")
    # As the tracer-error explanations do: a finding recorded and attached to the exception as a note.
    result = notebook.run("from jaxcheck.runtime_checks.report import diagnostic\n"
                          "from jaxcheck.runtime_checks.session import current\n"
                          "error = TypeError('traced')\n"
                          "error.add_note(current().reporter.note(diagnostic('JAX301', ('<cell>', 4), 'explained')))\n"
                          "raise error")
    assert isinstance(result.error_in_exec, TypeError)
    finding = "<cell>:4: JAX301 explained"
    in_traceback = capsys.readouterr().out.count(finding)
    assert (in_traceback, notebook.text(2).count(finding)) == ((1, 0) if notes_in_tracebacks else (0, 1))


def test_jaxcheck_off_stops_the_reports_and_on_starts_them_again(notebook):
    notebook.run("%load_ext jaxcheck")
    notebook.run("import jax\n\n@jax.jit\ndef g(x):\n    print(x)\n    return x")
    notebook.run("%jaxcheck off")
    assert jax.jit is originals.jit
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        notebook.run("g(1.0)")  # In [4]: g is still the checked function made in cell 2
    assert notebook.text(4) == ""
    assert not warned
    notebook.run("%jaxcheck on")
    notebook.run("@jax.jit\ndef g(x):\n    print(x)\n    return x\n\ng(1.0)")  # In [6]
    assert "JAX103" in notebook.text(6)


def _last_line(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().out.splitlines()[-1]


def test_status_says_whether_it_is_on_and_counts_the_session_findings(notebook, capsys):
    notebook.run("%load_ext jaxcheck")
    notebook.run("%jaxcheck status")
    assert _last_line(capsys) == "jaxcheck: on (--mode=warn); 0 findings in this session"
    notebook.run("import jax\n\n@jax.jit\ndef g(x):\n    print(x)\n    return x\n\ng(1.0)")
    notebook.run("%jaxcheck off")
    notebook.run("%jaxcheck status")
    assert _last_line(capsys) == "jaxcheck: off; 1 finding in this session"
    notebook.run("%jaxcheck on --nans --retrace-budget 3")
    notebook.run("%jaxcheck status")
    assert _last_line(capsys) == "jaxcheck: on (--mode=warn --nans --retrace-budget=3); 1 finding in this session"


def test_options_pass_through_to_the_checks(notebook):
    notebook.run("%load_ext jaxcheck")
    notebook.run("%jaxcheck on --nans")
    notebook.run("import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef f(x):\n    return jnp.log(x)\n\ny = f(-1.0)")
    assert "Cell In[3], line 6: JAX701" in notebook.text(3)


def test_mode_collect_displays_nothing_and_mode_raise_shows_a_finding_once(notebook):
    notebook.run("%load_ext jaxcheck")
    notebook.run("%jaxcheck on --mode collect")
    notebook.run("import jax\n\n@jax.jit\ndef g(x):\n    print(x)\n    return x\n\ng(1.0)")
    assert notebook.text(3) == ""
    notebook.run("%jaxcheck on --mode=raise")
    result = notebook.run("@jax.jit\ndef g(x):\n    print(x)\n    return x\n\ng(1.0)")
    assert "JAX103" in str(result.error_in_exec)
    assert notebook.text(5) == "", "shown twice: in the traceback and as a display"


@pytest.mark.parametrize("line", ["frob", "on --bogus", "on --mode loud", "on --retrace-budget", "off now",
                                  "status --nans", "on 'unclosed", ""])
def test_wrong_arguments_give_a_one_line_usage_error(notebook, capsys, line):
    notebook.run("%load_ext jaxcheck")
    result = notebook.run(f"%jaxcheck {line}")
    assert isinstance(result.error_in_exec, UsageError)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    [message] = captured.err.splitlines()
    assert message.startswith("UsageError: jaxcheck: ")


def test_settings_come_from_the_nearest_pyproject_and_a_broken_one_is_a_usage_error(notebook, capsys, monkeypatch,
                                                                                      tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck.runtime]\nnans = true\nretrace-budget = 0\n")
    result = notebook.run("%load_ext jaxcheck")
    assert isinstance(result.error_in_exec, UsageError)
    [message] = capsys.readouterr().err.splitlines()
    assert message.startswith("UsageError: jaxcheck: ") and "retrace-budget" in message
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck.runtime]\nnans = true\n")
    notebook.run("%load_ext jaxcheck")
    notebook.run("%jaxcheck on --retrace-budget=2")
    notebook.run("%jaxcheck status")
    assert _last_line(capsys) == "jaxcheck: on (--mode=warn --nans --retrace-budget=2); 0 findings in this session"


def test_loading_and_unloading_twice(notebook):
    shell, before = notebook.shell, current()
    for _ in range(2):
        notebook.run("%load_ext jaxcheck")
        notebook.run("import jaxcheck\njaxcheck.load_ipython_extension(get_ipython())")  # again: no change
        assert jax.jit is not originals.jit
        assert len([f for f in shell.events.callbacks["post_run_cell"] if "KernelChecks" in repr(f)]) == 1
        notebook.run("%unload_ext jaxcheck")
        notebook.run("import jaxcheck\njaxcheck.unload_ipython_extension(get_ipython())")  # again: nothing to do
        assert jax.jit is originals.jit
        assert current() is before
        assert not [f for f in shell.events.callbacks["post_run_cell"] if "KernelChecks" in repr(f)]
        assert "jaxcheck" not in shell.magics_manager.magics["line"]


def test_a_kernel_naming_cells_by_file_path_is_mapped_too(notebook, monkeypatch, tmp_path):
    """ipykernel compiles cells as `/tmp/ipykernel_<pid>/<hash>.py`; they are still the user's code."""
    folder = tmp_path / "ipykernel_1"
    monkeypatch.setattr(notebook.shell.compile, "get_code_name",
                        lambda raw, code, number: str(folder / f"{abs(hash(code))}.py"))
    notebook.run("%load_ext jaxcheck")
    notebook.run("import jax\n\n@jax.jit\ndef g(x):\n    print(x)\n    return x\n\ng(1.0)")
    assert notebook.text(2).startswith("jaxcheck: Cell In[2], line 5: JAX103")


def test_importing_jaxcheck_stays_light_and_without_jax_loading_is_a_usage_error(tmp_path: Path):
    code = ("import sys\nsys.modules['jax'] = None\nimport jaxcheck\n"
            "assert callable(jaxcheck.load_ipython_extension) and callable(jaxcheck.unload_ipython_extension)\n"
            "assert not {'IPython', 'libcst'} & set(sys.modules), 'imported too early'\n"
            "from IPython.core.interactiveshell import InteractiveShell\n"
            "InteractiveShell.instance().run_cell('%load_ext jaxcheck')\n")
    result = run_python(["-c", code], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stderr.strip().startswith("UsageError: jaxcheck: the runtime checks need JAX")


def test_the_readme_session_is_what_the_shell_prints():
    """The README's "In a notebook" sample is a real run of `notebook_session.py`."""
    result = run_python([str(Path(__file__).with_name("notebook_session.py"))], ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() in (ROOT / "README.md").read_text()
