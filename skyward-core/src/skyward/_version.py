"""The version of skyward-core, in a module of its own: code that needs the number (the bootstrap's
wheel names, the worker's check of the client's version) reads it here instead of importing the
package root, which stands above everything else (see "Layers" in docs/architecture.md)."""

__version__ = "0.1.0"
