# Two commands do everything on a fresh Debian machine (as root): `make run` and `make test`.
# Both install what is missing (apt packages, the venv) and are no-ops when it is there. While you work:
# `make test-fast` (only the venv; any user; < 3 min) and `make lint` (ruff + mypy, run by CI first).
VENV       := .venv
PY         := $(VENV)/bin/python
# Debian's interpreter: the desktop account (setup commands, the agent's python tools, graders'
# helpers) runs the venv's python too, and one under /root (e.g. pyenv's) is closed to it.
BASE_PY    := /usr/bin/python3
# python3-pyatspi + at-spi2-core: the accessibility_tree getter (run by Debian's /usr/bin/python3).
# tesseract-ocr: the compare_image_text metric (OCR of a screenshot the agent saved).
# xsel: OSWorld's tasks read the desktop's clipboard with `xsel --clipboard --output`.
# wmctrl: OSWorld's VM server lists and activates windows with it (env=vm's tests run that server's API here).
# slirp4netns: an isolated env=local desktop's way out to the internet (docs/isolation.md).
# x11-xserver-utils: xhost, which an agent's shell may run to open its display (tests/security/test_x_auth.py).
# iptables: the fence that keeps it (and env=docker's containers) off the host's own addresses; env.network=isolated,
# the default, refuses to run a desktop without it (docs/isolation.md).
# nautilus … python3-pysrt: programs OSWorld's own tasks run in their setup or grader (its VM has them):
# 358 of test_all's 369 run here with them, 336 without (tests/tasks/test_suite_census.py).
# gsettings + GNOME's desktop schemas + dconf: OSWorld's os tasks set and read org.gnome.desktop.*
# keys (dconf keeps them across processes, in the episode home); bc: their checks compute with it.
APT_PKGS   := xvfb openbox mousepad xterm pcmanfm rsync dbus dbus-x11 xdotool scrot x11-utils \
              fonts-dejavu-core python3-venv make python3-pyatspi at-spi2-core libatk-adaptor \
              tesseract-ocr xsel libglib2.0-bin gsettings-desktop-schemas dconf-service \
              dconf-gsettings-backend bc wmctrl slirp4netns iptables x11-xserver-utils \
              nautilus gnome-terminal desktop-file-utils pulseaudio pulseaudio-utils sysstat expect python3-pysrt

.PHONY: setup apt venv servers apps toolathlon run lint test test-fast bench clean pccanary-symbols

setup: apt venv servers apps

apt:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing desktop packages (missing:$$missing)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(APT_PKGS) >/dev/null; \
	fi

venv:
	@grep -qx "home = /usr/bin" $(VENV)/pyvenv.cfg 2>/dev/null || rm -rf $(VENV)
	@$(MAKE) --no-print-directory $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || $(BASE_PY) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test,lint,slurm,ray]"
	@touch $@

# The catalog's local MCP servers at pinned versions (mcpworld/conf/mcp/default.yaml), each in its own venv
# (npm ones in one prefix) under .mcp-servers/; Node.js comes from apt when it is missing.
servers: venv
	@command -v npm >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null; }
	$(PY) -m mcpworld.mcp.install

# Toolathlon's graders and preprocess scripts: a venv (.toolathlon-python/) on Python 3.12 when the
# machine has one (upstream pins 3.12), with what they import; toolathlon.python=PATH overrides it.
# patchelf: a copied shared-library Python (pyenv's, closed under /root) is pointed at its own libpython.
toolathlon: venv
	@command -v patchelf >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends patchelf >/dev/null; }
	$(PY) -m mcpworld.tasks.toolathlon --prepare

# The desktop applications of mcpworld/conf/app/*.yaml (LibreOffice, Chromium, GIMP, VLC, Thunderbird …), from
# apt; `make apps APPS="gimp vlc"` installs only those.
apps: venv
	$(PY) -m mcpworld.apps $(APPS)

# PC-Canary's GIMP hooks look their functions up in gimp-2.10's own symbol table, which Debian strips: this
# writes GIMP's exported functions into a .symtab of a diverted copy of Debian's binary (root; not part of
# setup or CI; `mcpworld/data/scripts/pccanary-symbols.sh remove` restores the package's file).
# See docs/pccanary_certificate.md (GIMP).
pccanary-symbols:
	mcpworld/data/scripts/pccanary-symbols.sh install

# The demo sweep: every built-in task at square and rect, replayed by the oracle, logged to outputs/mlflow.db.
run: setup
	$(PY) -m mcpworld experiment=demo

# The static gate: ruff (correctness, import order, line length) and mypy (reads [tool.mypy] in pyproject.toml).
lint: venv
	$(PY) -m ruff format --check mcpworld tests benchmarks
	$(PY) -m ruff check mcpworld tests benchmarks
	$(PY) -m mypy

# The whole test suite, desktop and slow tests included.
test: setup
	$(PY) -m pytest -q

# The fast tier: what needs only the venv, no root, apt packages, display, Docker or scheduling engine
# (SLURM, Ray): any user on a bare machine runs it, in under 3 minutes on 2 cores. Two xdist workers
# (FAST_WORKERS=0 runs it in one process); `make test` stays the whole suite.
FAST_MARKERS := not desktop and not slow and not docker and not engines
FAST_WORKERS ?= 2
test-fast: venv
	$(PY) -m pytest -q -n $(FAST_WORKERS) -m "$(FAST_MARKERS)"

bench: setup
	$(PY) benchmarks/step_overhead.py
	$(PY) benchmarks/mcp_overhead.py
	$(PY) benchmarks/tracking_overhead.py
	$(PY) benchmarks/concurrency.py
	$(PY) benchmarks/reset_to_ready.py
	$(PY) benchmarks/sweep_throughput.py

clean:
	rm -rf outputs
