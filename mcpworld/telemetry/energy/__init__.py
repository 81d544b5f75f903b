"""Energy a paper can print: one sampler per job (GPU: NVML or a remote exporter; CPU: RAPL), an idle
baseline, and the job's energy shared between LLM calls and episodes without double counting.

``series`` integrates one device, ``attribution`` is the sharing rule, ``meter`` the job's sampler and
ledger, ``prometheus`` / ``rapl`` the readers beside NVML (``telemetry.gpu``), ``totals`` the job sums.
"""
