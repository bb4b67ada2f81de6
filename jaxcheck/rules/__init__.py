"""Every rule jaxcheck ships, one class per module, grouped by code range:

- `syntax_error` (JAX001): files that do not parse;
- `purity/` (JAX1xx): stale globals, outer-state writes, trace-time side effects and randomness;
- `arrays/` (JAX2xx): in-place updates of JAX arrays, discarded functional updates, out-of-bounds indices;
- `tracing/` (JAX3xx): Python control flow, concretization and shapes on traced values;
- `prng/` (JAX4xx): PRNG key reuse;
- `transforms/` (JAX5xx): transformation misuse.
"""

from jaxcheck.analyzer.rule import Rule
from jaxcheck.rules.arrays.discarded_functional_update import DiscardedFunctionalUpdate
from jaxcheck.rules.arrays.in_place_array_update import InPlaceArrayUpdate
from jaxcheck.rules.arrays.out_of_bounds_index import OutOfBoundsIndex
from jaxcheck.rules.prng.prng_key_reuse import PrngKeyReuse
from jaxcheck.rules.purity.impure_call_in_traced_function import ImpureCallInTracedFunction
from jaxcheck.rules.purity.outer_state_mutation import OuterStateMutation
from jaxcheck.rules.purity.print_in_traced_function import PrintInTracedFunction
from jaxcheck.rules.purity.stale_global_read import StaleGlobalRead
from jaxcheck.rules.syntax_error import SyntaxErrorInSource
from jaxcheck.rules.tracing.python_branch_on_tracer import PythonBranchOnTracer
from jaxcheck.rules.tracing.tracer_concretization import TracerConcretization
from jaxcheck.rules.tracing.value_dependent_shape import ValueDependentShape
from jaxcheck.rules.transforms.transform_in_loop import TransformInLoop

RULES: tuple[type[Rule], ...] = (
    SyntaxErrorInSource,
    StaleGlobalRead,
    OuterStateMutation,
    PrintInTracedFunction,
    ImpureCallInTracedFunction,
    InPlaceArrayUpdate,
    DiscardedFunctionalUpdate,
    OutOfBoundsIndex,
    PythonBranchOnTracer,
    TracerConcretization,
    ValueDependentShape,
    PrngKeyReuse,
    TransformInLoop,
)

__all__ = ["RULES"]
