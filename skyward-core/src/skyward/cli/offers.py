"""`sky offers` (also `sky offers list`), `sky offers fetch`, `sky offers summary`: instance offers
and prices across providers, from Skyward's offer catalog (`skyward.market`, what `sky.offers()`
returns and what a pool with `selection="cheapest"` prices its specs from).

Every installed provider whose credentials are found is asked when its snapshot is older than
its ttl (about an hour for RunPod and Vast.ai, a day for AWS); `fetch` asks them all now. A
provider that cannot be reached is shown beside the others' offers, never fatal: its last offers
are listed and marked stale. Exit codes: 0 when offers could be listed (even none matching the
filters, even with some providers stale or failing); 1 when no provider could answer at all
(none has credentials, or every one failed with nothing on file), or, for `fetch`, when a
provider could not be refreshed.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import click
from rich.text import Text

from skyward.cli.output import draw, emit_json, json_option, note, table
from skyward.market.api import catalog
from skyward.market.offer import Offer
from skyward.market.query import ORDERS, OfferQuery
from skyward.market.refresh import SourceStatus
from skyward.market.summary import summarize

#: (option, keyword of `OfferQuery.filter`), in the order `--help` lists them.
_FILTERS: tuple[tuple[Any, ...], ...] = (
    (("--accelerator", "-a"), "accelerator", str, "NAME", "Only this card (A100, H100, RTX_4090...)."),
    (("--count", "-n"), "count", click.FloatRange(min=0), "N", "Accelerators per machine, at least."),
    (("--accelerator-memory",), "accelerator_memory", click.FloatRange(min=0), "GB",
     "At least this much memory per accelerator."),
    (("--vcpus",), "vcpus", click.FloatRange(min=0), "N", "At least this many vCPUs."),
    (("--memory",), "memory", click.FloatRange(min=0), "GB", "At least this much machine memory."),
    (("--region",), "region", str, "REGION", "Only this region (AWS region, Vast.ai country, RunPod cloud)."),
    (("--provider", "-p"), "provider", str, "NAME", "Only this provider (aws, runpod, vastai...)."),
    (("--max-price",), "max_price", click.FloatRange(min=0), "USD", "At most this price per machine-hour."),
)


def filter_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The filters, the allocation, the order and the limit: on `sky offers`, `list` and `summary`."""
    decorated = command
    decorated = click.option("--limit", type=click.IntRange(min=1), default=None, metavar="N",
                             help="At most this many offers (list).")(decorated)
    decorated = click.option("--sort", "sort", type=click.Choice(ORDERS), default="price", show_default=True,
                             help="price: cheapest first; memory, count, vcpus: most first.")(decorated)
    decorated = click.option("--on-demand", "on_demand", is_flag=True,
                             help="On-demand offers only, at their on-demand price.")(decorated)
    decorated = click.option("--spot", is_flag=True,
                             help="Interruptible offers only, at their spot price.")(decorated)
    for flags, name, kind, metavar, text in reversed(_FILTERS):
        decorated = click.option(*flags, name, type=kind, default=None, metavar=metavar, help=text)(decorated)
    return json_option(decorated)


def _query(params: dict[str, Any], refresh: bool | None = None) -> OfferQuery:
    if params.get("spot") and params.get("on_demand"):
        raise click.UsageError("--spot and --on-demand exclude each other; pass one of them, or neither")
    from skyward.observe.logging import configure_logging  # here: `sky --help` loads this module

    configure_logging()  # what the providers log goes to Skyward's log file, not between the tables
    providers = [params["provider"]] if params.get("provider") else None
    query = catalog(providers, refresh)
    allocation = "spot" if params.get("spot") else "on-demand" if params.get("on_demand") else None
    filters = {name: params.get(name) for _, name, *_ in _FILTERS if name != "provider"}
    query = query.filter(**filters, allocation=allocation).order_by(params.get("sort") or "price")
    return query.limit(params["limit"]) if params.get("limit") else query


def _money(value: float | None) -> str:
    """Cents when the price is in cents ($1.89, $0.40), else as many digits as it has ($0.123)."""
    if value is None:
        return "-"
    return f"${value:.2f}" if round(value, 2) == value else f"${value:.4g}"


def _card(offer: Offer) -> str:
    return f"{offer.accelerator_count:g}x {offer.accelerator}" if offer.accelerator else "-"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return "never"
    minutes = int(seconds) // 60
    return f"{minutes // 60}h {minutes % 60:02d}m ago" if minutes >= 60 else f"{minutes}m ago"


def _status_line(status: SourceStatus, now: float) -> tuple[str, bool]:
    """One line per provider, and whether it is a problem (then it starts `warning:`)."""
    age = _ago(status.age(now))
    if status.state == "skipped":
        return f"{status.provider}: skipped, {status.error}", False
    if status.state == "failed":
        return f"{status.provider}: could not list offers: {status.error}", True
    if status.state == "stale":
        return (f"{status.provider}: {status.offers} offers, STALE (fetched {age}); "
                f"could not refresh: {status.error}"), True
    return f"{status.provider}: {status.offers} offers, {status.state} (fetched {age})", False


