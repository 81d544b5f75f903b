"""``python -m mcpworld.certify``: a trust certificate per task. The oracle must pass every time,
doing nothing must fail every time, and a nearly right answer (the spoiled oracle) must fail every
time; how often that holds is the task's status (docs/certify.md). Episodes run as ordinary Hydra
jobs (run/), one per mode, and are read back from their folders (report/folder.py)."""
