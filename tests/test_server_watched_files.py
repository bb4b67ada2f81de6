"""`jaxcheck server` with a client that watches files for it: the project listing is walked again when
the client says a file was created, not on a timer (a real LSP client over stdio, as in test_server.py).

Skipped when pygls or pytest-lsp is not installed (both are in the `test` extra, so CI runs these)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")
pytest.importorskip("pytest_asyncio")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from conftest import checkout_environment  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")

LIBRARY = "def helper(x):\n    if x > 0:\n        return x\n    return -x\n"
IMPORTER = "import jax\nfrom lib import helper\n\nstep = jax.jit(helper)\n"


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "jaxcheck", "server"],
                              server_env=checkout_environment()),
    scope="module",
)
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[None]:
    root = tmp_path_factory.mktemp("watched")
    (root / "pyproject.toml").write_text("[project]\nname = 'watched'\n")
    lsp_client.root = root  # type: ignore[attr-defined]
    registered: list[types.Registration] = []
    lsp_client.registered = registered  # type: ignore[attr-defined]

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        registered.extend(params.registrations)

    capabilities = types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(
        did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True)))
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="watched")]))
    yield
    await lsp_client.shutdown_session()


async def _published(client: LanguageClient, uri: str) -> list[str]:
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return [str(diagnostic.code) for diagnostic in client.diagnostics[uri]]


async def test_a_created_file_the_client_reports_is_seen_at_the_next_edit(client: LanguageClient) -> None:
    root: Path = client.root  # type: ignore[attr-defined]
    registered: list[types.Registration] = client.registered  # type: ignore[attr-defined]
    library = root / "lib.py"
    library.write_text(LIBRARY)
    uri = library.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=LIBRARY)))
    assert await _published(client, uri) == []  # nothing traces `helper` yet
    assert [registration.method for registration in registered] == [types.WORKSPACE_DID_CHANGE_WATCHED_FILES]
    watchers = registered[0].register_options["watchers"]  # type: ignore[index]
    assert {watcher["globPattern"] for watcher in watchers} >= {"**/*.py", "**/.gitignore"}

    importer = root / "main.py"
    importer.write_text(IMPORTER)  # created on disk: the listing walked at open does not hold it yet

    def edit(version: int) -> None:
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [types.TextDocumentContentChangeWholeDocument(text=LIBRARY + "\n" * version)]))

    edit(2)
    assert await _published(client, uri) == []  # no walk on this edit: the client has said nothing
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=importer.as_uri(), type=types.FileChangeType.Created)]))
    edit(3)
    assert await _published(client, uri) == ["JAX301"]  # `main.py` jits `helper`: its `if` is traced
