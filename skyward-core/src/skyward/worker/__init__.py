"""The remote side: `python -m skyward.worker` speaks the wire protocol on its stdin/stdout."""
