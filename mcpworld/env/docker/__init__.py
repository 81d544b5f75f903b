"""The docker backend: a desktop in a container of an image built from the run's apps (image.py). The
container runs the desktop service (service.py), which drives a local desktop inside; environment.py is
the host side. docs/docker.md."""
