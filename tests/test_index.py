"""The project index: one file checked as a project reads its importers' summaries from the cache
folder, unchanged runs are answered from a run record, and an edit anywhere a result depends on (the
file itself, a module that imports it, a module it imports) gives the findings a cold run gives."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import make_package

from jaxcheck.analyzer import engine
from jaxcheck.analyzer.semantics import locality
from jaxcheck.analyzer.config import Configuration
from jaxcheck.analyzer.diagnostics import Diagnostic
from jaxcheck.analyzer.engine import CheckReport, Linter
from jaxcheck.analyzer.incremental import EarlyCutoff
from jaxcheck.analyzer.outcome import FileOutcome
from jaxcheck.analyzer.parsing import run_with_deep_stack
from jaxcheck.analyzer.project import module_name_for
from jaxcheck.analyzer.semantics.solver import solve
from tests.test_cache import TRAIN, UTILS  # the same two-module project: a jitted step, a helper

UNTRACED_TRAIN = "from .utils import clip_positive\n\ndef step(x):\n    return clip_positive(x)\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_package(tmp_path, {"train.py": TRAIN, "utils.py": UTILS})


def _write(path: Path, text: str) -> None:
    path.write_text(textwrap.dedent(text))


def _check(paths: list[Path], cache: Path | None) -> CheckReport:
    return Linter(Configuration()).check_paths(paths, cache_dir=cache)


def _findings(report: CheckReport) -> list[tuple[str, str, int]]:
    return [(Path(d.path).name, d.code, d.range.start.line) for d in report.diagnostics]


def _same_as_cold(paths: list[Path], cache: Path) -> list[tuple[str, str, int]]:
    warm = _check(paths, cache)
    cold = _check(paths, None)
    assert warm.diagnostics == cold.diagnostics and warm.errors == cold.errors
    return _findings(warm)


@pytest.mark.parametrize("target", ["pkg", "pkg/utils.py"])
def test_editing_an_importer_changes_the_imported_files_findings(project: Path, tmp_path: Path, target: str):
    cache = tmp_path / "cache"
    paths = [project / target]
    assert _same_as_cold(paths, cache) == [("utils.py", "JAX301", 3)]
    assert _same_as_cold(paths, cache) == [("utils.py", "JAX301", 3)]  # warm: from the index
    _write(project / "pkg" / "train.py", UNTRACED_TRAIN)
    assert _same_as_cold(paths, cache) == []
    _write(project / "pkg" / "train.py", TRAIN)
    assert _same_as_cold(paths, cache) == [("utils.py", "JAX301", 3)]


def test_editing_an_imported_module_changes_the_importers_findings(project: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    paths = [project / "pkg"]
    _same_as_cold(paths, cache)
    # The helper now traces the value it is given through jit itself: train.py is unchanged, yet the
    # project solve (and so train.py's signature) changes.
    _write(project / "pkg" / "utils.py", "def clip_positive(v):\n    return v\n")
    assert _same_as_cold(paths, cache) == []
    _write(project / "pkg" / "utils.py", UTILS)
    assert _same_as_cold(paths, cache) == [("utils.py", "JAX301", 3)]


def test_a_new_importer_is_found(project: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    _write(project / "pkg" / "train.py", UNTRACED_TRAIN)
    paths = [project / "pkg" / "utils.py"]
    assert _same_as_cold(paths, cache) == []
    _write(project / "pkg" / "other.py", TRAIN)
    assert _same_as_cold(paths, cache) == [("utils.py", "JAX301", 3)]
    (project / "pkg" / "other.py").unlink()
    assert _same_as_cold(paths, cache) == []


def test_an_unchanged_run_parses_nothing(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cache = tmp_path / "cache"
    cold = _check([project / "pkg" / "utils.py"], cache)
    monkeypatch.setattr(Linter, "analyze", lambda *_: pytest.fail("a file was parsed again"))
    monkeypatch.setattr("jaxcheck.analyzer.engine.solve", lambda *_: pytest.fail("the project was solved again"))
    warm = _check([project / "pkg" / "utils.py"], cache)
    assert warm.diagnostics == cold.diagnostics and warm.files_checked == 1


def test_an_edit_reparses_only_the_edited_file(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cache = tmp_path / "cache"
    _check([project / "pkg"], cache)
    _write(project / "pkg" / "__init__.py", "# edited\n")
    parsed: list[str] = []
    analyze = Linter.analyze
    monkeypatch.setattr(Linter, "analyze", lambda self, path, *rest: parsed.append(Path(path).name) or analyze(self, path, *rest))
    assert _findings(_check([project / "pkg"], cache)) == [("utils.py", "JAX301", 3)]
    assert parsed == ["__init__.py"]


PRINTING_UTILS = """
    # the same summary as UTILS: a comment, a print
    def clip_positive(v):
        print(v)
        if v > 0:
            return v
        return 0.0
