#!/bin/sh
# The container's desktop: Xvfb :4 at $SCREEN, openbox, VNC of it on 5904 (x11vnc) and noVNC on 6080
# (websockify serving Debian's noVNC). The host publishes both ports on 127.0.0.1 unless asked otherwise.
set -eu
export DISPLAY=:4
Xvfb :4 -screen 0 "$SCREEN" -nolisten tcp &
i=0
while [ ! -e /tmp/.X11-unix/X4 ] && [ "$i" -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
openbox &
x11vnc -display :4 -rfbport 5904 -forever -shared -nopw -quiet -bg -o /tmp/x11vnc.log
exec websockify --web /usr/share/novnc 6080 localhost:5904
