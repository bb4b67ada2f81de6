"""The README's "In a notebook" session: cells run through IPython's shell with `%load_ext jaxcheck`, printed
as IPython's terminal shows them (`python tests/runtime/notebook_session.py`, from the repository root)."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

CELLS = [
    "%load_ext jaxcheck",
    "import jax\nimport jax.numpy as jnp\nlearning_rate = 0.1",
    "@jax.jit\ndef step(w, key):\n    noise = jax.random.normal(key, w.shape) * 0.01\n"
    "    return w - learning_rate * w + noise",
    "key = jax.random.key(0)\nw = step(jnp.ones(3), key)",
    "learning_rate = 0.01",
    "w = step(w, key)",
    "%jaxcheck status",
    "%jaxcheck off",
]


def main() -> None:
    """Run :data:`CELLS` in order, each echoed after its `In [n]:` prompt, its output below it."""
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    for cell in CELLS:
        first, *rest = cell.splitlines()
        print(f"In [{shell.execution_count}]: {first}")
        for line in rest:
            print(f"   ...: {line}")
        shell.run_cell(cell, store_history=True)
        print()


if __name__ == "__main__":
    main()
