"""mcpworld/data/docker/compose.yaml (Ollama, and the desktop under a profile) and compose.gpu.yaml (Ollama's
GPU): what matters read from the files, then Compose itself accepting the pair merged (docker-compose
from Debian installed when neither it nor `docker compose` is there). Nothing is pulled or started."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from mcpworld.core.paths import DOCKER
from mcpworld.env.docker.image import LOCAL_BASE, ROOT, desktop_tag

pytestmark = pytest.mark.docker

COMPOSE = DOCKER / "compose.yaml"
GPU = DOCKER / "compose.gpu.yaml"
MODEL = ROOT / "mcpworld" / "conf" / "model" / "qwen3vl" / "variants.yaml"  # what every Qwen3-VL size shares


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def ports(service: dict) -> set[tuple[str, int, int]]:
    """(host ip, host port, container port) of each published port, short or long syntax."""
    out = set()
    for p in service.get("ports", []):
        if isinstance(p, dict):
            out.add((p.get("host_ip", ""), int(p["published"]), int(p["target"])))
        else:
            ip, host, container = str(p).split("/")[0].rsplit(":", 2)
            out.add((ip, int(host), int(container)))
    return out


def default(value: str) -> str:
    """A ``${VAR:-default}`` string's default."""
    assert value.startswith("${") and ":-" in value, value
    return value[value.index(":-") + 2 : -1]


def test_ollama_is_pinned_on_loopback_with_its_models_in_a_volume_and_a_healthcheck():
    ollama = load(COMPOSE)["services"]["ollama"]
    repo, _, tag = ollama["image"].partition(":")
    assert repo == "ollama/ollama" and tag and tag != "latest"
    assert ports(ollama) == {("127.0.0.1", 11434, 11434)}
    assert "ollama-models:/root/.ollama" in ollama["volumes"]
    assert "ollama-models" in load(COMPOSE)["volumes"]
    assert "ollama" in ollama["healthcheck"]["test"]
    assert ollama["restart"] == "unless-stopped"
    assert "profiles" not in ollama  # a plain `up -d` starts it
    # the server's context is the Qwen3-VL configs' (the job's preflight stops when Ollama serves less)
    assert int(default(ollama["environment"]["OLLAMA_CONTEXT_LENGTH"])) == load(MODEL)["model"]["context_length"]


def test_the_desktop_is_the_builders_image_on_loopback_behind_a_profile():
    desktop = load(COMPOSE)["services"]["desktop"]
    assert desktop["profiles"] == ["desktop"]
    # the default is what `python -m mcpworld.env.docker.image` (no apps, the local Debian base) prints
    assert default(desktop["image"]) == desktop_tag([], LOCAL_BASE)
    assert desktop["pull_policy"] == "never"
    assert ports(desktop) == {("127.0.0.1", 5904, 5904), ("127.0.0.1", 6080, 6080)}


def test_the_gpu_override_reserves_every_nvidia_gpu_for_ollama():
    services = load(GPU)["services"]
    assert set(services) == {"ollama"}
    (device,) = services["ollama"]["deploy"]["resources"]["reservations"]["devices"]
    assert device == {"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}


def compose_cli() -> list[str]:
    """`docker compose` (v2) or `docker-compose` (v1); Debian's docker-compose installed when neither
    is there and this runs as root."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose") is None and os.geteuid() == 0 and shutil.which("apt-get"):
        from mcpworld.core.errors import InfraError
        from mcpworld.env.docker.image import _apt_install

        try:
            _apt_install("docker-compose")
        except InfraError as exc:
            pytest.skip(f"neither `docker compose` nor docker-compose, and installing it failed: {exc}")
    if shutil.which("docker-compose") is None:
        pytest.skip("neither `docker compose` nor docker-compose is installed (and this is not root with apt)")
    return ["docker-compose"]


def test_compose_accepts_both_files_alone_and_merged():
    cli = compose_cli()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MCPWORLD_DESKTOP_IMAGE", "OLLAMA_CONTEXT_LENGTH", "MCPWORLD_SCREEN", "COMPOSE_PROFILES", "COMPOSE_FILE")
    }
    files = ["-f", str(COMPOSE), "-f", str(GPU)]

    def run(*args: str) -> str:
        done = subprocess.run([*cli, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
        assert done.returncode == 0, f"{' '.join(cli + list(args))}: {done.stderr}"
        return done.stdout

    alone = run("-f", str(COMPOSE), "config")
    assert "deploy" not in yaml.safe_load(alone)["services"]["ollama"]
    merged = yaml.safe_load(run(*files, "--profile", "desktop", "config"))  # v2 leaves out inactive profiles
    ollama = merged["services"]["ollama"]
    (device,) = ollama["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"] and str(device["count"]) in ("all", "-1")
    assert ports(ollama) == {("127.0.0.1", 11434, 11434)}
    assert ports(merged["services"]["desktop"]) == {("127.0.0.1", 5904, 5904), ("127.0.0.1", 6080, 6080)}
    # (which services a plain `up` starts is read from the file above: docker-compose 1.29's
    # `config --services` lists every service whatever the profiles)
