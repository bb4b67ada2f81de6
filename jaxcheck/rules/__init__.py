"""Every rule jaxcheck ships, one class per module, grouped by code range:

- `syntax_error` (JAX001): files that do not parse;
- `unused_noqa` (JAX002, off by default): `# noqa` codes that suppress nothing;
- `purity/` (JAX1xx): stale globals, outer-state writes, trace-time side effects and randomness;
- `arrays/` (JAX2xx): in-place updates of JAX arrays, discarded functional updates, out-of-bounds indices;
- `tracing/` (JAX3xx): Python control flow, concretization and shapes on traced values;
- `prng/` (JAX4xx): PRNG key reuse;
- `transforms/` (JAX5xx): transformation misuse;
- `api/` (JAX6xx): APIs that JAX has removed;
- `opinions/` (JAX9xx, off by default): 64-bit dtypes without x64, unsynchronized timing, legacy PRNG keys.
"""

from jaxcheck.analyzer.rule import Rule
from jaxcheck.rules.api.removed_jax_api import RemovedJaxApi
from jaxcheck.rules.arrays.discarded_functional_update import DiscardedFunctionalUpdate
from jaxcheck.rules.arrays.in_place_array_update import InPlaceArrayUpdate
from jaxcheck.rules.arrays.out_of_bounds_index import OutOfBoundsIndex
from jaxcheck.rules.opinions.float64_without_x64 import Float64WithoutX64
from jaxcheck.rules.opinions.legacy_prng_key import LegacyPrngKey
from jaxcheck.rules.opinions.unsynchronized_timing import UnsynchronizedTiming
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
from jaxcheck.rules.unused_noqa import UnusedNoqa

RULES: tuple[type[Rule], ...] = (
    SyntaxErrorInSource,
    UnusedNoqa,
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
    RemovedJaxApi,
    Float64WithoutX64,
    UnsynchronizedTiming,
    LegacyPrngKey,
)

__all__ = ["RULES"]
