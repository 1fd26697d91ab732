"""The market: what machines every provider offers, at what price, before anything is rented.

`sky offers` and `sky.offers(...)` read it, and a multi-spec pool with `selection="cheapest"`
orders its specs by it, so the price a user is shown is the price a pool compares.

- `offer`: the record (`Offer`), one way to rent one machine, with its spot and on-demand price;
- `source`: the contract a provider package answers (`OfferSource`, through the
  `skyward_offer_sources` hook, and optionally `ProviderConfig.offer_source()`);
- `keyed_offers`: the source of a cloud whose API takes one key (`KeyedOffers`: the cloud writes
  its listing);
- `store`: the on-disk catalog (SQLite under `~/.skyward`), one snapshot per source;
- `refresh`: which sources are asked, when (by age), and what each answered;
- `query`: the fluent query over the catalog (`OfferQuery`);
- `summary`: offers per accelerator, the cheapest on each provider (`sky offers summary`);
- `api`: `sky.offers`, `sky.offers_async`, and the price of a spec for a pool.

(Not `skyward/offers/`: `sky.offers` is a function, and a subpackage of the same name would
replace it as an attribute of the package once imported.)
"""

from __future__ import annotations
