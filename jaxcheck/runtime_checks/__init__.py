"""The runtime companion: checked `jit`/`grad`/`vmap`/`pmap` that report jaxcheck diagnostics while the
code really runs. Needs JAX (the `runtime` extra); the public entry point is :mod:`jaxcheck.runtime`.

One module per concern: `frames` (the user's source line), `report` (diagnostics, modes), `session`
(the active settings), `traced_body` (the one function JAX traces per user function, and the hooks that
run during JAX's own traces), `forwarder` (what users call), `checked` (a checked jit or pmap object),
`jaxprs` and `instrumented` (the program JAX traced, evaluated with checks), one module per check,
`wrappers` (the transforms), `patching` (install/uninstall), `runner` (`jaxcheck run`), `pytest_plugin`.
"""
