"""`sky ls` and `sky down`: the machines Skyward made, on every provider, found and ended without a pool.

A pool ends its machines when it exits; a crashed or killed client leaves them billing. Each
installed provider package answers the `skyward_sweepers` hook with a `Sweeper`
(`skyward.providers.sweep`) that lists only the machines carrying Skyward's mark (AWS: the
`skyward:pool` tag; RunPod, Vast.ai: the `skyward-<pool>-` name) and ends only those. A provider
whose credentials are not found is skipped, and the output says so: that is information, not a
failure. `sky down` asks before ending anything unless `--yes`; with no terminal to ask on it
refuses (exit 1) rather than guess.
"""

from __future__ import annotations

import datetime
import sys
from collections.abc import Sequence

import attrs
import click
from rich.text import Text

from skyward.cli.output import Table, draw, emit_json, json_option, note, table
from skyward.extension import registry
from skyward.providers.sweep import Ended, Machine, Sweeper, utc_now

provider_option = click.option(
    "--provider", "provider", default=None, metavar="NAME",
    help="Only this provider (aws, runpod, vastai...).",
)
region_option = click.option(
    "--region", default=None, metavar="REGION",
    help="The region to look in, for providers with regions (AWS: default, your configured region and "
    "every region your pools ran in; 'all': every region the account has enabled).",
)


@attrs.frozen
class Found:
    """What the sweepers answered: machines by sweeper, providers skipped and why, and failures."""

    machines: tuple[tuple[Sweeper, tuple[Machine, ...]], ...]
    skipped: tuple[dict[str, str], ...]
    errors: tuple[dict[str, str], ...]

    def all(self) -> list[Machine]:
        return [m for _, found in self.machines for m in found]


def sweepers(provider: str | None) -> list[Sweeper]:
    """The installed providers' sweepers (`--provider` keeps one); an unknown name is an error."""
    found: list[Sweeper] = []
    for distribution, answer in registry.answers("skyward_sweepers"):
        for sweeper in answer if isinstance(answer, list | tuple) else [answer]:
            if isinstance(sweeper, Sweeper):
                found.append(sweeper)
            else:
                click.echo(f"warning: {distribution} answered {type(sweeper).__name__} from "
                           "skyward_sweepers, where a Sweeper is expected; it is skipped.", err=True)
    if provider is None:
        return found
    chosen = [s for s in found if s.name.lower() == provider.lower()]
    if not chosen:
        names = ", ".join(sorted(s.name.lower() for s in found)) or "none installed"
        raise click.BadParameter(f"no provider {provider!r} can list machines ({names})",
                                 param_hint="--provider")
    return chosen


def find(provider: str | None, region: str | None) -> Found:
    """Every sweeper's machines. Skyward's log is set up first: what the sweepers log goes to its
    file (problems also to stderr), never between the tables on stdout."""
    from skyward.observe.logging import configure_logging  # here: `sky --help` loads this module

    configure_logging()
    listed: list[tuple[Sweeper, tuple[Machine, ...]]] = []
    skipped: list[dict[str, str]] = []
    errors: list[dict[str, str]] = []
    parked = _parked_pools()
    for sweeper in sweepers(provider):
        try:
            status = sweeper.credentials()
        except Exception as error:  # noqa: BLE001 - one provider's failure is shown beside the others
            skipped.append({"provider": sweeper.name, "reason": f"{type(error).__name__}: {error}"})
            continue
        if not status.found:
            skipped.append({"provider": sweeper.name, "reason": f"no credentials found ({status.where})"})
            continue
        try:
            machines = tuple(sweeper.machines(region))
        except Exception as error:  # noqa: BLE001 - reported; the other providers are still listed
            errors.append({"provider": sweeper.name, "error": str(error) or type(error).__name__})
            continue
        listed.append((sweeper, tuple(_idle_if_parked(m, parked) for m in machines)))
    return Found(tuple(listed), tuple(skipped), tuple(errors))


def _parked_pools() -> dict[tuple[str, str], float]:
    """The pools whose machines linger on this client (`providers/linger.py`), with their expiry."""
    from skyward.providers import linger

    return {(p.provider.lower(), p.pool): p.expires for p in linger.parked()}


def _idle_if_parked(machine: Machine, parked: dict[tuple[str, str], float]) -> Machine:
    """A parked pool's machine is shown idle, its lease ending when its guardian ends it."""
    expires = parked.get((machine.provider.lower(), machine.pool))
    if expires is None:
        return machine
    return attrs.evolve(
        machine, state="idle", lease_expires=datetime.datetime.fromtimestamp(expires, datetime.UTC)
    )


