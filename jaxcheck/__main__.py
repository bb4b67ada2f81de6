"""`python -m jaxcheck` runs the command-line interface."""

from jaxcheck.cli import run

run()
