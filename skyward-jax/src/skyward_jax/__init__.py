"""JAX plugin for Skyward (jax.distributed)."""

__version__ = "0.1.0"
