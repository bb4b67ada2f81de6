"""Targeted positions agree with LibCST's PositionProvider for every kind of node."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from jaxcheck.analyzer.positions import node_ranges

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "jaxcheck" / "analyzer").rglob("*.py"))


def test_ranges_match_position_provider():
    compared = 0
    for path in SAMPLES:
        text = path.read_text(encoding="utf-8")
        try:
            module = cst.parse_module(text)
        except cst.ParserSyntaxError:
            continue  # examples/broken_syntax.py
        reference = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        nodes = [node for node in reference if not isinstance(node, cst.Module)]
        ours = node_ranges(module, nodes[::7])
        for node in nodes[::7]:
            assert ours[id(node)] == reference[node], (path.name, type(node).__name__)
            compared += 1
    assert compared > 1000


def test_windows_newlines_and_only_requested_nodes():
    module = cst.parse_module("x = 1\r\nif x:\r\n    y = [\r\n        x]\r\n")
    target = module.body[1].body.body[0].body[0].value  # the list
    ranges = node_ranges(module, [target])
    assert set(ranges) == {id(target)}
    assert (ranges[id(target)].start.line, ranges[id(target)].start.column) == (3, 8)
    assert (ranges[id(target)].end.line, ranges[id(target)].end.column) == (4, 10)
