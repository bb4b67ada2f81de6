"""Every finding says why: the trace chain (root, then each call on the way) as related locations."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst

from conftest import make_package

from jaxcheck import check_paths
from jaxcheck.analyzer.codec import decode, encode
from jaxcheck.analyzer.diagnostics import Diagnostic, Position, Range, RelatedLocation
from jaxcheck.analyzer.engine import check_source
from jaxcheck.analyzer.parsing import parse_source, run_with_deep_stack
from jaxcheck.analyzer.positions import node_ranges
from jaxcheck.analyzer.semantics import SemanticModel
from jaxcheck.analyzer.semantics.builder import ModelBuilder
from jaxcheck.analyzer.semantics.model import site_in
from jaxcheck.analyzer.semantics.solver import Witness, solve
from jaxcheck.analyzer.semantics.summary import CallEdge, ModuleSummary
from jaxcheck.analyzer.semantics.values import CallArguments


def _summary(source: str, module: str = "m", path: str = "m.py") -> tuple[cst.Module, ModelBuilder, ModuleSummary]:
    tree = parse_source(textwrap.dedent(source))
    assert isinstance(tree, cst.Module)
    builder = ModelBuilder(module, path)
    _, summary = run_with_deep_stack(lambda: builder.build(tree))
    return tree, builder, summary


def _notes(related: tuple[RelatedLocation, ...]) -> list[tuple[str | None, int, int, str]]:
    return [(r.path, r.range.start.line, r.range.start.column, r.message) for r in related]


def _chain(model: SemanticModel, key: str, others: dict[str, tuple[cst.Module, ModelBuilder]] | None = None,
           ) -> list[tuple[str | None, int, int, str]]:
    """The trace notes of `key`, located as the engine does (notes in `others` in those modules)."""
    located = []
    for note in model.trace_notes(key):
        node = model.site_of(note)
        if node is not None:
            where = model.position(node).start
            located.append((None, where.line, where.column, note.message))
            continue
        tree, builder = (others or {})[note.path]
        node = site_in(builder.records, note)
        assert node is not None
        start = node_ranges(tree, [node])[id(node)].start
        located.append((note.path, start.line, start.column, note.message))
    return located


def test_a_root_is_the_whole_chain():
    tree, builder, summary = _summary("""
        import jax

        @jax.jit
        def step(x):
            return x
    """)
    model = SemanticModel(tree, builder.records, summary, solve([summary]))
    assert _chain(model, "m.step") == [(None, 4, 1, "`step` is traced by `@jax.jit`")]
    assert model.trace_notes("m") == ()  # module level is not traced


def test_a_helper_two_calls_deep_follows_the_traced_parameter():
    tree, builder, summary = _summary("""
        import jax

        def augment(x, scale):
            return x * scale

        def loss(params, batch):
            return augment(params, 2.0) * batch

        def step(params, batch):
            return loss(params, batch)

        step_fn = jax.jit(step)
    """)
    solution = solve([summary])
    chain = solution.trace_chain("m.augment", "x")
    assert [link.function for link in chain] == ["m.step", "m.loss", "m.augment"]
    model = SemanticModel(tree, builder.records, summary, solution)
    assert _chain(model, "m.augment") == [
        (None, 13, 10, "`step` is traced by `jax.jit(...)`"),
        (None, 11, 11, "`step` calls `loss`: `batch`, `params` are traced"),
        (None, 8, 11, "`loss` calls `augment`: `x` is traced"),
    ]


def test_a_nested_function_explains_the_trace_of_its_enclosing_function():
    tree, builder, summary = _summary("""
        import jax

        @jax.jit
        def step(x):
            def inner(y):
                return y
            return inner
    """)
    model = SemanticModel(tree, builder.records, summary, solve([summary]))
    assert _chain(model, "m.step.<locals>.inner") == [(None, 4, 1, "`step` is traced by `@jax.jit`")]


def test_a_lax_body_made_per_call_explains_the_trace_that_caches_it():
    tree, builder, summary = _summary("""
        import jax
        from jax import lax

        @jax.jit
        def run(x):
            def body(c):
                return c * 2
            return lax.while_loop(lambda c: c < 3, body, x)

        def eager(x):
            def body(c):
                return c * 2
            return lax.while_loop(lambda c: c < 3, body, x)
    """)
    solution = solve([summary])
    model = SemanticModel(tree, builder.records, summary, solution)
    assert _chain(model, "m.run.<locals>.body") == [
        (None, 5, 1, "`run` is traced by `@jax.jit`"),
        (None, 9, 11, "`body` is traced by `jax.lax.while_loop(...)`"),
    ]
    cached = model.trace_of("m.run.<locals>.body")
    fresh = model.trace_of("m.eager.<locals>.body")
    assert cached is not None and cached.cached
    assert fresh is not None and not fresh.cached  # traced again on every call of `eager`
    assert _chain(model, "m.eager.<locals>.body") == [(None, 14, 11, "`body` is traced by `jax.lax.while_loop(...)`")]


def test_a_cross_module_chain_names_the_other_file():
    train_tree, train_builder, train = _summary("""
        import jax
        from pkg.utils import loss

        def step(params):
            return loss(params)

        step_fn = jax.jit(step)
    """, "pkg.train", "pkg/train.py")
    utils_tree, utils_builder, utils = _summary("""
        def loss(p):
            return p
    """, "pkg.utils", "pkg/utils.py")
    model = SemanticModel(utils_tree, utils_builder.records, utils, solve([train, utils]))
    assert _chain(model, "pkg.utils.loss", {"pkg/train.py": (train_tree, train_builder)}) == [
        ("pkg/train.py", 8, 10, "`step` is traced by `jax.jit(...)`"),
        ("pkg/train.py", 6, 11, "`step` calls `loss`: `p` is traced"),
    ]


def test_a_cycle_of_calls_gives_a_finite_chain():
    _, _, summary = _summary("""
        import jax

        def ping(x, n):
            return pong(x, n - 1)

        def pong(x, n):
            return ping(x, n)

        run = jax.jit(ping)
    """)
    solution = solve([summary])
    assert [link.function for link in solution.trace_chain("m.pong", "x")] == ["m.ping", "m.pong"]
    # Witnesses that point at each other (never made by the solve) still end.
    edge_a, edge_b = CallEdge("m.pong", "m.ping", CallArguments()), CallEdge("m.ping", "m.pong", CallArguments())
    for key, edge in (("m.ping", edge_a), ("m.pong", edge_b)):
        solution.states[key].witness = Witness("m.py", "m", edge=edge)
        solution.states[key].param_witnesses.clear()
    assert [link.function for link in solution.trace_chain("m.ping")] == ["m.pong", "m.ping"]


def test_a_function_passed_to_a_transforming_helper_names_the_helper():
    tree, builder, summary = _summary("""
        import jax

        def fit(loss_fn, w):
            return jax.grad(loss_fn)(w)

        def loss(w):
            return w

        fit(loss, 1.0)
    """)
    model = SemanticModel(tree, builder.records, summary, solve([summary]))
    assert _chain(model, "m.loss") == [(None, 10, 0, "`loss` is passed to `fit`, which applies `jax.grad` to it")]


def test_findings_in_a_project_carry_the_chain(tmp_path: Path):
    root = make_package(tmp_path, {
        "train.py": """
            import jax
            from pkg.utils import clip

            def step(params, x):
                return clip(x)

            step_fn = jax.jit(step)
        """,
        "utils.py": """
            def clip(v):
                if v > 0:
                    return v
                return 0.0
        """,
    })
    report = check_paths([root / "pkg"])
    (finding,) = report.diagnostics
    assert finding.code == "JAX301" and finding.path.endswith("utils.py")
    assert [(Path(finding.related_path(r)).name, r.range.start.line) for r in finding.related] == [
        ("train.py", 8), ("train.py", 6)]


def test_stale_read_notes_the_call_before_the_change_and_the_change():
    report = check_source(textwrap.dedent("""
        import jax

        rate = 1.0

        @jax.jit
        def step(x):
            return x * rate

        step(1.0)
        rate = 2.0
        step(3.0)
    """))
    (finding,) = report.diagnostics
    assert finding.code == "JAX101"
    assert _notes(finding.related) == [
        (None, 6, 1, "`step` is traced by `@jax.jit`"),
        (None, 10, 0, "this call may trace the reader of `rate` before the change"),
        (None, 11, 0, "`rate` is reassigned here"),
    ]


def test_key_reuse_notes_the_first_use():
    report = check_source(textwrap.dedent("""
        import jax

        def sample(key):
            a = jax.random.normal(key, (2,))
            b = jax.random.normal(key, (2,))
            return a + b
    """))
    (finding,) = report.diagnostics
    assert finding.code == "JAX401"
    assert _notes(finding.related) == [(None, 5, 8, "`key` is first consumed here")]


def test_related_locations_round_trip_the_cache_codec_and_do_not_change_identity():
    span = Range(Position(3, 4), Position(3, 9))
    related = (RelatedLocation("`f` is traced by `@jax.jit`", Range(Position(1, 1), Position(1, 1))),
               RelatedLocation("`g` calls `f`", span, "other.py"))
    diagnostic = Diagnostic("m.py", span, "JAX301", "python-branch-on-tracer", "message", related=related)
    decoded = decode(Diagnostic, encode(diagnostic))
    assert decoded.related == related
    plain = Diagnostic("m.py", span, "JAX301", "python-branch-on-tracer", "message")
    assert plain == diagnostic and len({plain, diagnostic}) == 1
