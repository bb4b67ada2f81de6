"""How to install an optional part of jaxcheck, for the messages that ask for it (a leaf module: anything
may import it). No release is on PyPI yet, so `pip install 'jaxcheck[server]'` would fetch nothing, or
someone else's package: the hint names the extra's own requirements (as pyproject.toml lists them; a test
keeps them the same) and how to install the extra from a checkout."""

from __future__ import annotations

REQUIREMENTS = {
    "server": ("pygls>=2.0", "lsprotocol>=2024.0.0"),
    "runtime": ("jax>=0.10",),
}
"""Each optional extra's requirements, without their environment markers."""
_NOTES = {"runtime": "Python 3.11 or newer; "}


def install_hint(extra: str) -> str:
    """`pip install 'jax>=0.10' (Python 3.11 or newer; in a jaxcheck checkout: pip install '.[runtime]')`."""
    requirements = " ".join(f"'{requirement}'" for requirement in REQUIREMENTS[extra])
    return f"pip install {requirements} ({_NOTES.get(extra, '')}in a jaxcheck checkout: pip install '.[{extra}]')"
