"""The model's work, counted in interpreter steps, and the budgets that bound it.

A step is a unit of work of amortised constant cost: interpreting one expression or statement, joining
one name of two environments, rewriting one dependency node under a guard, one evaluation or one
propagation along a call edge in the project solve, one statement or expression of the PRNG analysis.
The count is deterministic (the same program costs the same steps on every machine), which is what
the step-count test (`tests/test_scaling.py`) measures on generated programs of doubling size.

Budgets: interpreting one function body may take at most :data:`FUNCTION_STEPS` steps and one file at
most :data:`FILE_STEPS`. A function whose budget is spent is *cut*: what was recorded about it is
dropped and its facts become unknown, which means silence (no finding in it, nothing traced through
its return value), never a guess. The run names the cut functions in a note.
The limits are well above what real code needs (of the 2,400 files of the two corpora, the costliest
function takes 49k steps and the costliest file 194k: `mujoco_warp/_src/constraint.py`, 5,796 lines)
and keep the interpretation of any one file to a few seconds (about 200k steps a second).
"""

from __future__ import annotations

FUNCTION_STEPS = 200_000
"""At most this many steps to interpret one function body (nested functions have their own)."""
FILE_STEPS = 1_000_000
"""At most this many steps to interpret one file; the functions left when it is spent are cut."""
FIXPOINT_DEPTH = 4
"""Loops nested deeper than this interpret their body once, without following loop-carried facts into
the next iteration (less is known there, so less is reported): a loop's fixpoint re-runs the loops inside
it, so without this bound the work would grow as (passes per loop)^(nesting depth)."""


class BudgetSpent(Exception):
    """Raised inside the interpreter when the current function's or file's budget is spent."""


class StepCounter:
    """Counts steps process-wide (what the step-count test reads)."""

    def __init__(self) -> None:
        self.total = 0

    def spend(self, steps: int = 1) -> None:
        """Count `steps` more."""
        self.total += steps


STEPS = StepCounter()
"""The process-wide count of the model's steps."""


class Budget:
    """The steps left to the file being interpreted and to its current function body."""

    def __init__(self) -> None:
        self.file_left = FILE_STEPS
        self.function_steps = self.function_left = FUNCTION_STEPS

    def spend(self, steps: int = 1) -> None:
        """Spend `steps`; raise :class:`BudgetSpent` once the function's or the file's budget is gone."""
        STEPS.total += steps
        self.file_left -= steps
        self.function_left -= steps
        if self.function_left < 0 or self.file_left < 0:
            raise BudgetSpent

    def enter_function(self) -> int:
        """Start a function body with a full function budget; returns what the enclosing body had left."""
        outer, self.function_left = self.function_left, self.function_steps
        return outer

    def leave_function(self, outer: int) -> None:
        """Back in the enclosing body, with what it had left."""
        self.function_left = outer