"""


def test_edits_that_keep_the_summary_relint_only_the_edited_file(project: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch):
    cache = tmp_path / "cache"
    paths = [project / "pkg"]
    _check(paths, cache)
    for text, expected in ((PRINTING_UTILS, [("utils.py", "JAX103", 4), ("utils.py", "JAX301", 5)]),
                           (UTILS, [("utils.py", "JAX301", 3)])):
        _write(project / "pkg" / "utils.py", text)
        with monkeypatch.context() as patched:
            patched.setattr(Linter, "_outcomes", lambda *_: pytest.fail("the whole request was checked again"))
            warm = _check(paths, cache)
        assert warm.diagnostics == _check(paths, None).diagnostics
        assert _findings(warm) == expected


def _solved_modules(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records how many summaries each project solve of the engine (whole or in part) is given."""
    sizes: list[int] = []
    for module in (engine, locality):
        solve = module.solve
        monkeypatch.setattr(module, "solve", lambda summaries, *rest, solve=solve:
                            sizes.append(len(summaries := list(summaries))) or solve(summaries, *rest))
    return sizes


PLAIN_UTILS = textwrap.dedent(UTILS)
LOCAL_EDITS = {
    "a new helper": PLAIN_UTILS + "\ndef unused(v):\n    return v + 1\n",
    "a new jitted function with findings": PLAIN_UTILS + "\n@jax.jit\ndef scale(v):\n    print(v)\n    return helper(v)\n\n"
                                           "def helper(v):\n    if v > 0:\n        return v\n    return v\n",
    "a helper only its module calls": PLAIN_UTILS + "\ndef outer(v):\n    return inner(v)\n\ndef inner(v):\n    return v\n",
}


@pytest.mark.parametrize("edit", sorted(LOCAL_EDITS))
@pytest.mark.parametrize("target", ["pkg", "pkg/utils.py"])
def test_a_summary_change_inside_its_module_relints_only_the_edited_file(tmp_path: Path, edit: str, target: str,
                                                                         monkeypatch: pytest.MonkeyPatch):
    project = make_package(tmp_path, {"train.py": TRAIN, "utils.py": UTILS, "other.py": "def unrelated():\n    return 1\n"})
    cache = tmp_path / "cache"
    paths = [project / target]
    _check(paths, cache)
    _write(project / "pkg" / "utils.py", "import jax\n" + LOCAL_EDITS[edit])
    with monkeypatch.context() as patched:
        patched.setattr(Linter, "_outcomes", lambda *_: pytest.fail("the whole request was checked again"))
        sizes = _solved_modules(patched)
        warm = _check(paths, cache)
    assert sizes and max(sizes) < len(list((project / "pkg").glob("*.py")))  # never the whole package
    assert warm.diagnostics == _check(paths, None).diagnostics
    assert _same_as_cold(paths, cache) == _findings(warm)


