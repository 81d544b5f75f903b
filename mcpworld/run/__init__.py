"""A run's lifecycle: one Hydra job (job.py) runs episodes (episode.py) on a pool of desktops, with
interrupts, resume, progress and the sweep summary."""
