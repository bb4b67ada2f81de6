"""Every rule jaxcheck ships, one class per module, grouped by code range:

- `syntax_error` (JAX001): files that do not parse;
- `tracing/` (JAX3xx): Python control flow, concretization and shapes on traced values.
"""

from jaxcheck.analyzer.rule import Rule
from jaxcheck.rules.syntax_error import SyntaxErrorInSource
from jaxcheck.rules.tracing.python_branch_on_tracer import PythonBranchOnTracer
from jaxcheck.rules.tracing.tracer_concretization import TracerConcretization
from jaxcheck.rules.tracing.value_dependent_shape import ValueDependentShape

RULES: tuple[type[Rule], ...] = (
    SyntaxErrorInSource,
    PythonBranchOnTracer,
    TracerConcretization,
    ValueDependentShape,
)

__all__ = ["RULES"]
