"""The three clouds the offer tests ask, on loopback: moto's EC2, the fake RunPod API and the fake
Vast.ai server, each with A100s at prices the tests know, and the environment that points `sky`
(a subprocess) or `sky.offers` (in process) at them with their credentials."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
for folder in ("ssh", "runpod", "vastai"):
    if str(TESTS / folder) not in sys.path:
        sys.path.insert(0, str(TESTS / folder))

from fake_runpod import FakeRunPod  # noqa: E402
from vast_server import FakeVast, offer  # noqa: E402

RUNPOD_KEY = "rpa_OFFERSTESTKEY0123456789abcdef"
VAST_KEY = "vast-offers-test-key-5e1d9c3b7a2f"
AWS_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "AKIASKYWARDOFFERS001", "AWS_SECRET_ACCESS_KEY": "skyward-offers-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}
#: Vast's A100 machines: (offer id, gpu_name, on-demand $/h, minimum bid $/h).
VAST_A100 = ((11, "A100 SXM4", 1.40, 0.70), (12, "A100 PCIE", 1.10, 0.60))


def vast_offers(prices: tuple[tuple[int, str, float, float], ...] = VAST_A100) -> list[dict[str, Any]]:
    """Vast's A100 machines (80 GB cards), and an RTX 4090 that no A100 query may return."""
    rows = [offer(i, 500 + i, gpu, price=price, min_bid=bid, gpu_ram=81920) for i, gpu, price, bid in prices]
    return [*rows, offer(13, 513, "RTX 4090", price=0.35, min_bid=0.18)]


def start_runpod(folder: Path) -> FakeRunPod:
    return FakeRunPod(folder, RUNPOD_KEY).start()


def start_vast(folder: Path) -> FakeVast:
    return FakeVast(folder, VAST_KEY, vast_offers()).start()


def environment(moto_url: str | None, runpod: FakeRunPod | None, vast: FakeVast | None) -> dict[str, str]:
    """The variables that give `sky` each provider's credentials and endpoint (None: left out)."""
    env: dict[str, str] = {}
    if moto_url is not None:
        env.update(AWS_CREDENTIALS, AWS_ENDPOINT_URL=moto_url)
    if runpod is not None:
        env.update(RUNPOD_API_KEY=RUNPOD_KEY, RUNPOD_API_URL=runpod.rest_url,
                   RUNPOD_GRAPHQL_URL=runpod.graphql_url)
    if vast is not None:
        env.update(VAST_API_KEY=VAST_KEY, VAST_SERVER_URL=vast.url)
    return env


def searches(vast: FakeVast) -> int:
    """How many offer searches the fake Vast has answered."""
    return sum(1 for method, path, _, _ in vast.requests if method == "POST" and "bundles" in path)
