# The mcpworld desktop in a container. Two uses:
# - env=docker: the harness starts one container per desktop running the desktop service
#   (python -m mcpworld.env.docker.service as root; apps, setup commands and the agent's shell as mcpworld-d0).
# - standalone (the default command): Xvfb :4 with openbox, VNC on 5904 and noVNC on 6080, for watching.
# The base is a build argument: ubuntu:22.04 for users; tests use a Debian base imported locally (no
# registry is reachable there). The apps are another: the Debian packages of the chosen app configs.
# Built by `python -m mcpworld.env.docker.image [APP …]`, from a context of the mcpworld package (its data/:
# this file, scripts/ …; never data/tasks nor data/solutions: the agent is root here with sudo and must not read
# the answers), this machine's .apps and its CA bundle (host-ca.crt).
ARG BASE=ubuntu:22.04
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
# what a desktop needs of the system (the Makefile's APT_PKGS), VNC and noVNC, sudo, Python for the service
RUN apt-get update \
 && apt-get install -y --no-install-recommends xvfb openbox x11vnc novnc websockify xterm mousepad pcmanfm \
      rsync dbus dbus-x11 xdotool scrot x11-utils fonts-dejavu-core xfonts-base python3 python3-venv python3-pyatspi \
      at-spi2-core libatk-adaptor xsel libglib2.0-bin gsettings-desktop-schemas dconf-service \
      dconf-gsettings-backend bc sudo ca-certificates procps util-linux \
 && rm -rf /var/lib/apt/lists/*
# The desktop account: mcpworld's first desktop account, with a uid no host account is likely to have
# (the home is bind-mounted from the host and owned by it). It may use sudo with OSWorld's password.
RUN groupadd --gid 61000 mcpworld-d0 \
 && useradd --uid 61000 --gid 61000 --create-home --home-dir /home/user --shell /bin/bash mcpworld-d0 \
 && echo 'mcpworld-d0:password' | chpasswd \
 && echo 'mcpworld-d0 ALL=(ALL:ALL) ALL' > /etc/sudoers.d/mcpworld && chmod 0440 /etc/sudoers.d/mcpworld
# The apps. Then the system's font cache made afresh: left stale, every program that uses fontconfig
# rescans the fonts at start (homes are fresh each episode), and openbox then answers new windows
# only after about 5 s, sometimes never (seen as xterm taking 5 s and Mousepad's window never mapped).
# Chromium's own sandbox needs user namespaces, which Docker's seccomp profile refuses: in here the
# container is the sandbox, so Debian's chromium wrapper is told --no-sandbox (it reads /etc/chromium.d).
ARG APT_PACKAGES=""
RUN if [ -n "$APT_PACKAGES" ]; then apt-get update \
      && apt-get install -y --no-install-recommends $APT_PACKAGES && rm -rf /var/lib/apt/lists/*; fi \
 && fc-cache -f \
 && mkdir -p /etc/chromium.d \
 && echo 'export CHROMIUM_FLAGS="$CHROMIUM_FLAGS --no-sandbox"' > /etc/chromium.d/mcpworld-container
# host-ca.crt: the building machine's CA bundle, for pip only (a proxy with its own CA before PyPI)
COPY mcpworld/data/docker/service-requirements.txt host-ca.crt /opt/mcpworld/
RUN python3 -m venv /opt/mcpworld/.venv \
 && if [ -s /opt/mcpworld/host-ca.crt ]; then export PIP_CERT=/opt/mcpworld/host-ca.crt; fi \
 && /opt/mcpworld/.venv/bin/pip install -q --no-cache-dir -r /opt/mcpworld/service-requirements.txt \
 && rm /opt/mcpworld/host-ca.crt
# apps our scripts built on the building machine (VS Code: code-server and the probe's client) with the
# Node.js they run on; empty unless the image holds one
COPY .apps /opt/mcpworld/.apps
ENV PATH=/opt/mcpworld/.apps/node/bin:$PATH
COPY mcpworld /opt/mcpworld/mcpworld
COPY mcpworld/data/docker/desktop-start.sh /usr/local/bin/mcpworld-desktop
ENV PYTHONPATH=/opt/mcpworld SCREEN=1280x800x24
USER mcpworld-d0
WORKDIR /home/user
EXPOSE 5904 6080
CMD ["/usr/local/bin/mcpworld-desktop"]
