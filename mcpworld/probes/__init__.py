"""App probes: live events from inside the desktop applications (PC-Canary hooks), per episode."""