def _span(seconds: float) -> str:
    """A duration as its largest unit or two: `2d 3h`, `3h 05m`, `12m`."""
    minutes = max(int(seconds) // 60, 0)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    return f"{days}d {hours}h" if days else f"{hours}h {minutes:02d}m" if hours else f"{minutes}m"


def _age(machine: Machine, now: datetime.datetime) -> str:
    age = machine.age(now)
    return "?" if age is None else _span(age.total_seconds())


def _money(value: float | None, digits: int = 2) -> str:
    return "?" if value is None else f"${value:.{digits}f}"


def _lease(machine: Machine, now: datetime.datetime) -> Text:
    """How long the lease has left, or how long ago it lapsed (`--json` has the time itself)."""
    if machine.lease_expires is None:
        return Text("none", style="dim")
    left = (machine.lease_expires - now).total_seconds()
    return Text(f"lapsed {_span(-left)} ago", style="red") if left <= 0 else Text(f"{_span(left)} left")


def _machines_table(title: str, machines: Sequence[Machine], now: datetime.datetime) -> Table:
    """One machine a row; the id (column 3) is copied into a console or a script, never folded."""
    return table(
        title, ("pool", "node", "where", "id", "type", "state", "age", "$/hour", "spent", "lease"),
        [
            (m.pool, "?" if m.node is None else m.node, f"{m.provider} {m.region}", m.id, m.instance_type,
             m.state, _age(m, now), _money(m.hourly_price, 4), _money(m.spent(now)), _lease(m, now))
            for m in sorted(machines, key=lambda m: (m.provider, m.pool, -1 if m.node is None else m.node))
        ],
        whole=(3,),
    )


def _notes(found: Found) -> None:
    """On stderr, so that piped stdout holds the machines only."""
    for row in found.skipped:
        note(f"{row['provider']}: skipped, {row['reason']}")
    for row in found.errors:
        click.echo(f"Error: {row['provider']}: {row['error']}", err=True)


@click.command("ls")
@json_option
@provider_option
@region_option
def ls(as_json: bool, provider: str | None, region: str | None) -> None:
    """Every machine Skyward made on every provider with credentials: pool, node, state, age, cost.

    Only machines carrying Skyward's mark are listed (AWS: the skyward:pool tag; RunPod and
    Vast.ai: the skyward-<pool>- name). A provider without credentials is skipped, and said so.
    A lingering pool's machines (Options(linger=True)) are shown idle, with the time left before
    their guardians end them.
    """
    now = utc_now()
    found = find(provider, region)
    machines = found.all()
    if as_json:
        emit_json({
            "machines": [m.as_json(now) for m in machines],
            "skipped": list(found.skipped), "errors": list(found.errors),
        })
    else:
        if machines:
            draw(_machines_table("Skyward machines", machines, now))
        else:
            note("No Skyward machine found.")
        _notes(found)
    if found.errors:
        raise click.ClickException("some providers could not be listed (see above)")


@click.command("down")
@click.argument("pools", nargs=-1, metavar="[POOL]...")
@click.option("--expired", is_flag=True, help="End the machines whose lease has lapsed.")
@click.option("--all", "everything", is_flag=True, help="End every machine Skyward made.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@json_option
@provider_option
@region_option
def down(
    pools: tuple[str, ...], expired: bool, everything: bool, yes: bool, as_json: bool,
    provider: str | None, region: str | None,
) -> None:
    """End the machines of these pools (or --expired, or --all) and what their pools created.

    Only machines carrying Skyward's mark are ever ended. Asks first unless --yes.
    """
    if sum((bool(pools), expired, everything)) != 1:
        raise click.UsageError("name the pools to end, or pass --expired or --all (one of them)")
    now = utc_now()
    found = find(provider, region)
    if pools:
        pools = _pool_ids(pools, [m for _, machines in found.machines for m in machines], yes)
    plan = _down_plan(found, pools, everything, now)
    selected = [m for _, chosen, _ in plan for m in chosen]
    if not as_json:
        _show_plan(found, selected, pools, expired, now)
    if not plan:
        if as_json:
            emit_json({"ended": [], "failed": [], "skipped": list(found.skipped),
                       "errors": list(found.errors)})
        if found.errors:
            raise click.ClickException("some providers could not be listed (see above)")
        return
    if not yes:
        if not sys.stdin.isatty():
            raise click.ClickException("no terminal to confirm on: pass --yes to end these machines")
        click.confirm(f"End {len(selected)} machine(s) and their pools' resources?", abort=True, err=True)
    items: list[Ended] = []
    for sweeper, chosen, named in plan:
        try:
            items.extend(sweeper.end(chosen, named, region).items)
        except Exception as error:  # noqa: BLE001 - reported; the other providers still run
            items.extend(Ended(sweeper.name, m.pool, "machine", m.id, str(error)) for m in chosen)
    failed = _report_ended(found, items, as_json)
    if failed or found.errors:
        raise click.ClickException(f"{len(failed)} thing(s) could not be ended; see the result column")


def _down_plan(
    found: Found, pools: tuple[str, ...], everything: bool, now: datetime.datetime
) -> list[tuple[Sweeper, list[Machine], set[str]]]:
    """Per provider, the machines `sky down` ends and the pools whose other resources go with them:
    the named pools' (even with no machine left: their keys, volumes...), else every or every
    expired machine's."""
    plan: list[tuple[Sweeper, list[Machine], set[str]]] = []
    for sweeper, machines in found.machines:
        if pools:
            chosen = [m for m in machines if m.pool in pools]
            plan.append((sweeper, chosen, set(pools)))
        else:
            chosen = [m for m in machines if everything or m.expired(now)]
            if chosen:
                plan.append((sweeper, chosen, {m.pool for m in chosen}))
    return plan


def _show_plan(
    found: Found, selected: list[Machine], pools: tuple[str, ...], expired: bool, now: datetime.datetime
) -> None:
    """The machines about to be ended, or that none was found, and the providers' notes."""
    if selected:
        draw(_machines_table("To end", selected, now))
    else:
        what = "of " + ", ".join(pools) if pools else "expired" if expired else "at all"
        note(f"No Skyward machine {what} found" + (
            "; looking for what those pools left beside machines." if pools else "."
        ))
    _notes(found)


def _report_ended(found: Found, items: list[Ended], as_json: bool) -> list[Ended]:
    """Tell what was ended and what could not be (a table, or JSON); the latter is returned. Pools
    ended are forgotten by the lingering record: nothing of them is left to adopt."""
    from skyward.providers import linger

    ended = [i for i in items if i.error is None]
    failed = [i for i in items if i.error is not None]
    linger.forget(sorted({i.pool for i in ended}))
    if as_json:
        emit_json({
            "ended": [i.as_json() for i in ended], "failed": [i.as_json() for i in failed],
            "skipped": list(found.skipped), "errors": list(found.errors),
        })
        return failed
    rows = [(i.provider, i.pool, i.kind, i.id, Text("ended", style="green")) for i in ended]
    rows += [(i.provider, i.pool, i.kind, i.id, Text(f"not ended: {i.error}", style="red"))
             for i in failed]
    if rows:
        draw(table("Ended", ("provider", "pool", "what", "id", "result"), rows, whole=(3,)))
    else:
        note("Nothing was left to end.")
    return failed


def _pool_ids(names: tuple[str, ...], machines: list[Machine], yes: bool) -> tuple[str, ...]:
    """The pool ids `sky down NAME...` means. A name is a pool's id (`sky ls` shows ids), or its
    label (the name the pool was given), which several pools may share: then every pool of that
    label is meant, after asking (`--yes` does not ask). A name no machine carries is passed on as
    it is: the pool may have left resources beside machines (a security group, a key)."""
    from skyward.providers.naming import label_of

    ids: list[str] = []
    for name in names:
        exact = {m.pool for m in machines if m.pool == name}
        labelled = sorted({m.pool for m in machines if label_of(m.pool) == name and m.pool != name})
        if exact or not labelled:
            ids.append(name)
            continue
        if len(labelled) > 1 and not yes:
            listed = ", ".join(labelled)
            if not sys.stdin.isatty():
                raise click.ClickException(
                    f"{len(labelled)} pools are labelled {name!r}: {listed}. Name the one to end by its "
                    "id, or pass --yes to end them all"
                )
            click.confirm(f"{len(labelled)} pools are labelled {name!r} ({listed}); end them all?",
                          abort=True, err=True)
        ids.extend(labelled)
    return tuple(dict.fromkeys(ids))
