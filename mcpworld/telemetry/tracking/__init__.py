"""Trackers: a multirun's parent run (``mcpworld.level=sweep``) → one run per Hydra job (``job``) →
one child run per episode (``episode``) with its MLflow trace. ``none`` never imports mlflow.

Trackers only read results. MLflow work happens in a child process, so episodes never wait for it
(nor share an interpreter lock with it); the job waits for it to drain at the end. A tracking
failure (a remote ``mlflow server`` down, a locked or full store) never loses what is on disk and
prints no traceback: failed items are retried when the job ends (the tracker catches up), and what
still failed is named in one line and in ``tracking_pending.json``, from where
``python -m mcpworld.telemetry.upload JOB_DIR`` logs it later. A resumed job (same folder) reopens
its runs, found by their folder tags, and replaces an episode's earlier run: never a duplicate.

One concept a module, so that ``tracking=none`` loads only the first two:

- ``keys``: names and values as MLflow takes them (params, metrics, tags; flatten; tag names)
- ``vocabulary``: the one set of names at every level (decisive params, run names, source tags,
  per-step series), so job and episode runs group and filter alike in MLflow's UI
- ``tracker``: the ``Tracker`` interface, the ``none`` backend and the backends by name (``make_tracker``)
- ``store``: talking to an MLflow store (client, batches, its log lines, is it reachable)
- ``logger``: how a job's and its episodes' runs are written, with catch-up (``MlflowLogger``)
- ``process``: the ``mlflow`` backend, running the logger in a child process (``MlflowTracker``)
- ``pending``: ``tracking_pending.json``, what was not logged, for ``telemetry.upload``
- ``sweep``: a multirun's parent run

Nothing is re-exported here: import from the module that holds a name (importing this package
must stay free of mlflow and of the tracker process).
"""
