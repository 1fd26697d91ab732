"""moto's server on loopback, shared by the AWS provider tests and the CLI tests that call AWS."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """moto's server on a free loopback port for the block's length; yields its URL.

    Connections are served on threads, as `ThreadedMotoServer` serves them, but requests are
    handled one at a time: moto's backends are not safe for concurrent requests (two RunInstances
    at once on one subnet share its address generator and one fails with a 500, "generator already
    executing"), which EC2 itself never answers. A pool launches its nodes concurrently.
    """
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    app = DomainDispatcherApplication(create_backend_app)
    one_at_a_time = threading.Lock()

    def serial(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with one_at_a_time:
            answer = app(environ, start_response)
            try:
                return list(answer)
            finally:
                close = getattr(answer, "close", None)
                if close is not None:
                    close()

    server = make_server("127.0.0.1", 0, serial, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="moto-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()


def accelerated(instance_type: dict) -> bool:
    """An EC2 instance type with GPUs, Neuron chips, inference accelerators or FPGAs."""
    kinds = ("GpuInfo", "NeuronInfo", "InferenceAcceleratorInfo", "FpgaInfo")
    return any(kind in instance_type for kind in kinds)


@contextlib.contextmanager
def only_instance_types(keep: Callable[[dict], bool]) -> Iterator[None]:
    """moto's EC2 (in this process: `moto_server`'s too) knows only the instance types `keep` says
    yes to for the block's length, and every type again after it.

    Its whole catalog is some 1,260 types and 5,700 spot prices a region, which moto renders and
    botocore parses in seconds of CPU per listing: a test of offers for accelerators lists only
    those. A moto without the attributes this trims is left whole (slower, the same answers)."""
    from moto.ec2.models import instance_types as moto_types

    backend = getattr(moto_types, "InstanceTypeBackend", None)
    offerings = getattr(moto_types, "INSTANCE_TYPE_OFFERINGS", None)
    table = getattr(moto_types, "INSTANCE_TYPES", None)
    if backend is None or not isinstance(offerings, dict) or not isinstance(table, dict):
        yield
        return
    kept = {name for name, row in table.items() if keep(row)}
    types = backend.instance_types
    saved = {
        (where, region): rows for where, regions in offerings.items() for region, rows in regions.items()
    }
    backend.instance_types = [t for t in types if t.get("InstanceType") in kept]
    for (where, region), rows in saved.items():
        offerings[where][region] = [row for row in rows if row.get("InstanceType") in kept]
    try:
        yield
    finally:
        backend.instance_types = types
        for (where, region), rows in saved.items():
            offerings[where][region] = rows
