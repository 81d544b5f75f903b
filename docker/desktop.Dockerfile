# The mcpworld desktop in a container: an X server with a light window manager, VNC on 5904 and noVNC
# on 6080 for watching, as the unprivileged desktop user. The base is a build argument: ubuntu:22.04
# for users; tests use a Debian base imported locally (no registry is reachable there).
#   docker build -f docker/desktop.Dockerfile --build-arg BASE=ubuntu:22.04 -t mcpworld/desktop docker/
ARG BASE=ubuntu:22.04
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
RUN apt-get update \
 && apt-get install -y --no-install-recommends xvfb openbox x11vnc novnc websockify xterm mousepad \
      x11-utils xdotool dbus-x11 fonts-dejavu-core python3 ca-certificates procps \
 && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --shell /bin/bash user
COPY desktop-start.sh /usr/local/bin/mcpworld-desktop
USER user
WORKDIR /home/user
ENV SCREEN=1280x800x24
EXPOSE 5904 6080
CMD ["/usr/local/bin/mcpworld-desktop"]
