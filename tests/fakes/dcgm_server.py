"""A DCGM exporter on 127.0.0.1: ``/metrics`` in the Prometheus text exposition format, shaped as
dcgm-exporter writes it (its field names and units, one series per GPU labelled gpu, UUID, device,
modelName, Hostname, driver version; fields we do not read beside the ones we do; DCGM's "blank"
sentinel for a value it has not got). The test sets each GPU's counter and power between scrapes."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BLANK_INT64 = 9223372036854775794  # what dcgm-exporter prints for a field with no value


@dataclass
class DcgmGpu:
    energy_mj: int | None = 0  # None: printed as DCGM's blank
    power_w: float = 0.0
    util: int = 0
    fb_used_mib: int = 0
    temp_c: int = 30


FIELDS = [  # (name, type, help, attribute or a constant)
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", 1410),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", "temp_c"),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", "power_w"),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", "energy_mj"),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", "util"),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", 1000),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", "fb_used_mib"),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", 0),
]


class DcgmExporter:
    def __init__(self, n: int = 2, page: str | None = None):
        self.gpus = [DcgmGpu() for _ in range(n)]
        self.page = page  # a fixed page instead (not a DCGM exporter)
        self.scrapes = 0
        self.lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/metrics"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def text(self) -> str:
        lines = []
        for name, kind, doc, source in FIELDS:
            lines += [f"# HELP {name} {doc}", f"# TYPE {name} {kind}"]
            for i, g in enumerate(self.gpus):
                value = getattr(g, source) if isinstance(source, str) else source
                labels = (
                    f'gpu="{i}",UUID="GPU-{i:08d}-5d26-a36a-e7af1ce2586e",device="nvidia{i}",'
                    f'modelName="NVIDIA H100 80GB HBM3",Hostname="model-host",DCGM_FI_DRIVER_VERSION="550.54.15"'
                )
                lines.append(f"{name}{{{labels}}} {BLANK_INT64 if value is None else value}")
        return "\n".join(lines) + "\n"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.path != "/metrics":
                    self.send_error(404)
                    return
                with server.lock:
                    server.scrapes += 1
                    body = (server.page if server.page is not None else server.text()).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
