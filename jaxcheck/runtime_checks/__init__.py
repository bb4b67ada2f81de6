"""The runtime companion: checked `jit`/`grad`/`vmap`/`pmap` that report jaxcheck diagnostics while the
code really runs. Needs JAX (the `runtime` extra); the public entry point is :mod:`jaxcheck.runtime`.

One module per concern: `frames` (the user's source line), `report` (diagnostics, modes), `session`
(the active settings), `forwarder` (generated call wrappers), one module per check, `wrappers` (the
transforms), `patching` (install/uninstall), `runner` (`jaxcheck run`), `pytest_plugin`.
"""