TRAIN_WITH_LOOKUP = TRAIN + "\n    @jax.jit\n    def other(x):\n        from . import utils\n        return utils.later(x)\n"
REACHING_EDITS = {
    "a function another module calls": ("utils.py", "def clip_positive(v, low=0.0):\n    if v > low:\n        return v\n    return low\n"),
    "a call to another module": ("utils.py", PLAIN_UTILS + "\ndef caller(v):\n    from .train import step\n    return step(v)\n"),
    "a call from a traced function to another module": (
        "train.py", TRAIN_WITH_LOOKUP.replace("return clip_positive(x)", "print(x)\n        return clip_positive(clip_positive(x))")),
    "a root of a function of another module": ("train.py", TRAIN_WITH_LOOKUP + "\n    jitted_clip = jax.jit(clip_positive)\n"),
}
UNRESOLVED_EDITS = {
    "a name another module looked up in vain": ("utils.py", PLAIN_UTILS + "\ndef later(v):\n    print(v)\n    return v\n"),
    "a re-export another module uses": ("utils.py", PLAIN_UTILS + "\nfrom .train import step as later\n"),
}


@pytest.mark.parametrize("edit", sorted(REACHING_EDITS))
def test_a_summary_change_that_reaches_another_module_solves_the_groups_it_touches(tmp_path: Path, edit: str,
                                                                                   monkeypatch: pytest.MonkeyPatch):
    project = make_package(tmp_path, {"train.py": TRAIN_WITH_LOOKUP, "utils.py": UTILS,
                                      "other.py": "def unrelated():\n    return 1\n"})
    cache = tmp_path / "cache"
    paths = [project / "pkg"]
    _check(paths, cache)
    name, text = REACHING_EDITS[edit]
    _write(project / "pkg" / name, textwrap.dedent(text))
    with monkeypatch.context() as patched:
        patched.setattr(Linter, "_outcomes", lambda *_: pytest.fail("the whole request was checked again"))
        sizes = _solved_modules(patched)
        warm = _check(paths, cache)
    assert sizes and max(sizes) < len(list((project / "pkg").glob("*.py")))  # never `other.py`
    assert warm.diagnostics == _check(paths, None).diagnostics
    assert _same_as_cold(paths, cache) == _findings(warm)


def test_summary_changes_in_two_files_solve_the_groups_they_touch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    project = make_package(tmp_path, {"train.py": TRAIN_WITH_LOOKUP, "utils.py": UTILS,
                                      "other.py": "def unrelated():\n    return 1\n"})
    cache = tmp_path / "cache"
    paths = [project / "pkg"]
    _check(paths, cache)
    for name in ("a function another module calls", "a call from a traced function to another module"):
        file, text = REACHING_EDITS[name]
        _write(project / "pkg" / file, text)
    with monkeypatch.context() as patched:
        patched.setattr(Linter, "_outcomes", lambda *_: pytest.fail("the whole request was checked again"))
        warm = _check(paths, cache)
    assert warm.diagnostics == _check(paths, None).diagnostics
    assert _same_as_cold(paths, cache) == _findings(warm)


def test_a_function_named_like_a_module_stays_unknown_in_a_solve_of_part_of_the_project(tmp_path: Path):
    init = "import jax\n\n@jax.jit\ndef run(x):\n    return x\n"
    project = make_package(tmp_path, {"sub.py": "def helper(y):\n    return y\n"})
    (project / "pkg" / "__init__.py").write_text(init)
    cache = tmp_path / "cache"
    paths = [project / "pkg"]
    _check(paths, cache)
    (project / "pkg" / "__init__.py").write_text(init.replace("return x", "return sub(x)") + textwrap.dedent("""
        def sub(x):  # the project solve knows `pkg.sub` as the module: the call is not followed
            print(x)
            return x
    """))
    assert _findings(_check(paths, cache)) == _findings(_check(paths, None)) == []


def test_an_unusable_link_table_checks_the_whole_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    project = make_package(tmp_path, {"train.py": TRAIN_WITH_LOOKUP, "utils.py": UTILS})
    cache = tmp_path / "cache"
    paths = [project / "pkg"]
    _check(paths, cache)
    [table] = [entry for entry in cache.rglob("*.json") if b'"LinkTable"' in entry.read_bytes()]
    table.write_text(table.read_text().replace('"modules"', '"modulos"'))
    _write(project / "pkg" / "utils.py", REACHING_EDITS["a function another module calls"][1])
    sizes = _solved_modules(monkeypatch)
    report = _check(paths, cache)
    assert max(sizes) == len(list((project / "pkg").glob("*.py")))  # the whole request
    assert any("ignored 1 unusable cache entry" in note for note in report.notes)
    assert _findings(report) == _same_as_cold(paths, cache)


