"""Individual Klavis sandboxes against the fake Klavis API: the runner's classification, the grant an
episode holds (local + individual sandboxes, credentials as the runner's env variables), release on
every way out, a pool that runs dry (infra, never the agent), and a killed run's leftovers released
by the next run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mcpworld.config.schema import KlavisConfig
from mcpworld.core.errors import InfraError, UserError
from mcpworld.core.secrets import redact
from mcpworld.mcp.klavis_catalog import RUNNER_LOCAL_SANDBOX, Classification, Placement, placement
from mcpworld.mcp.klavis_grant import hold
from mcpworld.mcp.klavis_leases import Leases
from tests.fakes.klavis_server import ACCOUNTS, FakeKlavisServer

KEY = "sk-klavis-INDIVIDUAL-5678"


@pytest.fixture
def fake():
    with FakeKlavisServer(token=KEY) as server:
        yield server


@pytest.fixture
def cfg(fake, tmp_path) -> KlavisConfig:
    return KlavisConfig(base_url=fake.base_url, api_key=KEY, ttl_s=900, leases_dir=str(tmp_path / "leases"))


def task_dir(tmp_path: Path, **files: object) -> Path:
    folder = tmp_path / "task"
    folder.mkdir(exist_ok=True)
    for name, data in files.items():
        path = folder / (name.replace("__", "/") + ".json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))
    return folder


@pytest.mark.parametrize(
    "server,kind,name",
    [
        ("filesystem", "local", "filesystem"),
        ("pptx", "local", "powerpoint"),
        ("emails", "local", "poste_email_toolathlon"),
        ("google-cloud", "local", "google_cloud"),
        ("desktop-commander", "local", "desktop-commander"),
        ("code-runner", "local", "code-runner"),
        ("arxiv_local", "local", "arxiv"),
        ("python_execute", "local", "code-executor"),
        ("github", "individual", "github"),
        ("google_sheet", "individual", "google_sheets"),
        ("wandb", "individual", "weights_and_biases"),
        ("arxiv-latex", "individual", "arxiv_latex"),
        # the runner's LOCAL_SANDBOX_SERVERS has 13 names: every other server is an individual sandbox, whatever
        # Klavis's API reference lists for the local sandbox (localmemory, playwright, canvas) or not at all
        ("memory", "individual", "localmemory"),
        ("playwright_with_chunk", "individual", "playwright_with_chunk"),
        ("canvas", "individual", "canvas"),
        ("k8s", "individual", "k8s"),
        ("youtube", "individual", "youtube"),
    ],
)
def test_the_runners_classification_and_name_mappings(server, kind, name):
    assert (placement(server).kind, placement(server).name) == (kind, name)


def test_an_account_that_differs_says_so_in_the_config():
    k = KlavisConfig(
        local_sandbox=[*RUNNER_LOCAL_SANDBOX, "localmemory", "playwright"],
        no_sandbox=["k8s"],
        sandbox_names={"canvas": "canvas_lms"},
    )
    where = Classification.of(k)
    assert where.placement("memory") == Placement("local", "localmemory")
    assert where.placement("playwright_with_chunk") == Placement("local", "playwright")
    assert where.placement("k8s") == Placement("none", "k8s") and not where.placement("k8s").hosted
    assert where.placement("canvas") == Placement("individual", "canvas_lms")
    assert where.differs_from_runner(["filesystem", "memory", "github", "k8s"]) == ["memory", "k8s"]
    assert Classification.of(KlavisConfig()).is_runners() and not where.is_runners()


def test_an_individual_sandbox_klavis_does_not_document_is_still_asked_for(fake, cfg, tmp_path):
    fake.offer_individual("canvas")
    with hold(cfg, ["filesystem", "memory", "canvas"], task_dir(tmp_path), lambda *a, **k: None) as g:
        assert g.local is not None and set(g.local.urls) == {"filesystem"}
        assert {s.server: set(s.urls) for s in g.individual} == {"localmemory": {"memory"}, "canvas": {"canvas"}}
    (create,) = [c for c in fake.calls if c["path"] == "/local-sandbox" and c["method"] == "POST"]
    assert create["json"]["server_names"] == ["filesystem"]
    assert fake.held() == []


def test_a_grant_holds_the_local_and_individual_sandboxes_and_hands_over_the_credentials(fake, cfg, tmp_path):
    events: list[tuple[str, dict]] = []
    with hold(cfg, ["filesystem", "github", "woocommerce"], task_dir(tmp_path), lambda k, **f: events.append((k, f))) as g:
        assert g.local is not None and set(g.local.urls) == {"filesystem"}
        assert {s.server for s in g.individual} == {"github", "woocommerce"}
        assert len(fake.held()) == 3 and len(Leases(cfg.leases_dir).all()) == 3
        assert g.env["KLAVIS_GITHUB_TOKEN"] == ACCOUNTS["github"]["auth_data"]["access_token"]
        for field in ("consumer_key", "consumer_secret", "site_url", "admin_username", "admin_password"):
            assert g.env[f"KLAVIS_WOOCOMMERCE_{field.upper()}"] == ACCOUNTS["woocommerce"]["auth_data"][field]
        urls = json.loads(g.env["KLAVIS_MCP_SERVER_URLS"])
        assert set(urls) == {"filesystem", "github", "woocommerce"} and urls == g.urls
        assert g.env["KLAVIS_API_KEY"] != KEY and KEY not in json.dumps(g.env)  # a flag, not the key
        assert redact(f"token={g.env['KLAVIS_GITHUB_TOKEN']}") == "token=***"
    assert fake.held() == [] and Leases(cfg.leases_dir).all() == []
    acquired = [c for c in fake.calls if c["method"] == "POST" and c["path"].startswith("/sandbox/")]
    assert sorted(c["path"] for c in acquired) == ["/sandbox/github", "/sandbox/woocommerce"]
    assert all(c["json"]["benchmark"] == "Toolathlon" and c["json"]["ttl_seconds"] == 900 for c in acquired)
    assert all(c["headers"]["authorization"] == f"Bearer {KEY}" for c in acquired)
    assert [k for k, _ in events] == ["klavis_sandbox", "klavis_individual", "klavis_individual", "klavis_release"]


def test_notion_and_snowflake_credentials_map_as_the_runner_names_them(fake, cfg, tmp_path):
    with hold(cfg, ["notion", "snowflake"], task_dir(tmp_path), lambda *a, **k: None) as g:
        assert g.local is None
        assert g.env["KLAVIS_NOTION_INTEGRATION_KEY"] == "ntn_fake_key_01"
        assert g.env["KLAVIS_EVAL_NOTION_PAGE_URL"] == "https://notion.so/eval"
        assert g.env["KLAVIS_SNOWFLAKE_PRIVATE_KEY"].startswith("-----BEGIN")
        assert g.env["KLAVIS_SNOWFLAKE_SCHEMA"] == "PUBLIC"
    assert fake.held() == []


def test_the_task_initial_state_seeds_the_sandbox_and_the_emails_account_is_asked_for(fake, cfg, tmp_path):
    state = {"repos": [{"name": "demo", "files": {"README.md": "hi"}}]}
    folder = task_dir(tmp_path, klavis_initial_state__github=state, emails_config={"email": "ann@mcp.com"})
    with hold(cfg, ["emails", "github"], folder, lambda *a, **k: None) as g:
        (github,) = g.individual
        assert fake.individual[github.id]["initialized"] == state
    (create,) = [c for c in fake.calls if c["path"] == "/local-sandbox" and c["method"] == "POST"]
    assert create["json"]["server_names"] == ["poste_email_toolathlon"]
    assert create["json"]["test_account_email"] == "ann@mcp.com"


@pytest.mark.parametrize("way_out", [RuntimeError("agent blew up"), KeyboardInterrupt()])
def test_every_way_out_releases_everything(fake, cfg, tmp_path, way_out):
    with pytest.raises(type(way_out)), hold(cfg, ["filesystem", "github"], task_dir(tmp_path), lambda *a, **k: None):
        assert len(fake.held()) == 2
        raise way_out
    assert fake.held() == [] and Leases(cfg.leases_dir).all() == []


def test_a_sandbox_that_cannot_be_acquired_is_infra_and_releases_what_was_acquired(fake, cfg, tmp_path):
    fake.dry.add("github")
    with (
        pytest.raises(InfraError) as err,
        hold(cfg, ["filesystem", "woocommerce", "github"], task_dir(tmp_path), lambda *a, **k: None),
    ):
        pytest.fail("the episode must not start without its github sandbox")
    assert not isinstance(err.value, UserError)
    assert "409" in str(err.value) and "/sandbox/github" in str(err.value) and KEY not in str(err.value)
    assert fake.held() == [] and Leases(cfg.leases_dir).all() == []


def test_a_sandbox_without_its_credentials_is_infra_and_released(fake, cfg, tmp_path):
    fake.accounts["github"] = {"auth_data": {}, "metadata": {}}
    with pytest.raises(InfraError, match="sent no credentials"), hold(cfg, ["github"], task_dir(tmp_path), lambda *a, **k: None):
        pass
    assert fake.held() == []


def test_a_server_the_account_does_not_host_is_a_user_error_before_anything_is_acquired(fake, cfg, tmp_path):
    cfg.no_sandbox = ["k8s"]
    with (
        pytest.raises(UserError, match=r"'k8s'.*env\.klavis\.no_sandbox"),
        hold(cfg, ["filesystem", "k8s"], task_dir(tmp_path), lambda *a, **k: None),
    ):
        pass
    assert fake.calls == []


HOLDER = """
import sys, time
from mcpworld.config.schema import KlavisConfig
from mcpworld.mcp.klavis_grant import hold
cfg = KlavisConfig(base_url=sys.argv[1], api_key=sys.argv[2], leases_dir=sys.argv[3])
with hold(cfg, ["filesystem", "github"], sys.argv[4], lambda *a, **k: None):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_killed_runs_sandboxes_are_released_by_the_next_run(fake, cfg, tmp_path):
    folder = task_dir(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, fake.base_url, KEY, cfg.leases_dir, str(folder)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        left = fake.held()
        assert len(left) == 2
        os.kill(proc.pid, signal.SIGKILL)  # no finally, no atexit: the sandboxes stay occupied
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert fake.held() == left and len(Leases(cfg.leases_dir).all()) == 2
    events: list[tuple[str, dict]] = []
    with hold(cfg, ["filesystem"], folder, lambda k, **f: events.append((k, f))) as g:
        assert fake.held() == [g.local.id]  # the leftovers are gone, ours is held
    assert fake.held() == [] and Leases(cfg.leases_dir).all() == []
    (leftovers,) = [f for k, f in events if k == "klavis_leftovers"]
    assert sorted(leftovers["released"]) == sorted(left)


def test_the_credentials_go_to_the_preprocess_step_and_the_grader_only():
    """Never the desktop: the agent's shell and apps get no KLAVIS_* variable (env.extra_env stays
    empty); the preprocess command and the grader each get them as their own environment."""
    from mcpworld.core.task import Task
    from mcpworld.core.task_parts import ScriptGrader
    from mcpworld.mcp.klavis_grant import Grant

    grant = Grant(env={"KLAVIS_GITHUB_TOKEN": "ghp_secret"})
    mkdir = {"execute": {"command": ["mkdir", "-p", "/workspace"]}}
    preprocess = {"execute": {"command": "python -m pre", "shell": True, "timeout": 300, "preprocess": True}}
    task = Task(
        id="t",
        app="toolathlon",
        instruction="x",
        dir=Path("/t"),
        source=Path("/t/task_config.json"),
        setup=[mkdir, preprocess],
        grader=ScriptGrader(Path("/t/evaluation/main.py"), module="eval"),
    )
    ran = grant.task(task)
    assert ran.setup[0].raw == mkdir and ran.setup[1].raw["execute"]["env"] == {"KLAVIS_GITHUB_TOKEN": "ghp_secret"}
    assert ran.grader is not None and ran.grader.env == {"KLAVIS_GITHUB_TOKEN": "ghp_secret"}
    assert (
        "env" not in task.setup[1].raw["execute"] and task.grader is not None and not task.grader.env
    )  # the loaded task is untouched
