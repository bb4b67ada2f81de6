"""Which functions a summary change may alter and which modules a solve of them needs (the index's early
cutoff for changed summaries), and that the solve of those modules gives them the facts the project solve does."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from jaxcheck.analyzer.parsing import parse_source, run_with_deep_stack
from jaxcheck.analyzer.semantics.builder import ModelBuilder
from jaxcheck.analyzer.semantics.locality import (
    Change, LazyProject, LinkTable, Unresolvable, changed_functions, link_table, merged_links, referenced_names,
)
from jaxcheck.analyzer.semantics.solver import lookup_name, solve
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
UNRELATED = """
    import jax

    def helper(x):
        return x

    @jax.jit
    def caller(x):
        return helper(x)
"""


def _summary(source: str, module: str) -> ModuleSummary:
    tree = parse_source(textwrap.dedent(source))
    assert isinstance(tree, cst.Module)
    _, summary = run_with_deep_stack(lambda: ModelBuilder(module, f"{module}.py").build(tree))
    return summary


def _project(*summaries: ModuleSummary) -> LazyProject:
    return LazyProject({summary.module: (lambda s=summary: s) for summary in summaries})


def _table(summaries: list[ModuleSummary]) -> LinkTable:
    solution = solve(summaries)
    return link_table(summaries, lambda name: lookup_name(solution, name), solution.functions)


def _others() -> list[ModuleSummary]:
    return [_summary(LAYERS, "pkg.layers"), _summary(INIT, "pkg"), _summary(UNRELATED, "pkg.unrelated")]


def _change(before: str, after: str, looked_up_elsewhere: frozenset[str] = frozenset()) -> Change | None:
    old, new = _summary(before, "pkg.model"), _summary(after, "pkg.model")
    project = _project(old, *_others())
    return changed_functions([(old, new)], project.overriding(old).resolve, project.overriding(new).resolve,
                             _table([old, *_others()]), looked_up_elsewhere)


def test_the_link_table_groups_linked_functions_with_the_modules_that_name_them():
    table = _table([_summary(MODEL, "pkg.model"), *_others()])
    groups = dict(zip(table.functions, table.modules))
    assert groups[("pkg.model.loss", "pkg.model.step", "pkg.layers.dense")] == ("pkg", "pkg.layers", "pkg.model")
    assert groups[("pkg.unrelated.helper", "pkg.unrelated.caller")] == ("pkg.unrelated",)
    assert not table.ambiguous


def test_a_new_function_nothing_calls_touches_only_itself():
    assert _change(MODEL, MODEL + "\n    def spare(x):\n        return x\n") == Change(
        frozenset({"pkg.model.spare"}), frozenset(), frozenset())


def test_functions_a_change_links_are_touched_together():
    after = MODEL + "\n    def spare(x):\n        return helper(x)\n\n    def helper(x):\n        return x\n"
    change = _change(MODEL, after)
    assert change is not None and change.functions == {"pkg.model.spare", "pkg.model.helper"} and not change.modules


@pytest.mark.parametrize("after", [MODEL.replace("return dense(w, x)", "return dense(x, w)"),
                                   MODEL + "\n    def spare(w, x):\n        return dense(w, x)\n"])
def test_a_change_linked_to_another_module_touches_its_group_there(after: str):
    change = _change(MODEL, after)
    assert change is not None and {"pkg.model.loss", "pkg.layers.dense"} <= change.functions
    assert change.modules == {"pkg", "pkg.layers"}  # the module that re-exports `dense` too; not pkg.unrelated


def test_a_function_other_modules_would_link_to_anew_cannot_be_solved_in_part():
    after = MODEL + "\n    def spare(x):\n        return x\n"
    assert _change(MODEL, after, frozenset({"pkg.model.spare"})) is None
    assert _change(MODEL, after, frozenset({"pkg.model.loss"})) is not None  # its users are in the table


def test_turning_on_64_bit_mode_cannot_be_solved_in_part():
    assert _change(MODEL, MODEL + "\n    jax.config.update('jax_enable_x64', True)\n") is None


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
    "\n    def spare(w, x):\n        return jax.vmap(dense)(w, x)\n",
    "\n    jitted_dense = jax.jit(dense)\n",
])
def test_the_modules_a_change_needs_give_touched_functions_their_project_facts(addition: str):
    new = _summary(MODEL + addition, "pkg.model")
    change = _change(MODEL, MODEL + addition)
    assert change is not None and change.functions
    needed = [summary for summary in _others() if summary.module in change.modules]
    part, whole = solve([new, *needed]), solve([new, *_others()])
    for summary in (new, *needed):
        in_part, in_whole = part.signature_parts(summary), whole.signature_parts(summary)
        for key in change.functions:
            assert in_part.functions.get(key) == in_whole.functions.get(key)
            assert in_part.links.get(key) == in_whole.links.get(key)
    assert any(part.signature_parts(new).functions.get(key) for key in change.functions)


def test_changes_to_several_modules_touch_the_groups_of_each():
    old_model, new_model = _summary(MODEL, "pkg.model"), _summary(MODEL + "\n    def spare(x):\n        return x\n", "pkg.model")
    old_other = _summary(UNRELATED, "pkg.unrelated")
    new_other = _summary(UNRELATED.replace("return helper(x)", "return helper(helper(x))"), "pkg.unrelated")
    old_project = _project(old_model, _summary(LAYERS, "pkg.layers"), _summary(INIT, "pkg"), old_other)
    new_project = old_project.overriding(new_model).overriding(new_other)
    change = changed_functions([(old_model, new_model), (old_other, new_other)],
                               old_project.overriding(old_model).resolve, new_project.resolve,
                               _table([old_model, *_others()]), frozenset())
    assert change is not None and change.modules == set()
    assert change.functions == {"pkg.model.spare", "pkg.unrelated.helper", "pkg.unrelated.caller"}


def test_the_merged_link_table_joins_the_touched_groups_and_drops_removed_functions():
    before = MODEL + "\n    def spare(x):\n        return x\n"
    after = MODEL.replace("return dense(w, x)", "return dense(x, w)")
    old, new = _summary(before, "pkg.model"), _summary(after, "pkg.model")
    project = _project(old, *_others())
    table = _table([old, *_others()])
    change = changed_functions([(old, new)], project.overriding(old).resolve, project.overriding(new).resolve,
                               table, frozenset())
    assert change is not None
    merged = merged_links(table, change, [(old, new)], project)
    index = merged.group_index()
    assert index["pkg.model.loss"] == index["pkg.layers.dense"] and "pkg.model.spare" not in index
    assert {"pkg", "pkg.layers", "pkg.model"} <= set(merged.modules[index["pkg.model.loss"]])
    assert index["pkg.unrelated.helper"] != index["pkg.model.loss"]  # untouched groups stay as they were