@pytest.mark.parametrize("edit", sorted(UNRESOLVED_EDITS))
def test_a_summary_change_another_module_would_link_to_anew_checks_the_whole_request(
        tmp_path: Path, edit: str, monkeypatch: pytest.MonkeyPatch):
    project = make_package(tmp_path, {"train.py": TRAIN_WITH_LOOKUP, "utils.py": UTILS})
    cache = tmp_path / "cache"
    paths = [project / "pkg"]
    _check(paths, cache)
    name, text = UNRESOLVED_EDITS[edit]
    _write(project / "pkg" / name, textwrap.dedent(text))
    change = EarlyCutoff._change
    answers: list[object] = []
    monkeypatch.setattr(EarlyCutoff, "_change", staticmethod(lambda *a: answers.append(change(*a)) or answers[-1]))
    sizes = _solved_modules(monkeypatch)
    warm = _findings(_check(paths, cache))
    assert answers == [None] and max(sizes) == len(list((project / "pkg").glob("*.py")))  # the whole request
    assert _same_as_cold(paths, cache) == warm


@pytest.mark.parametrize("target", ["pkg", "pkg/utils.py"])
def test_notes_follow_the_other_file_they_cite(project: Path, tmp_path: Path, target: str):
    cache = tmp_path / "cache"
    paths = [project / target]

    def cited_lines() -> list[int]:
        assert _same_as_cold(paths, cache) == [("utils.py", "JAX301", 3)]
        [finding] = _check(paths, cache).diagnostics
        return [note.range.start.line for note in finding.related if note.path and note.path.endswith("train.py")]

    assert cited_lines() == [5, 7]  # `@jax.jit`, then the call of the helper
    _write(project / "pkg" / "train.py", "# the same summary, two lines down\n\n" + textwrap.dedent(TRAIN))
    assert cited_lines() == [7, 9]


def test_one_linter_locates_notes_in_the_other_file_as_it_is_now(project: Path):
    linter = Linter(Configuration())  # as `--fix` and the server do: several runs in one process

    def cited_lines() -> list[int]:
        [finding] = linter.check_paths([project / "pkg"]).diagnostics
        return [note.range.start.line for note in finding.related if note.path and note.path.endswith("train.py")]

    assert cited_lines() == [5, 7]
    _write(project / "pkg" / "train.py", "# two lines down\n\n" + textwrap.dedent(TRAIN))
    assert cited_lines() == [7, 9]


def test_an_editor_buffer_that_keeps_its_summary_reuses_the_last_solve(project: Path, monkeypatch: pytest.MonkeyPatch):
    utils = project / "pkg" / "utils.py"
    linter = Linter(Configuration())
    first = linter.check_file_in_project(utils, utils.read_bytes())
    with monkeypatch.context() as patched:
        patched.setattr("jaxcheck.analyzer.engine.solve", lambda *_: pytest.fail("solved again"))
        edited = linter.check_file_in_project(utils, b"# typing a comment\n" + utils.read_bytes())
    assert [d.range.start.line for d in first.diagnostics] == [3]
    assert [d.range.start.line for d in edited.diagnostics] == [4]
    changed = linter.check_file_in_project(utils, b"def clip_positive(v):\n    return v\n")  # a new summary
    assert changed.diagnostics == []


