"""The one semantic model of JAX tracing that every rule asks.

- :mod:`.jax_api`: what JAX's API does (which calls trace a function, which return static values).
- :mod:`.scopes`: Python scopes, bindings and import-qualified names, resolved in the model's own pass.
- :mod:`.values`: abstract values (which parameters a value depends on, whether it is a boolean mask).
- :mod:`.shapes`: certain array shapes read from literals, and constant indices out of range of them.
- :mod:`.summary`: per-module summaries (functions, trace roots, call edges) that cross files.
- :mod:`.builder`: the single traversal that interprets a module into values and a summary.
- :mod:`.solver`: the fixpoint that decides which functions are traced and which parameters carry tracers.
- :mod:`.prng`: the flow-sensitive PRNG key pass (which keys are consumed twice), run on demand.
- :mod:`.model`: the facade rules query (`is_traced`, `trace_of`, `qualified_name`, ...).

The facade is imported on first use (PEP 562), so the solver and summaries load without LibCST: a run
answered from the project index never imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jaxcheck.analyzer.semantics.model import FunctionTrace, KeyReuse, OutOfBounds, SemanticModel

__all__ = ["FunctionTrace", "KeyReuse", "OutOfBounds", "SemanticModel"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from jaxcheck.analyzer.semantics import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
