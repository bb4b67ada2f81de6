"""`python -m jaxcheck` runs the command-line interface."""

from jaxcheck.cli import run

if __name__ == "__main__":  # worker processes re-import this module under another name
    run()
