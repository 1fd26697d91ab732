"""Where relayed blobs land on a node, a name both sides of a relay share.

`skyward.transport.blob_relay` writes a broadcast's large argument into this folder, inside the
node folder (the worker's working directory); the worker adopts it from there
(`skyward.worker.blobs`). A module of its own, with nothing else: the worker imports it at every
start, and the relay's module imports asyncio.
"""

BLOB_DIR = ".skyward-blobs"
