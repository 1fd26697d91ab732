"""What the client's end of the fork server (`skyward.transport.forkserver`) and the server itself
(`skyward.worker.forkserver`) agree on: the largest request, the descriptors one carries, and the
shape of the answer.

In a module of its own, which imports nothing of ours, so that the worker side depends on the
transport side and never the other way round (see "Layers" in docs/architecture.md). A request is
one seqpacket message of JSON (`{"env": {...}, "cwd": ...}`) with `DESCRIPTORS` descriptors: the
worker's stdin read end, its stdout write end, its reply lane's write end. The answer is `PID`
(the child's pid, with a pidfd for it), or `PID` of -1 followed by the reason.
"""

from __future__ import annotations

import struct

#: The largest request: a few environment variables.
MAX_REQUEST = 1 << 16
#: Descriptors a request carries: stdin, stdout, reply lane.
DESCRIPTORS = 3
#: The answer's head: the forked worker's pid, or -1 when it could not be forked.
PID = struct.Struct("!q")
