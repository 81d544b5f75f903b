"""KlavisClient against a real local HTTP server speaking the Klavis sandbox API."""

from __future__ import annotations

import io
import logging
import tarfile
from pathlib import Path

import pytest

from mcpworld.core.archives import UnsafeArchive
from mcpworld.core.errors import InfraError, UserError
from mcpworld.mcp.klavis import KLAVIS_NAMES, MISSING_KEY, KlavisClient, Sandbox
from tests.fakes.klavis_server import FakeKlavisServer
from tests.fakes.scripted_server import free_port

KEY = "sk-klavis-SECRET-1234"


@pytest.fixture
def fake():
    with FakeKlavisServer(token=KEY) as server:
        yield server


@pytest.fixture
async def client(fake: FakeKlavisServer):
    c = KlavisClient(base_url=fake.base_url, api_key=KEY, retry_base_s=0.001, ttl_s=600)
    yield c
    await c.aclose()


def tarball(*members: tuple[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


async def test_acquire_maps_names_and_sends_benchmark_ttl_and_bearer(fake, client):
    sandbox = await client.acquire(["filesystem", "pptx", "memory", "python_execute", "arxiv_local"])
    [call] = fake.api_calls("POST")
    assert call["path"] == "/local-sandbox"
    assert call["headers"]["authorization"] == f"Bearer {KEY}"
    assert sorted(call["json"]["server_names"]) == ["arxiv", "code-executor", "filesystem", "localmemory", "powerpoint"]
    assert call["json"]["benchmark"] == "Toolathlon"
    assert call["json"]["ttl_seconds"] == 600
    assert sandbox.id in fake.sandboxes
    assert set(sandbox.urls) == {"filesystem", "pptx", "memory", "python_execute", "arxiv_local"}
    assert sandbox.urls["pptx"] == f"http://127.0.0.1:{fake.port}/powerpoint/mcp/?local_sandbox_id={sandbox.id}"
    assert sandbox.urls["memory"].startswith(f"http://127.0.0.1:{fake.port}/localmemory/mcp/")


async def test_acquire_uses_the_urls_the_service_returns():
    with FakeKlavisServer(token=KEY, urls={"git": "https://sbx.example/git/mcp/?local_sandbox_id={id}"}) as fake:
        c = KlavisClient(base_url=fake.base_url, api_key=KEY)
        try:
            sandbox = await c.acquire(["git"])
        finally:
            await c.aclose()
    assert sandbox.urls == {"git": f"https://sbx.example/git/mcp/?local_sandbox_id={sandbox.id}"}


async def test_upload_initialize_dump_round_trip_without_auth_on_signed_urls(fake, client, tmp_path):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "notes.txt").write_text("before")
    (ws / "sub" / "data.csv").write_text("a,b\n1,2\n")
    sandbox = await client.acquire(["filesystem"])
    await client.upload_workspace(sandbox, ws)

    remote = fake.workspace(sandbox.id)
    assert (remote / "notes.txt").read_text() == "before"
    assert (remote / "sub" / "data.csv").read_text() == "a,b\n1,2\n"
    (remote / "notes.txt").write_text("after")  # what the agent did in the sandbox
    (remote / "new.md").write_text("created remotely")

    dest = tmp_path / "back"
    names = await client.dump(sandbox, dest)
    assert (dest / "notes.txt").read_text() == "after"
    assert (dest / "new.md").read_text() == "created remotely"
    assert "sub/data.csv" in names

    signed = fake.api_calls(prefix="/signed/")
    assert [(c["method"], c["path"].split("/")[2]) for c in signed] == [("PUT", "upload"), ("GET", "download")]
    assert all("authorization" not in c["headers"] for c in signed)
    assert [c["path"].rsplit("/", 1)[-1] for c in fake.api_calls("POST")][1:] == ["upload-url", "initialize"]


async def test_session_releases_on_error_and_release_twice_is_harmless(fake, client, tmp_path):
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(RuntimeError, match="agent blew up"):
        async with client.session(["terminal"], tmp_path) as sandbox:
            assert (fake.workspace(sandbox.id) / "f.txt").read_text() == "x"
            raise RuntimeError("agent blew up")
    assert fake.releases == 1
    assert fake.sandboxes[sandbox.id]["status"] == "deleted"
    await client.release(sandbox)
    await client.release(sandbox)
    assert fake.releases == 1
    assert len(fake.api_calls("DELETE")) == 1


async def test_session_releases_on_normal_exit(fake, client):
    async with client.session(["git"]) as sandbox:
        assert fake.releases == 0
    assert fake.releases == 1 and fake.sandboxes[sandbox.id]["status"] == "deleted"


async def test_release_never_raises(fake, client, caplog):
    fake.fail_next(status=500, times=10)
    with caplog.at_level(logging.WARNING, logger="mcpworld.mcp.klavis"):
        await client.release(Sandbox(id="abc", urls={}))
    assert "abc" in caplog.text and KEY not in caplog.text
    assert len(fake.api_calls("DELETE")) == 3  # first try + 2 retries


async def test_missing_key_is_a_user_error(fake, monkeypatch):
    monkeypatch.delenv("KLAVIS_API_KEY", raising=False)
    c = KlavisClient(base_url=fake.base_url)
    with pytest.raises(UserError) as err:
        await c.acquire(["filesystem"])
    assert str(err.value) == MISSING_KEY
    assert fake.calls == []
    await c.aclose()


async def test_key_from_environment(fake, monkeypatch):
    monkeypatch.setenv("KLAVIS_API_KEY", KEY)
    c = KlavisClient(base_url=fake.base_url)
    try:
        assert (await c.acquire(["git"])).urls
    finally:
        await c.aclose()


async def test_rejected_key_is_a_user_error_without_the_key(fake):
    wrong = "sk-klavis-WRONG-987654"
    c = KlavisClient(base_url=fake.base_url, api_key=wrong, retry_base_s=0.001)
    with pytest.raises(UserError) as err:
        await c.acquire(["filesystem"])
    await c.aclose()
    assert "rejected" in str(err.value) and "401" in str(err.value)
    assert wrong not in str(err.value) and "WRONG" not in str(err.value)
    assert fake.calls[0]["headers"]["authorization"] == f"Bearer {wrong}"
    assert len(fake.calls) == 1  # not retried


async def test_unreachable_url_is_infra_error_naming_it():
    url = f"http://127.0.0.1:{free_port()}"
    c = KlavisClient(base_url=url, api_key=KEY, retry_base_s=0.001)
    with pytest.raises(InfraError) as err:
        await c.acquire(["filesystem"])
    await c.aclose()
    assert not isinstance(err.value, UserError)
    assert url in str(err.value) and KEY not in str(err.value)


async def test_503_then_success_is_retried(fake, client):
    fake.fail_next(status=503, times=2)
    sandbox = await client.acquire(["excel", "word"])
    assert set(sandbox.urls) == {"excel", "word"}
    assert len(fake.api_calls("POST")) == 3
    assert len(fake.sandboxes) == 1


async def test_503_forever_is_infra_error_with_status_and_body(fake, client):
    fake.fail_next(status=503, times=100)
    with pytest.raises(InfraError) as err:
        await client.acquire(["excel"])
    assert "503" in str(err.value) and "scripted failure 503" in str(err.value)
    assert len(fake.api_calls("POST")) == 3


async def test_storage_failure_hides_the_signature(fake, client, tmp_path):
    (tmp_path / "a.txt").write_text("a")
    sandbox = await client.acquire(["filesystem"])
    fake.fail_next(status=500, times=100, path="/signed/")
    with pytest.raises(InfraError) as err:
        await client.upload_workspace(sandbox, tmp_path)
    assert "500" in str(err.value) and "/signed/upload/" in str(err.value)
    assert fake.signature not in str(err.value)
    assert not fake.api_calls("POST", prefix=f"/local-sandbox/{sandbox.id}/initialize")


async def test_unknown_server_name_is_a_user_error_listing_offered(fake, client):
    with pytest.raises(UserError) as err:
        await client.acquire(["filesystem", "github"])
    msg = str(err.value)
    assert "'github'" in msg
    assert all(name in msg for name in KLAVIS_NAMES)
    assert fake.calls == []


async def test_server_in_error_state_is_infra_error_and_sandbox_released():
    with FakeKlavisServer(token=KEY, server_status={"pdf-tools": "error"}) as fake:
        c = KlavisClient(base_url=fake.base_url, api_key=KEY)
        try:
            with pytest.raises(InfraError) as err:
                await c.acquire(["filesystem", "pdf-tools"])
        finally:
            await c.aclose()
        assert "pdf-tools" in str(err.value) and not isinstance(err.value, UserError)
        assert fake.releases == 1


@pytest.mark.parametrize("evil", ["../evil", "/tmp/klavis-abs-evil"])
async def test_unsafe_dump_is_refused(fake, client, tmp_path, evil):
    sandbox = await client.acquire(["filesystem"])
    fake.dump_override = tarball(("ok.txt", b"fine"), (evil, b"pwned"))
    dest = tmp_path / "dest"
    with pytest.raises(UnsafeArchive):
        await client.dump(sandbox, dest)
    assert not (tmp_path / "evil").exists()
    assert not Path("/tmp/klavis-abs-evil").exists()
    assert not (dest / "ok.txt").exists()  # refused before anything was written