def test_a_corrupt_import_table_is_a_miss(project: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    _check([project / "pkg" / "utils.py"], cache)
    tables = list(cache.glob("imports-*.json"))
    assert len(tables) == 1
    table = json.loads(tables[0].read_text())
    table["entries"] = [["x", {"@": "os.system"}]]
    tables[0].write_text(json.dumps(table))
    _write(project / "pkg" / "train.py", UNTRACED_TRAIN)  # a miss of the run record too
    report = _check([project / "pkg" / "utils.py"], cache)
    assert _findings(report) == [] and any("ignored 1 unusable cache entry" in note for note in report.notes)


def test_editing_a_helper_changes_its_callers_findings_in_another_file(tmp_path: Path):
    project = make_package(tmp_path, {
        "draws.py": "import jax\n\ndef sample(key):\n    return jax.random.normal(key, (3,))\n",
        "model.py": "from .draws import sample\n\ndef init(key):\n    a = sample(key)\n    b = sample(key)\n    return a, b\n",
    })
    cache = tmp_path / "cache"
    paths = [project / "pkg"]
    before = _same_as_cold(paths, cache)
    assert [f for f in before if f[0] == "model.py"], before
    _write(project / "pkg" / "draws.py", "def sample(key):\n    return key\n")
    assert not [f for f in _same_as_cold(paths, cache) if f[0] == "model.py"]
    _write(project / "pkg" / "draws.py", "import jax\n\ndef sample(key):\n    return jax.random.normal(key, (3,))\n")
    assert _same_as_cold(paths, cache) == before


def test_the_catalogue_matches_the_rule_classes():
    from jaxcheck.analyzer.catalogue import CATALOGUE, RuleEntry
    from jaxcheck.analyzer.registry import all_rules

    assert CATALOGUE == tuple(RuleEntry(r.code, r.name, r.default_enabled) for r in all_rules())


def test_a_run_answered_from_the_index_never_imports_libcst(project: Path, tmp_path: Path):
    import subprocess
    import sys

    from conftest import checkout_environment

    command = [sys.executable, "-X", "importtime", "-m", "jaxcheck", "check", "--cache-dir", str(tmp_path / "c"), "pkg"]
    runs = [subprocess.run(command, cwd=project, capture_output=True, text=True, env=checkout_environment(),
                           check=False) for _ in range(2)]
    assert [run.returncode for run in runs] == [1, 1] and runs[0].stdout == runs[1].stdout
    imported = [{line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if "|" in line} for run in runs]
    assert "libcst" in imported[0] and "libcst" not in imported[1]


WARM_LIKE_COLD = {
    "a module named by attribute, drawing twice": (
        {"pkg/__init__.py": "", "pkg/n.py": "import jax\n\ndef h(key):\n    return jax.random.normal(key, (3,))\n",
         "pkg/m.py": "from pkg import n\n\ndef g(key):\n    a = n.h(key)\n    b = n.h(key)\n    return a + b\n",
         "pkg/i.py": "import jax\nfrom pkg import m\n\nfast = jax.jit(m.g)\n"},
        {"pkg/m.py": "from pkg import n\n\ndef g(key):\n    a = n.h(key)\n    b = n.h(key)\n    return a + b\n\n"
                     "def unused(v):\n    return v + 1\n"}),
    "two files with one module name": (
        {"x/utils.py": "def other(v):\n    return v\n",
         "y/utils.py": "import jax\n\n@jax.jit\ndef helper(v):\n    return v\n"},
        {"x/utils.py": "def other(v):\n    return v\n\ndef helper(v):\n    print(v)\n    return v\n"}),
    "a 64-bit dtype where another module enables x64": (
        {"pkg/__init__.py": "", "pkg/config.py": "import jax\n\ndef setup():\n    jax.config.update('jax_enable_x64', True)\n",
         "pkg/m.py": "import jax.numpy as jnp\n\ndef make():\n    return jnp.zeros(3, dtype=jnp.float32)\n"},
        {"pkg/m.py": "import jax.numpy as jnp\n\ndef make():\n    return jnp.zeros(3, dtype=jnp.float64)\n"}),
    "a helper the imported module stops drawing in": (
        {"pkg/__init__.py": "", "pkg/n.py": "import jax\n\ndef h(key):\n    return jax.random.normal(key, (3,))\n",
         "pkg/m.py": "from pkg import n\n\ndef g(key):\n    a = n.h(key)\n    b = n.h(key)\n    return a + b\n"},
        {"pkg/n.py": "def h(key):\n    return key.shape\n"}),
}


@pytest.mark.parametrize("case", sorted(WARM_LIKE_COLD))
def test_an_edit_gives_the_findings_a_cold_run_gives(tmp_path: Path, case: str):
    before, after = WARM_LIKE_COLD[case]
    root = tmp_path / "project"
    for name, text in before.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    cache = tmp_path / "cache"
    _same_as_cold([root], cache)
    for name, text in after.items():
        (root / name).write_text(text)
    _same_as_cold([root], cache)


def _linted_with_the_whole_solve(root: Path) -> list[Diagnostic]:
    """Every file of `root` linted with the solve of the whole project (what the two passes of a run
    must reproduce: the first with each file's own solve, the second only where that can differ)."""
    linter = Linter(Configuration())
    paths = sorted(root.rglob("*.py"))

    def run() -> list[Diagnostic]:
        analyses = [linter.analyze(str(path), path.read_bytes(), module_name_for(path)) for path in paths]
        solution = solve([analysis.summary for analysis in analyses if not isinstance(analysis, FileOutcome)])
        found: list[Diagnostic] = []
        for analysis in analyses:
            found += analysis.diagnostics if isinstance(analysis, FileOutcome) else linter.lint(analysis, solution).diagnostics
        return sorted(set(found))

    return run_with_deep_stack(run)


CROSS_MODULE_READS = {
    **WARM_LIKE_COLD,
    "an item store into arrays another module's helper returns": ({
        "pkg/__init__.py": "", "pkg/n.py": "import jax.numpy as jnp\n\ndef init(n):\n    return {'w': jnp.zeros(n)}\n",
        "pkg/m.py": "from pkg.n import init\n\ndef main():\n    p = init(3)\n    p['w'][0] = 0.0\n",
    }, {"pkg/n.py": "def init(n):\n    return {'w': [0.0] * n}\n"}),
}


@pytest.mark.parametrize("case", sorted(CROSS_MODULE_READS))
@pytest.mark.parametrize("state", [0, 1])
def test_a_run_gives_the_findings_of_the_whole_solve(tmp_path: Path, case: str, state: int):
    root = tmp_path / "project"
    for files in CROSS_MODULE_READS[case][: state + 1]:
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    assert _check([root], None).diagnostics == _linted_with_the_whole_solve(root)


def test_an_edit_keeping_the_summary_of_a_script_sharing_its_module_name_relints_only_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "project"
    for folder in ("a", "b"):
        (root / folder).mkdir(parents=True)
        (root / folder / "train.py").write_text("def step(x):\n    return x\n")
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    cache = tmp_path / "cache"
    _check([root], cache)
    (root / "a" / "train.py").write_text("def step(x):\n    return x  # edited\n")
    with monkeypatch.context() as patched:
        patched.setattr(Linter, "_outcomes", lambda *_: pytest.fail("the whole request was checked again"))
        warm = _check([root], cache)
    assert warm.diagnostics == _check([root], None).diagnostics


def test_one_file_after_a_whole_project_run_reads_that_runs_state(project: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch):
    """Pre-commit after a full check: nothing changed, so the findings of the named file come from the
    whole run's state, with no file parsed; once a file changes, that state's early cutoff answers,
    with the findings a cold check gives."""
    cache = tmp_path / "cache"
    whole = _check([project], cache)
    assert _findings(whole) == [("utils.py", "JAX301", 3)]

    def no_parsing(*args: object) -> None:
        raise AssertionError("parsed a file though nothing changed since the whole run")

    with monkeypatch.context() as patched:
        patched.setattr(Linter, "analyze", no_parsing)
        one = _check([project / "pkg" / "utils.py"], cache)
    assert one.diagnostics == _check([project / "pkg" / "utils.py"], None).diagnostics
    assert [d.path for d in one.diagnostics] == [str(project / "pkg" / "utils.py")]
    _write(project / "pkg" / "train.py", UNTRACED_TRAIN)
    states: list[str] = []
    original = EarlyCutoff.findings

    def spy(self: EarlyCutoff, state: object, *args: object) -> object:
        states.append(str(args[-1]))
        return original(self, state, *args)  # type: ignore[arg-type]

    with monkeypatch.context() as patched:
        patched.setattr(EarlyCutoff, "findings", spy)
        assert _same_as_cold([project / "pkg" / "utils.py"], cache) == []
    assert len(states) == 1, "the whole run's state was not used"  # this request has no state of its own
