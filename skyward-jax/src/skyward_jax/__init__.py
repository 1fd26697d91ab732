"""JAX plugin for Skyward (jax.distributed): `sky.plugins.jax()`."""

from skyward_jax.jax_plugin import jax

__all__ = ["jax"]
__version__ = "0.1.0"
