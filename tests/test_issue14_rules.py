"""Issue 14's rules beyond their examples: JAX601's table against the installed JAX, JAX901's
project-wide view of x64, and the opt-in defaults of the 9xx rules."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import make_package

from jaxcheck import check_paths
from jaxcheck.analyzer.registry import rule_by_code_or_name, selected_codes
from jaxcheck.analyzer.semantics.jax_api import EAGER_MODULES
from jaxcheck.analyzer.semantics.removed_api import REMOVED_APIS, REMOVED_KEYWORDS, removed_api, renamed


def _resolve(dotted: str) -> object:
    """Import the longest importable module prefix of `dotted`, then getattr the rest."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        for attribute in parts[end:]:
            value = getattr(value, attribute)
        return value
    raise ImportError(dotted)


@pytest.mark.parametrize("api", [api for api in REMOVED_APIS if api.replacement], ids=lambda api: api.name)
def test_every_replacement_exists_in_the_installed_jax(api):
    pytest.importorskip("jax")
    _resolve(api.replacement)


@pytest.mark.parametrize("api", REMOVED_APIS, ids=lambda api: api.name)
def test_every_removed_name_is_gone_from_the_installed_jax(api):
    pytest.importorskip("jax")
    with pytest.raises((ImportError, AttributeError)):
        _resolve(api.name)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_removed_keywords_are_renamed_to_keywords_of_live_callables():
    pytest.importorskip("jax")
    for entry in REMOVED_KEYWORDS:
        assert entry.keyword != entry.replacement
        assert any(_exists(callee) for callee in entry.callables)


def _exists(dotted: str) -> bool:
    try:
        _resolve(dotted)
    except (ImportError, AttributeError):
        return False
    return True


def test_eager_modules_are_loaded_by_import_jax():
    pytest.importorskip("jax")
    code = f"import sys, jax; missing = [m for m in {sorted(EAGER_MODULES)!r} if m not in sys.modules]; print(missing)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_members_of_removed_modules_take_the_module_entry_unless_named():
    assert removed_api("jax.experimental.host_callback.barrier_wait").name == "jax.experimental.host_callback"
    assert removed_api("jax.experimental.host_callback.id_tap").replacement == "jax.debug.callback"
    assert removed_api("jax.experimental.hostcallback") is None
    assert removed_api("jax.tree_util.tree_map") is None
    optimizers = removed_api("jax.experimental.optimizers.adam")
    assert renamed("jax.experimental.optimizers.adam", optimizers) == "jax.example_libraries.optimizers.adam"


def test_opinionated_rules_are_off_by_default():
    defaults = selected_codes(None, ())
    assert "JAX601" in defaults
    for code in ("JAX901", "JAX902", "JAX903"):
        assert not rule_by_code_or_name(code).default_enabled
        assert code not in defaults
        assert code not in selected_codes(["JAX"], ())
        assert code in selected_codes(["JAX9"], ())


MODEL = """
    import jax.numpy as jnp

    def init(n):
        return jnp.zeros(n, dtype=jnp.float64)
"""


def _x64_findings(root: Path, *names: str) -> list[tuple[str, int]]:
    report = check_paths([root / "pkg" / name for name in names] or [root / "pkg"], select=["JAX901"])
    assert not report.errors
    return [(Path(d.path).name, d.range.start.line) for d in report.diagnostics]


def test_x64_dtype_in_a_project_that_never_enables_x64(tmp_path: Path):
    root = make_package(tmp_path, {"model.py": MODEL, "main.py": "from pkg.model import init\nw = init(3)\n"})
    assert _x64_findings(root) == [("model.py", 5)]


@pytest.mark.parametrize("enabling", [
    "import jax\njax.config.update('jax_enable_x64', True)\n",
    "from jax import config\nconfig.update('jax_enable_x64', True)\n",
    "import os\nos.environ['JAX_ENABLE_X64'] = 'True'\n",
    "import jax\nwith jax.enable_x64():\n    pass\n",
])
def test_x64_enabled_in_another_module_of_the_project_silences(tmp_path: Path, enabling: str):
    main = enabling + "from pkg.model import init\nw = init(3)\n"
    root = make_package(tmp_path, {"model.py": MODEL, "main.py": main})
    assert _x64_findings(root) == []
    assert _x64_findings(root, "model.py") == []  # main.py imports model.py: it is part of the run


def test_x64_enabled_by_a_conftest_silences_the_tests_it_loads(tmp_path: Path):
    enabling = "import jax\njax.config.update('jax_enable_x64', True)\n"
    root = make_package(tmp_path, {"model.py": MODEL, "conftest.py": enabling})
    assert _x64_findings(root, "model.py") == []  # pytest loads conftest.py first, though nothing imports it
    (root / "pkg" / "conftest.py").write_text("import jax\n")
    assert _x64_findings(root, "model.py") == [("model.py", 5)]
