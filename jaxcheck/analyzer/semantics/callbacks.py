"""The functions JAX runs outside the trace that calls them: host callbacks and Pallas kernels.

A collector (see :mod:`.collectors`): `jax.pure_callback(f, ...)` runs `f` on the host with concrete
values on every call (`ModuleRecords.host_functions`); `pallas_call(kernel, ...)` passes `kernel` mutable
Refs (`ModuleRecords.ref_kernels`). Cost: constant work per call read.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.collectors import Collector
from jaxcheck.analyzer.semantics.syntax import argument
from jaxcheck.analyzer.semantics.values import Value


class CallbackFunctions(Collector):
    """Records the functions of this module that host callbacks run and the Pallas kernels."""

    def call_read(self, node: cst.Call, name: str | None, args: Sequence[Value], called: Value) -> None:
        if name not in jax_api.HOST_CALLBACKS and name not in jax_api.REF_KERNEL_CALLS:
            return
        records = self.interpreter.records
        registry = records.host_functions if name in jax_api.HOST_CALLBACKS else records.ref_kernels
        callee = self.interpreter.callable_key(argument(node, 0, ("callback", "f", "kernel", "body")))
        if callee is not None:
            registry.add(callee)
