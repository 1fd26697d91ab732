"""The plugins that ship with core. Each module exports one factory of the same name.

They live in this subpackage, not in `skyward.plugins` itself, so that importing a module here
never replaces the `sky.plugins.<name>` factory with a module of the same name.
"""
