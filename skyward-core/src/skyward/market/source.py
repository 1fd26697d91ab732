"""What a provider package writes to put its offers in the market: an `OfferSource`.

A source is small: a `name` (the provider's name in `skyward.toml`), how long its prices stay
good (`ttl`, seconds: about an hour for a marketplace whose prices move, a day for a cloud's
price list), a `key` that says which account or endpoint its offers come from (offers of two
keys are never mixed), `credentials()` (no network call: a source without them is not asked)
and `fetch()`, which lists every offer (blocking; it may take a few seconds and raise on any
failure: the catalog keeps what it had and marks it stale).

Where sources come from:

- the `skyward_offer_sources()` hook, answered by each installed provider package with sources
  that read the provider's usual environment (`$RUNPOD_API_KEY`, boto3's chain...): what
  `sky offers` and `sky.offers()` ask;
- a provider config's optional `offer_source()` method, a source bound to that config's
  credentials and endpoint: what a pool asks to order its specs. With the default settings it
  has the same `key` as the hook's, so both read the same catalog rows.

A source may also answer `fits(offer, spec) -> bool` when its provider matches a spec to an
offer differently from `default_fits` (RunPod ignores `Spec.region`, which names a data center
its listing does not price by).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from skyward.market.offer import Offer, canonical_accelerator
from skyward.providers.credentials import CredentialStatus

if TYPE_CHECKING:
    from skyward.spec import Spec

#: Suggested `ttl`s: marketplaces (prices move by the minute) and clouds' price lists.
MARKETPLACE_TTL = 3600.0
PRICE_LIST_TTL = 86_400.0
#: How much less memory per card than asked still fits: providers report usable memory.
MEMORY_SLACK = 0.95


@runtime_checkable
class OfferSource(Protocol):
    """One provider's offers, for one account or endpoint (see the module)."""

    name: str
    ttl: float
    key: str

    def credentials(self) -> CredentialStatus: ...

    def fetch(self) -> Iterable[Offer]: ...


def default_fits(offer: Offer, spec: Spec) -> bool:
    """Whether a pool of `spec` could run on `offer`: the spec's accelerator (by catalog name) with
    at least its count and, when it names a memory size, about that much per card; at least its
    vCPUs and memory where the offer says; its region where it names one. A spec without an
    accelerator fits only machines without one."""
    acc = spec.accelerator
    if acc is None:
        if offer.accelerator is not None:
            return False
    else:
        wanted_name = (canonical_accelerator(acc.name) or "").lower()
        if offer.accelerator is None or offer.accelerator.lower() != wanted_name:
            return False
        if offer.accelerator_count < math.ceil(acc.count):
            return False
        wanted = acc.memory_gb
        if wanted and offer.accelerator_memory_gb and offer.accelerator_memory_gb < wanted * MEMORY_SLACK:
            return False
    if spec.vcpus and offer.vcpus is not None and offer.vcpus < spec.vcpus:
        return False
    if spec.memory_gb and offer.memory_gb is not None and offer.memory_gb < spec.memory_gb * MEMORY_SLACK:
        return False
    return not (spec.region and offer.region and offer.region.lower() != spec.region.lower())


def fits(source: object, offer: Offer, spec: Spec) -> bool:
    """The source's own `fits` where it has one, else `default_fits`."""
    own = getattr(source, "fits", None)
    return bool(own(offer, spec)) if callable(own) else default_fits(offer, spec)


def installed_sources() -> list[OfferSource]:
    """Every installed provider package's sources (`skyward_offer_sources`); an answer that is not
    an `OfferSource` is reported with a warning naming its distribution and skipped."""
    from skyward.extension import registry

    found: list[OfferSource] = []
    for distribution, answer in registry.answers("skyward_offer_sources"):
        for source in answer if isinstance(answer, list | tuple) else [answer]:
            if isinstance(source, OfferSource):
                found.append(source)
            else:
                warnings.warn(
                    f"The Skyward plugin {distribution} answered {type(source).__name__} from "
                    "skyward_offer_sources, where an OfferSource is expected; it is skipped.",
                    RuntimeWarning, stacklevel=2,
                )
    return found


def choose(sources: Sequence[OfferSource], providers: Iterable[str] | None) -> list[OfferSource]:
    """The sources named in `providers` (case aside), or all of them for None; an unknown name is a
    `ConfigurationError` listing the names there are."""
    if providers is None:
        return list(sources)
    from skyward.errors import ConfigurationError

    wanted = {p.lower() for p in providers}
    known = {s.name.lower() for s in sources}
    unknown = sorted(wanted - known)
    if unknown:
        names = ", ".join(sorted(known)) or "none installed"
        raise ConfigurationError(
            f"no provider {', '.join(unknown)} lists offers (installed: {names}); install its package "
            "(pip install skyward-<provider>) or leave it out"
        )
    return [s for s in sources if s.name.lower() in wanted]
