"""What providers and plugins are written against: the hook catalogue (`hookspecs`, with the
`hookimpl` marker), `Plugin` (`plugin`), the registry of providers and plugin factories
(`registry`), and the folding hooks' starting values (`folds`).

These are the contracts only; the pool's plugin manager that calls them is `client/hooks.py`.
"""
