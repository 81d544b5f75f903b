"""``python -m mcpworld.telemetry.gpu_agent [--host H] [--port 9401]``: the model host's GPUs over HTTP.

For a model served on another machine without NVIDIA's DCGM exporter. Run it there; the harness reads it
with ``telemetry.gpu.source=prometheus telemetry.gpu.url=http://HOST:9401/metrics``. It answers only
requests that pass ``mcpworld.core.listener``'s rule: the token (``Authorization: Bearer …``), no
foreign Host or Origin. Reached from another machine (``--host 0.0.0.0``) it needs a token you
choose: ``MCPWORLD_GPU_AGENT_TOKEN`` set on the model host and, the same, where the harness runs (it
sends it). On 127.0.0.1 without the variable it makes a fresh one, in ``--token-file``. Every GET of
``/metrics`` reads NVML at that moment (no cache, unlike dcgm-exporter's collect interval) and answers
in the Prometheus text exposition format under DCGM's field names, so one reader serves both. It also
sends its wall clock (``mcpworld_gpu_agent_time_seconds``) for the harness to record the clock offset.
Needs only ``nvidia-ml-py`` (besides this package).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

from mcpworld.core.errors import UserError
from mcpworld.core.listener import TOKEN_FILE, Guard, GuardedHandler, listen_token, write_token
from mcpworld.telemetry.energy.prometheus import AGENT_TIME, AGENT_TOKEN, ENERGY, POWER
from mcpworld.telemetry.gpu import GpuBackend, NvmlBackend, Sample

DEFAULT_PORT = 9401  # dcgm-exporter's is 9400
TOKEN_VARIABLE = AGENT_TOKEN  # the agent's token, on the model host and where the harness runs (which sends it)
FIELDS = (
    (POWER, "gauge", "power_w", "Power draw (in W)."),
    (ENERGY, "counter", "energy_mj", "Total energy consumption since the driver loaded (in mJ)."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "util_pct", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "mem_mb", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "temp_c", "GPU temperature (in C)."),
)


def exposition(samples: list[Sample], wall: float) -> bytes:
    """The text exposition of one reading, shaped as dcgm-exporter writes it (written by hand: the
    client library would rename the energy counter's family to ``…_total``, which DCGM's is not)."""
    lines = []
    for name, kind, attr, doc in FIELDS:
        lines += [f"# HELP {name} {doc}", f"# TYPE {name} {kind}"]
        lines += [f'{name}{{gpu="{s.gpu}"}} {_number(getattr(s, attr))}' for s in samples if getattr(s, attr) is not None]
    lines += [
        f"# HELP {AGENT_TIME} The agent's wall clock when it read the GPUs (Unix seconds).",
        f"# TYPE {AGENT_TIME} gauge",
        f"{AGENT_TIME} {wall!r}",
    ]
    return ("\n".join(lines) + "\n").encode()


def _number(value: float) -> str:
    """Integers exactly (NVML's energy counter is an int near 2**40 mJ), other values as Python's repr."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 2**63 else repr(float(value))


def serve(backend: GpuBackend, token: str, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> ThreadingHTTPServer:
    """A started server (on a daemon thread) answering ``/metrics`` from ``backend`` to requests
    carrying ``token``; ``shutdown()`` it."""
    lock = threading.Lock()  # one NVML read at a time

    class Handler(GuardedHandler):
        guard = Guard(token)

        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404, "only /metrics here")
                return
            try:
                with lock:
                    body = exposition(backend.read(), time.time())
            except Exception as e:
                self.send_error(503, f"GPU read failed: {type(e).__name__}: {e}")
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, name="gpu-agent", daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcpworld.telemetry.gpu_agent", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help=f"listen address (0.0.0.0: reachable from the harness; then ${TOKEN_VARIABLE} must be set)",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument(
        "--token-file", type=Path, help="where to write the token, 0600 (default: token in a new temporary folder)"
    )
    args = parser.parse_args(argv)
    try:
        token = listen_token(args.host, TOKEN_VARIABLE, args.port)
    except UserError as e:
        print(f"gpu_agent: error: {e}", file=sys.stderr)
        return 2
    import pynvml

    try:
        backend = NvmlBackend()
    except pynvml.NVMLError as e:
        print(f"gpu_agent: NVML is not usable here ({type(e).__name__}); run it on the model host", file=sys.stderr)
        return 1
    server = serve(backend, token, args.host, args.port)
    token_file = write_token(args.token_file or Path(tempfile.mkdtemp(prefix="mcpworld-gpu-agent-")) / TOKEN_FILE, token)
    print(
        f"gpu_agent: {backend.count} GPU(s) at http://{args.host}:{server.server_port}/metrics; the token "
        f"(send it as {TOKEN_VARIABLE} where the harness runs) is in {token_file}",
        file=sys.stderr,
    )
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