def _notes(query: OfferQuery) -> None:
    """Each provider's state, on stderr, so that piped stdout holds the offers only."""
    now = time.time()
    for status in query.status:
        line, problem = _status_line(status, now)
        note(("warning: " if problem else "") + line)


def _answered(query: OfferQuery) -> None:
    """Exit 1 when no provider could answer at all: there is nothing to list."""
    if not any(s.usable for s in query.status):
        if not query.status:
            raise click.ClickException("no installed provider lists offers (pip install skyward-aws, ...)")
        raise click.ClickException(
            "no provider could list offers: credentials missing or every provider failed (see above; "
            "`sky providers --check` tells which credentials work)"
        )


def _price_of(query: OfferQuery) -> Callable[[Offer], float | None]:
    return lambda offer: offer.price_for(query.allocation or "cheapest")


def show(params: dict[str, Any], refresh: bool | None = None) -> None:
    query = _query(params, refresh)
    offers = query.all()
    if params.get("as_json"):
        emit_json({"offers": [o.as_json() for o in offers], "providers": [s.as_json() for s in query.status]})
    else:
        if offers:
            draw(table(
                "Offers (USD per machine-hour)",
                ("provider", "instance type", "accelerator", "GB each", "vCPUs", "RAM GB", "region",
                 "spot", "on-demand"),
                [(o.provider, o.instance_type, _card(o), _number(o.accelerator_memory_gb), _number(o.vcpus),
                  _number(o.memory_gb), o.region or "-", _money(o.spot_price), _money(o.on_demand_price))
                 for o in offers],
                whole=(0, 1, 2, 5, 6, 7, 8),  # read, and copied into a spec, as they are
            ))
        else:
            note("No offer matches.")
        _notes(query)
    _answered(query)


def _with_group_params(command: Callable[..., Any]) -> Callable[..., Any]:
    """A subcommand's options, over the ones given before it (`sky offers -a A100 list`)."""

    @functools.wraps(command)
    def run(**params: Any) -> Any:
        parent = click.get_current_context().parent
        merged = dict(parent.params) if parent is not None else {}
        merged.update({k: v for k, v in params.items() if v not in (None, False)})
        return command(merged)

    return run


@click.group(invoke_without_command=True)
@filter_options
@click.pass_context
def offers(ctx: click.Context, **params: Any) -> None:
    """Instance offers and prices across providers (filters, order, --json); see also fetch, summary.

    Each provider whose credentials are found is asked when its offers are older than an hour
    (RunPod, Vast.ai) or a day (AWS). One that cannot be reached is reported, its last offers
    marked stale.
    """
    if ctx.invoked_subcommand is None:
        show(params)


@offers.command("list")
@filter_options
@_with_group_params
def list_offers(params: dict[str, Any]) -> None:
    """The same as `sky offers`."""
    show(params)


@offers.command("fetch")
@json_option
@click.option("--provider", "-p", "provider", default=None, metavar="NAME", help="Only this provider.")
def fetch(as_json: bool, provider: str | None) -> None:
    """Refresh the offer catalog now, from every provider whose credentials are found."""
    query = _query({"provider": provider}, refresh=True)
    if as_json:
        emit_json({"providers": [s.as_json() for s in query.status]})
    else:
        now = time.time()
        rows = []
        for s in query.status:
            style = {"fresh": "green", "stale": "red", "failed": "red", "skipped": "dim"}.get(s.state, "")
            rows.append((s.provider, Text(s.state, style=style), s.offers, _ago(s.age(now)), s.error or ""))
        draw(table("Offer catalog", ("provider", "state", "offers", "fetched", "error"), rows))
    failed = [s.provider for s in query.status if s.state in ("stale", "failed")]
    _answered(query)
    if failed:
        raise click.ClickException(f"could not refresh: {', '.join(failed)} (see the error column)")


@offers.command("summary")
@filter_options
@_with_group_params
def summary(params: dict[str, Any]) -> None:
    """Per accelerator: how many offers, and the cheapest price on each provider."""
    query = _query({**params, "limit": None})
    groups = summarize(query.all(), _price_of(query))
    if params.get("as_json"):
        emit_json({"accelerators": [g.as_json() for g in groups],
                   "providers": [s.as_json() for s in query.status]})
    else:
        if groups:
            draw(table(
                "Offers by accelerator", ("accelerator", "offers", "cheapest $/h", "by provider (cheapest)"),
                [(g.accelerator or "(none)", g.offers, _money(g.cheapest),
                  ", ".join(f"{p.provider} {_money(p.cheapest)} ({p.offers})" for p in g.providers))
                 for g in groups],
            ))
        else:
            note("No offer matches.")
        _notes(query)
    _answered(query)
