"""`ProviderConfig`: the base of every provider config, declaring each member Skyward asks of one.

It lives with the other contracts a provider package is written against (`skyward.extension`), so
that `Spec` (a value) can take only configs without importing the machinery; the rest of the
provider contract, `Provider` and the order a pool calls it in, is `skyward.providers.base`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from skyward.market.source import OfferSource
    from skyward.options import Options
    from skyward.providers.base import Provider
    from skyward.providers.credentials import CredentialStatus, MissingCredential
    from skyward.spec import Nodes, Spec
    from skyward.storage.client import Storage


class ProviderConfig:
    """The base of every provider config (a frozen attrs value that subclasses it; `Spec` takes
    only these), declaring every member core asks of one, with its default.

    A config writes `name` and `create`; the rest is optional:

    - `name` names the provider in events and errors;
    - `create(options)` returns the `Provider` for one pool, given the pool's `sky.Options` (None
      is read as `Options()`); it does no I/O;
    - `hourly_price(spec)`: one node's price per hour for `spec`, used only to order several specs
      with `Options(selection="cheapest")`; None when the provider cannot tell (the spec goes
      last). It may block (a price list, an offer search) and is run in a thread;
    - `offer_source()`: its offers in the market, bound to this config's account (`skyward.market`);
    - `credentials(check=)` (a classmethod): where its credentials are, for `sky providers`;
      `missing_credentials()`: what a pool would lack to start, reported before anything starts;
    - `mounts_volumes`: whether its machines mount `sky.Volume`s (`Local` does not);
      `volume_storage(spec)`: the object store a volume without `storage=` uses (AWS: S3), None:
      it has none, and such a volume is refused when the spec is built;
    - `default_nodes`: the node count of a spec that gives none (`SSH(hosts=[a, b])`: two), and
      `check_nodes(nodes)`: refuse more nodes than the provider has (raises `ConfigurationError`).
    """

    __slots__ = ()

    #: Whether its machines mount `sky.Volume`s.
    mounts_volumes: ClassVar[bool] = True
    #: Whether `volume_storage` answers a store (checked when a spec is built, before any I/O).
    has_volume_storage: ClassVar[bool] = False

    @property
    def name(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} names its provider (a `name` property)")

    @property
    def default_nodes(self) -> int | None:
        return None

    @property
    def bootstraps(self) -> bool:
        """Whether its nodes run the bootstrap (an environment of their own, skyward's wheels
        shipped); plain `sky.Local()` runs workers with this interpreter instead."""
        return True

    def create(self, options: Options | None = None) -> Provider:
        raise NotImplementedError(f"{type(self).__name__}.create(options) returns its Provider")

    def hourly_price(self, spec: Spec) -> float | None:
        return None

    def offer_source(self) -> OfferSource | None:
        return None

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus | None:
        return None

    def missing_credentials(self) -> MissingCredential | None:
        return None

    def volume_storage(self, spec: Spec) -> Storage | None:
        return None

    def check_nodes(self, nodes: Nodes) -> None:
        return None
