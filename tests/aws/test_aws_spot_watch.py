"""The node's side of AWS spot notices: the watcher script (what each spot node runs) against an
IMDSv2 metadata service, and what the pool makes of the lines it prints. No cloud needed: the
script runs here as a process of a "machine" whose HOME the fake service knows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fake_imds import ACTION, REBALANCE, FakeIMDS

from skyward_aws.spot import WATCH_SCRIPT, SpotNotices

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def watched(tmp_path: Path):
    home = tmp_path / "machine"
    home.mkdir()
    imds = FakeIMDS({"i-0123456789abcdef0": home}).start()
    watcher = subprocess.Popen(
        [sys.executable, "-c", WATCH_SCRIPT, imds.url, "0.1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
    )
    yield imds, watcher
    watcher.kill()
    watcher.wait()
    imds.stop()


def next_notice(watcher: subprocess.Popen[str]) -> dict:
    line = watcher.stdout.readline()  # type: ignore[union-attr]
    assert line, "the watcher ended without a notice"
    return json.loads(line)


def test_the_watcher_reports_a_rebalance_then_an_interruption_with_imdsv2_tokens(watched) -> None:
    imds, watcher = watched
    imds.recommend_rebalance("i-0123456789abcdef0")
    assert next_notice(watcher)["kind"] == "rebalance"
    imds.interrupt("i-0123456789abcdef0", action="stop")
    notice = next_notice(watcher)
    assert notice["kind"] == "interruption" and notice["detail"]["action"] == "stop"
    assert imds.tokens, "the watcher never asked for an IMDSv2 session token"
    assert ("i-0123456789abcdef0", ACTION) in imds.asked and ("i-0123456789abcdef0", REBALANCE) in imds.asked


def test_the_watcher_ends_when_its_channel_closes(watched) -> None:
    _, watcher = watched
    watcher.stdin.close()  # type: ignore[union-attr]
    assert watcher.wait(timeout=10) == 0


def test_a_rebalance_recommendation_preempts_only_when_asked_to() -> None:
    rebalance = json.dumps({"kind": "rebalance", "detail": {"noticeTime": "2026-01-01T00:00:00Z"}})
    interruption = json.dumps({"kind": "interruption", "detail": {"action": "terminate", "time": "soon"}})
    logged_only = SpotNotices("http://169.254.169.254", 5.0, replace_on_rebalance=False)
    logged_only._notice("i-a", 0, rebalance)
    assert logged_only.preempted(["i-a"]) == {}
    logged_only._notice("i-a", 0, interruption)
    assert logged_only.preempted(["i-a", "i-b"]) == {"i-a": "spot interruption notice: terminate at soon"}
    replacing = SpotNotices("http://169.254.169.254", 5.0, replace_on_rebalance=True)
    replacing._notice("i-a", 0, rebalance)
    assert replacing.preempted(["i-a"]) == {"i-a": "rebalance recommendation at 2026-01-01T00:00:00Z"}
