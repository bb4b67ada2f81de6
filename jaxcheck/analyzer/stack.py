"""Running work on a thread with a deep stack (LibCST and the model recurse as deep as the input nests).

Kept apart from :mod:`.parsing` so that callers that never parse (a run answered from the project
index) do not import LibCST.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

DEEP_STACK_BYTES = 512 * 1024 * 1024
DEEP_RECURSION_LIMIT = 100_000

T = TypeVar("T")


def run_with_deep_stack(function: Callable[[], T]) -> T:
    """Run `function` on a thread with a 512 MiB stack and a high recursion limit; re-raise its error.

    The stack is reserved virtually, so only what deep inputs actually use is ever touched.
    """
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(function())
        except BaseException as exc:  # handed to the caller's thread unchanged
            error.append(exc)

    previous_stack = threading.stack_size(DEEP_STACK_BYTES)
    previous_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous_limit, DEEP_RECURSION_LIMIT))
    try:
        # A daemon: when a signal ends the caller's wait, the process can exit without finishing it.
        worker = threading.Thread(target=target, name="jaxcheck-deep-stack", daemon=True)
        worker.start()
        worker.join()
    finally:
        threading.stack_size(previous_stack)
        sys.setrecursionlimit(previous_limit)
    if error:
        raise error[0]
    return result[0]
