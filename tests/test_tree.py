"""The fast node iteration that replaces LibCST's visitor protocol in read-only scans."""

from __future__ import annotations

import libcst as cst

from jaxcheck.analyzer.tree import child_nodes, descendants, scan


def test_child_nodes_are_the_code_inside_in_order() -> None:
    call = cst.parse_expression("f(a, key=b.c)")
    assert isinstance(call, cst.Call)
    assert [type(node).__name__ for node in child_nodes(call)] == ["Name", "Arg", "Arg"]


def test_descendants_skip_keywords_and_attribute_names() -> None:
    expression = cst.parse_expression("f(a, key=b.c)")
    names = sorted(node.value for node in descendants(expression) if isinstance(node, cst.Name))
    assert names == ["a", "b", "f"]


def test_descendants_leave_out_the_outside_types():
    module = cst.parse_module("f(1)\ndef g():\n    h(2)\nk(lambda: m(3))\n")
    calls = [node.func.value for node in descendants(module, outside=(cst.FunctionDef, cst.Lambda))
             if isinstance(node, cst.Call) and isinstance(node.func, cst.Name)]
    assert sorted(calls) == ["f", "k"]


def test_scan_calls_visit_methods_in_order_and_prunes_on_false() -> None:
    module = cst.parse_module("x = g(1)\ndef inner():\n    h(2)\ny = k(lambda: m(3))\n")

    class Calls:
        def __init__(self) -> None:
            self.seen: list[str] = []

        def visit_Call(self, node: cst.Call) -> None:
            assert isinstance(node.func, cst.Name)
            self.seen.append(node.func.value)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    calls = Calls()
    scan(module, calls)
    assert calls.seen == ["g", "k"]
