"""Whether a summary change stays inside its module (the index's early cutoff for changed summaries), and
that the solve of the module alone then gives the touched functions the facts the project solve does."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from jaxcheck.analyzer.parsing import parse_source, run_with_deep_stack
from jaxcheck.analyzer.semantics.builder import ModelBuilder
from jaxcheck.analyzer.semantics.locality import LazyProject, Unresolvable, changed_functions, referenced_names
from jaxcheck.analyzer.semantics.solver import solve
from jaxcheck.analyzer.semantics.summary import ModuleSummary

MODEL = """
    import jax
    from pkg.layers import dense

    def loss(w, x):
        return dense(w, x)

    @jax.jit
    def step(w, x):
        return loss(w, x)
"""
LAYERS = """
    def dense(w, x):
        return w * x
"""
INIT = "from pkg.layers import dense as layer\n"


def _summary(source: str, module: str) -> ModuleSummary:
    tree = parse_source(textwrap.dedent(source))
    assert isinstance(tree, cst.Module)
    _, summary = run_with_deep_stack(lambda: ModelBuilder(module, f"{module}.py").build(tree))
    return summary


def _project(*summaries: ModuleSummary) -> LazyProject:
    return LazyProject({summary.module: (lambda s=summary: s) for summary in summaries})


def _touched(before: str, after: str, used_elsewhere: frozenset[str] = frozenset()) -> frozenset[str] | None:
    old, new = _summary(before, "pkg.model"), _summary(after, "pkg.model")
    project = _project(old, _summary(LAYERS, "pkg.layers"), _summary(INIT, "pkg"))
    return changed_functions(old, new, project.overriding(old).resolve, project.overriding(new).resolve,
                             used_elsewhere)


def test_a_new_function_nothing_calls_touches_only_itself():
    assert _touched(MODEL, MODEL + "\n    def spare(x):\n        return x\n") == {"pkg.model.spare"}


def test_functions_a_change_links_are_touched_together():
    after = MODEL + "\n    def spare(x):\n        return helper(x)\n\n    def helper(x):\n        return x\n"
    assert _touched(MODEL, after) == {"pkg.model.spare", "pkg.model.helper"}


def test_a_change_linked_to_another_module_is_not_local():
    assert _touched(MODEL, MODEL.replace("return dense(w, x)", "return dense(x, w)")) is None
    assert _touched(MODEL, MODEL + "\n    def spare(w, x):\n        return dense(w, x)\n") is None


def test_a_change_to_a_function_used_elsewhere_is_not_local():
    after = MODEL + "\n    def spare(x):\n        return x\n"
    assert _touched(MODEL, after, frozenset({"pkg.model.spare"})) is None
    assert _touched(MODEL, after, frozenset({"pkg.model.loss"})) == {"pkg.model.spare"}


def test_turning_on_64_bit_mode_is_not_local():
    assert _touched(MODEL, MODEL + "\n    jax.config.update('jax_enable_x64', True)\n") is None


def test_referenced_names_follow_re_exports():
    consumer = _summary("import pkg\n\n@jax.jit\ndef f(w, x):\n    return pkg.layer(w, x)\n", "pkg.consumer")
    project = _project(consumer, _summary(LAYERS, "pkg.layers"), _summary(INIT, "pkg"))
    assert {"pkg.layer", "pkg.layers.dense"} <= referenced_names(consumer, project.visited)


def test_an_unusable_summary_cannot_be_resolved():
    project = LazyProject({"pkg.layers": lambda: None})
    with pytest.raises(Unresolvable):
        project.resolve("pkg.layers.dense")


@pytest.mark.parametrize("addition", [
    "\n    @jax.jit\n    def spare(x):\n        print(x)\n        return inner(x)\n\n    def inner(y):\n        return y\n",
    "\n    def spare(x):\n        return jax.vmap(inner)(x)\n\n    def inner(y):\n        if y > 0:\n            return y\n        return -y\n",
])
def test_the_module_alone_gives_touched_functions_their_project_facts(addition: str):
    new = _summary(MODEL + addition, "pkg.model")
    others = [_summary(LAYERS, "pkg.layers"), _summary(INIT, "pkg")]
    touched = _touched(MODEL, MODEL + addition)
    assert touched
    alone, whole = solve([new]).signature_parts(new), solve([new, *others]).signature_parts(new)
    assert {key: alone.functions.get(key) for key in touched} == {key: whole.functions.get(key) for key in touched}
    assert any(alone.functions.get(key) for key in touched)
