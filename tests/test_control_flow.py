"""The one flow driver (`semantics/control_flow.py`): the shape of the walk and its bound, on a minimal
state, and the two analyses that run on it (the model's interpreter and the PRNG analysis) walking a
loop nest the same number of times."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
import pytest

from jaxcheck.analyzer.semantics.budget import FIXPOINT_DEPTH
from jaxcheck.analyzer.semantics.builder import ModelBuilder
from jaxcheck.analyzer.semantics.control_flow import LOOP_PASSES, ControlFlow
from jaxcheck.analyzer.semantics.prng import _Analysis, find_key_reuses


class Counting(ControlFlow[int | None]):
    """State: how many statements ran on the path (None: the path ended). Every statement but `pass`
    changes it, so every loop that may run twice does; joins take the largest count."""

    def __init__(self) -> None:
        self._loop_frames = []
        self.state: int | None = 0
        self.visits: dict[str, int] = {}

    def _current(self) -> int | None:
        return self.state

    def _switch(self, state: int | None) -> int | None:
        previous, self.state = self.state, state
        return previous

    def _copy(self, state: int | None) -> int | None:
        return state

    def _join(self, states: Sequence[int | None]) -> int | None:
        live = [state for state in states if state is not None]
        return max(live) if live else None

    def _reachable(self) -> bool:
        return self.state is not None

    def _end_path(self) -> None:
        self.state = None

    def _simple_statements(self, statements: Sequence[cst.BaseSmallStatement]) -> None:
        for statement in statements:
            if self.state is None:
                return
            if isinstance(statement, cst.Break):
                self._break()
            elif isinstance(statement, cst.Continue):
                self._continue()
            elif isinstance(statement, (cst.Return, cst.Raise)):
                self._end_path()
            elif isinstance(statement, cst.Pass):
                self.visits["pass"] = self.visits.get("pass", 0) + 1  # changes nothing
            else:
                code = cst.Module([]).code_for_node(statement)
                self.visits[code] = self.visits.get(code, 0) + 1
                self.state += 1

    def _definition(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        pass

    def _condition(self, statement: cst.If | cst.While, test: cst.BaseExpression) -> None:
        pass

    def _subject(self, node: cst.Match) -> None:
        pass

    def _iterate_over(self, node: cst.For) -> None:
        pass

    def _bind_item(self, node: cst.For) -> None:
        pass

    def _enter_context(self, item: cst.WithItem) -> None:
        pass


def walk(source: str) -> Counting:
    flow = Counting()
    flow._block(cst.parse_module(source).body)
    return flow


def nest(depth: int, body: str) -> str:
    lines = [f"{'    ' * level}for i{level} in range(3):" for level in range(depth)]
    return "\n".join([*lines, "    " * depth + body]) + "\n"


@pytest.mark.parametrize("depth", range(1, FIXPOINT_DEPTH + 3))
def test_a_loop_body_runs_at_most_loop_passes_times_per_enclosing_loop(depth: int) -> None:
    assert walk(nest(depth, "x = 1")).visits["x = 1"] == LOOP_PASSES ** min(depth, FIXPOINT_DEPTH)


def test_a_loop_over_one_element_runs_once_and_a_stable_loop_stops_early() -> None:
    assert walk("for x in [x0]:\n    y = 1\n").visits["y = 1"] == 1
    assert walk(nest(3, "pass")).visits["pass"] == 1  # nothing changes: each loop's head is stable at once


def test_exits_end_the_path_and_alternatives_join() -> None:
    flow = walk("if c:\n    a = 1\n    return\n    dead = 1\nelse:\n    b = 1\nafter = 1\n")
    assert "dead = 1" not in flow.visits and flow.visits["after = 1"] == 1
    flow = walk("if c:\n    return\nelse:\n    raise E\nnever = 1\n")
    assert "never = 1" not in flow.visits
    flow = walk("try:\n    a = 1\nexcept E:\n    b = 1\nelse:\n    c = 1\nfinally:\n    d = 1\n")
    assert flow.visits == {"a = 1": 1, "b = 1": 1, "c = 1": 1, "d = 1": 1}
    flow = walk("while c:\n    if d:\n        break\n    e = 1\nelse:\n    f = 1\ng = 1\n")
    assert flow.visits["g = 1"] == 1 and flow.visits["f = 1"] == 1


def test_the_interpreter_and_the_prng_analysis_run_their_loops_on_the_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both walk loops by the driver's `_loop`, so a draw nested deeper than the fixpoint depth is read at
    most LOOP_PASSES ** FIXPOINT_DEPTH times by each."""
    depth = FIXPOINT_DEPTH + 2
    source = "import jax\ndef f(key, acc):\n" + "".join(
        f"{'    ' * (level + 1)}for i{level} in range(3):\n" for level in range(depth)
    ) + "    " * (depth + 1) + "key, sub = jax.random.split(key)\n" + "    " * (depth + 1) + "acc = [acc, sub]\n"
    module = cst.parse_module(source)
    function = module.body[1]
    assert isinstance(function, cst.FunctionDef)
    walkers: list[str] = []
    original_loop = ControlFlow._loop

    def recording_loop(self: ControlFlow[object], *args: object, **kwargs: object) -> object:
        walkers.append(type(self).__name__)
        return original_loop(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ControlFlow, "_loop", recording_loop)
    splits: dict[str, int] = {}
    original_eval = ModelBuilder._eval

    def counting_eval(self: ModelBuilder, node: cst.BaseExpression) -> object:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            splits["interpreter"] = splits.get("interpreter", 0) + 1
        return original_eval(self, node)

    monkeypatch.setattr(ModelBuilder, "_eval", counting_eval)
    ModelBuilder("m", "m.py").build(module)
    original_call = _Analysis.call

    def counting_call(self: _Analysis, node: cst.Call, state: dict[str, object]) -> None:
        if isinstance(node.func, cst.Attribute):
            splits["prng"] = splits.get("prng", 0) + 1
        original_call(self, node, state)  # type: ignore[arg-type]

    monkeypatch.setattr(_Analysis, "call", counting_call)
    find_key_reuses(function.body.body, ("key",),
                    lambda call: "jax.random.split" if isinstance(call.func, cst.Attribute) else None,
                    lambda call, index, keyword: False)
    assert {"ModelBuilder", "_Analysis"} <= set(walkers)
    assert 1 < splits["interpreter"] <= LOOP_PASSES ** FIXPOINT_DEPTH
    assert 1 < splits["prng"] <= LOOP_PASSES ** FIXPOINT_DEPTH
