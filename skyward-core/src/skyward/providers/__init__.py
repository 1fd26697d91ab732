"""Providers: where nodes come from. `Local` (this machine) is the embedded default."""
