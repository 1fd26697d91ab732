"""A spot VM's preemption notice, read on the node from its metadata server.

Compute Engine tells a spot VM it is being taken back only from inside: the metadata value
`instance/preempted` turns `TRUE` when the preemption starts (the VM then has about 30 seconds
before it is stopped and, with `instanceTerminationAction: DELETE`, deleted). `WATCH_SCRIPT` asks
for it (header `Metadata-Flavor: Google`) every few seconds on one more channel of the node's SSH
connection (`skyward.providers.notices`), and prints one line when it turns; the pool then
replaces the node and runs its task again elsewhere. The metadata server is
`metadata.google.internal`, or `$GCE_METADATA_HOST` where set.
"""

from __future__ import annotations

from skyward.providers.notices import NodeNotices, Notice

#: How often a node asks at most; a pool with a shorter reconcile tick asks as often.
POLL_INTERVAL = 5.0

#: Run on the node as `python -c WATCH_SCRIPT <interval>`.
WATCH_SCRIPT = r"""
import json, os, sys, threading, time, urllib.request

interval = float(sys.argv[1])
host = os.environ.get("GCE_METADATA_HOST") or "metadata.google.internal"
url = "http://%s/computeMetadata/v1/instance/preempted" % host


def gone():
    sys.stdin.buffer.read()  # EOF: the pool closed the channel, or its connection dropped
    os._exit(0)


def say(line):
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


threading.Thread(target=gone, daemon=True).start()
failing, told = False, False
while True:
    if not told:
        try:
            request = urllib.request.Request(url, headers={"Metadata-Flavor": "Google"})
            with urllib.request.urlopen(request, timeout=5) as answer:
                told = answer.read().decode().strip().upper() == "TRUE"
            if told:
                say({"kind": "preempted", "detail": {}})
            failing = False
        except Exception as error:
            if not failing:
                say({"kind": "unreachable", "detail": {"error": str(error)[:200]}})
            failing = True
    time.sleep(interval)
"""


def reason(notice: Notice) -> str | None:
    """A `preempted` line is a preemption; an unreachable metadata server is only logged."""
    return "spot VM preempted (instance/preempted is TRUE)" if notice.get("kind") == "preempted" else None


def spot_notices(interval: float) -> NodeNotices:
    return NodeNotices("GCP", WATCH_SCRIPT, [f"{interval:g}"], reason)
