"""`jaxcheck server` stays responsive (issue 31): edits coalesce, checks run off the message thread,
oversized buffers are refused, and the process ends promptly on `exit` and SIGTERM even mid-check.

Checks are counted from the server's `$/logTrace` notifications (one "checking" line per check run), not
inferred from timings. Each test gets a server of its own."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")
pytest.importorskip("pytest_asyncio")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from conftest import checkout_environment  # noqa: E402
from jaxcheck.lsp import MAX_BUFFER_BYTES  # noqa: E402
from test_server import SOURCE  # noqa: E402  (a buffer with findings, some fixable)

TIMEOUT = 60.0
"""Seconds to wait for something the server will do (the machine may be shared and loaded)."""

pytestmark = pytest.mark.asyncio


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "jaxcheck", "server"],
                                              server_env=checkout_environment()))
async def client(lsp_client: LanguageClient, tmp_path: Path) -> AsyncIterator[None]:
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck]\n")
    lsp_client.root = tmp_path  # type: ignore[attr-defined]
    traces: list[str] = []
    lsp_client.traces = traces  # type: ignore[attr-defined]
    lsp_client.feature(types.LOG_TRACE)(lambda params: traces.append(params.message))
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=tmp_path.as_uri()))
    lsp_client.set_trace(types.SetTraceParams(value=types.TraceValue.Messages))
    yield
    if _process(lsp_client).returncode is None:
        await lsp_client.shutdown_session()


def _traces(client: LanguageClient, prefix: str) -> list[str]:
    traces: list[str] = client.traces  # type: ignore[attr-defined]
    return [t for t in traces if t.startswith(prefix)]


def _process(client: LanguageClient) -> asyncio.subprocess.Process:
    process: asyncio.subprocess.Process | None = client._server
    assert process is not None
    return process


async def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def _open(client: LanguageClient, name: str, text: str) -> str:
    path = client.root / name  # type: ignore[attr-defined]
    path.write_text(text)
    uri: str = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    return uri


def _change(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        [types.TextDocumentContentChangeWholeDocument(text=text)]))


async def _published(client: LanguageClient, uri: str, version: int) -> None:
    await _until(lambda: bool(_traces(client, f"checked {uri} (version {version}) in")))
    assert _traces(client, f"checked {uri} (version {version}) in")[-1].endswith(": published")


def _slow_buffer() -> str:
    """Just under the size limit, of densely jitted code: a check of it takes many seconds (50 s on a
    loaded 2-core machine), so the test acts while it runs."""
    unit = "@jax.jit\ndef f{}(x):\n    y = jax.tree_map(lambda a: a, x)\n    if x > 0:\n        return y\n    return x\n\n"
    count = (MAX_BUFFER_BYTES - 20) // len(unit.format(100000))
    return "import jax\n\n" + "".join(unit.format(i) for i in range(count))


async def test_a_burst_of_edits_is_checked_a_few_times_and_a_code_action_after_it_answered(client: LanguageClient) -> None:
    uri = _open(client, "model.py", SOURCE)
    await _published(client, uri, 1)
    start = time.perf_counter()
    for version in range(2, 201):
        _change(client, uri, SOURCE + f"# edit {version}\n", version)
    last = SOURCE.replace("    y = jax.tree_map(lambda a: a, x)\n", "    y = x\n")
    _change(client, uri, last, 201)
    where = types.Range(types.Position(3, 0), types.Position(3, 5))
    await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri=uri), where, types.CodeActionContext(diagnostics=[])))
    answered = time.perf_counter() - start
    await _published(client, uri, 201)
    checks = _traces(client, f"checking {uri}")
    # The open's check, then a few for the 200 edits (2 measured); one check per edit before.
    assert 2 <= len(checks) <= 21, checks
    assert answered < 10.0
    # The newest version won: its findings are the ones shown (JAX601 was in every earlier version).
    codes = [d.code for d in client.diagnostics[uri]]
    assert "JAX301" in codes and "JAX601" not in codes, codes


async def test_code_actions_offer_no_edits_computed_for_an_older_version(client: LanguageClient) -> None:
    uri = _open(client, "model.py", SOURCE)
    await _published(client, uri, 1)
    where = types.Range(types.Position(5, 0), types.Position(5, 40))  # the JAX601 line, which has a fix
    context = types.CodeActionContext(diagnostics=[])
    current = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri=uri), where, context))
    assert any(action.edit is not None for action in current or [])
    # Two edits in a burst: the check of version 3 waits for quiet, so the request meets version 1's findings.
    _change(client, uri, "# moved\n" + SOURCE, 2)
    _change(client, uri, "# moved\n# again\n" + SOURCE, 3)
    stale = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri=uri), where, context))
    assert not stale  # version 1's edits would land two lines too high
    await _published(client, uri, 3)


async def test_requests_are_answered_mid_check_and_exit_ends_the_process_at_once(client: LanguageClient) -> None:
    uri = _open(client, "slow.py", _slow_buffer())
    await _until(lambda: bool(_traces(client, f"checking {uri}")))
    where = types.Range(types.Position(0, 0), types.Position(0, 5))
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri=uri), where, types.CodeActionContext(diagnostics=[])))
    assert actions is not None and len(actions) == 0
    await client.shutdown_async(None)
    assert not _traces(client, f"checked {uri}")  # both were answered while the check ran
    client.exit(None)
    start = time.perf_counter()
    assert await asyncio.wait_for(_process(client).wait(), TIMEOUT) == 0
    assert time.perf_counter() - start < 5.0
    assert not _traces(client, f"checked {uri}")  # the process did not wait for the check


async def test_sigterm_ends_the_server_mid_check(client: LanguageClient) -> None:
    uri = _open(client, "slow.py", _slow_buffer())
    await _until(lambda: bool(_traces(client, f"checking {uri}")))
    _process(client).terminate()
    start = time.perf_counter()
    assert await asyncio.wait_for(_process(client).wait(), TIMEOUT) == -signal.SIGTERM
    assert time.perf_counter() - start < 5.0


async def test_an_oversized_buffer_is_refused_with_a_message_and_not_checked(client: LanguageClient) -> None:
    big = "x = 1\n" * (MAX_BUFFER_BYTES // 6 + 1)
    uri = _open(client, "big.py", big)
    small = _open(client, "small.py", SOURCE)
    await _published(client, small, 1)  # checked after the big buffer would have been
    assert not _traces(client, f"checking {uri}")
    assert len(client.diagnostics[uri]) == 0
    warnings = [m.message for m in client.messages if m.type == types.MessageType.Warning]
    assert warnings == ["jaxcheck: big.py is not checked while it is edited: 1.0 MiB is over the 1 MiB limit "
                        "(`jaxcheck check` checks it)"]
    _change(client, uri, big + "y = 2\n", 2)  # still too large: no second message
    _change(client, uri, SOURCE, 3)
    await _published(client, uri, 3)  # under the limit again: checked
    assert len(_traces(client, f"checking {uri}")) == 1
    assert "JAX601" in [d.code for d in client.diagnostics[uri]]
    assert len([m for m in client.messages if m.type == types.MessageType.Warning]) == 1
