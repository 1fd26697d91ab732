"""`prepare_node`: what a provider calls to turn a reachable machine into one ready to start a worker.

It uploads skyward's wheels (source "local") and the image's includes through the provider's
`CommandRunner`, renders the bootstrap script and runs it. Wheels are assembled once per client and
content (cached in `~/.skyward/wheels`, see `wheels.py`), however many nodes and pools ask for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from skyward.bootstrap import environments
from skyward.bootstrap.bytecode import BUNDLE, client_bundle
from skyward.bootstrap.ops import as_ops
from skyward.bootstrap.render import Script, render_script
from skyward.bootstrap.runner import CommandRunner, RunnerConnectionLost, new_progress, run_bootstrap
from skyward.bootstrap.uv import serve_request
from skyward.bootstrap.wheels import local_wheels, resolve_source, wheel_cache_dir
from skyward.errors import SkywardError
from skyward.observe.events import BootstrapRequested

if TYPE_CHECKING:
    from skyward.providers.base import NodeSetup

__all__ = ["DEFAULT_EXCLUDES", "Reconnect", "bootstrap_secrets", "prepare_node", "stage_includes"]

#: The file the client writes into the node folder once the uploads are there; the script's phases
#: that need them (pip, includes, skyward) wait for it, the first ones (uv, venv, apt) do not.
UPLOADS_MARKER = "uploads.done"

#: Never shipped with includes, whatever `Image.excludes` says.
DEFAULT_EXCLUDES: tuple[str, ...] = ("__pycache__", "*.pyc", ".git", ".DS_Store")

#: The assembly of the client's wheels under way, shared by the nodes that ask meanwhile.
_wheels_task: asyncio.Future[tuple[Path, ...]] | None = None


#: Reconnects to a node after a lost connection; returns a runner on the new connection, with
#: whatever the old bootstrap left running stopped. Raises `ConnectionError` when it cannot.
Reconnect = Callable[[], Awaitable[CommandRunner]]


async def prepare_node(
    runner: CommandRunner, setup: NodeSetup, *, node: int, workdir: str, python: str | None,
    system_site_packages: bool = False, reconnect: Reconnect | None = None,
    environments_root: str | None = None, before_script: Awaitable[Any] | None = None,
    first: str = "", on_guardian: Callable[[str], None] | None = None,
) -> Script:
    """Upload, render and run the bootstrap for `setup` on the node behind `runner`; return its Script.

    `setup` is the pool's `NodeSetup` (image after plugin transforms, plugin ops, emit, timeout).
    On the node: wheels go to `<workdir>/wheels/`, includes to `<workdir>/includes/`, the venv to
    `<workdir>/venv`. Raises `BootstrapFailed` when a phase fails or the timeout runs out. The
    worker is started by the caller, with `script.launch_line(setup.launch)`.

    When the runner loses its connection (`RunnerConnectionLost`), `reconnect` (if given) gets a
    runner on a new connection and the bootstrap resumes there: uploads and image phases run again
    (they are idempotent: the venv is reused, installs find their packages), and the plugin ops
    that completed are skipped, so only the op that was cut off runs a second time. This repeats
    while `bootstrap_timeout` lasts. Without `reconnect`, or when reconnecting fails, the bootstrap
    fails with `BootstrapFailed` naming the phase that was running and the lost connection. A host
    key refused on reconnecting is raised as it is (`HostKeyError`).

    With `environments_root` (a folder on the node), the venv is a warm environment there
    (`environments`): a node that already holds the one this image builds reuses it, and then
    the wheels are not uploaded at all (one round trip asks whether it is ready).

    The uploads go on while the script's first phases (uv, venv, apt) run: the client writes
    `UPLOADS_MARKER` once they are there, and the phases that need them wait for it. The
    `bootstrap_timeout` counts from the script's start, so it covers the uploads that overlap it.
    `before_script` (the node's guardian being started) is awaited before the script first runs.
    `first`: bash lines the script runs before anything else (the start of the node's guardian,
    `skyward.guardian.script_start`), whose answer goes to `on_guardian`.
    """
    ops = as_ops(setup.ops)
    setup.emit(BootstrapRequested(node=node))
    secrets = bootstrap_secrets(setup, ops)
    progress = new_progress(node, setup.emit, secrets)
    answers: list[asyncio.Future[None]] = []  # what the node asked the client for (`uv.serve_request`)
    progress.on_need = lambda line: answers.append(asyncio.ensure_future(serve_request(runner, line)))
    progress.on_guardian = on_guardian
    wheels: tuple[Path, ...] = ()
    if resolve_source(setup.image) == "local":  # the pool's, assembled at its start, or assembled here
        wheels = tuple(getattr(setup, "wheels", None) or ()) or await _client_wheels()
    environment = None
    if environments_root is not None:
        environment = await _environment(setup.image, python, system_site_packages, environments_root, wheels)
    job = _Job(setup.image, ops, workdir, python, system_site_packages, wheels, environment, node,
               setup.emit, secrets, float(setup.bootstrap_timeout), progress, first)
    # The worker's bytecode (looked up meanwhile: a few dozen file times) goes with the wheels.
    bundle = asyncio.ensure_future(asyncio.to_thread(client_bundle)) if wheels else None
    run = _Run(before_script=before_script)
    try:
        while True:
            try:
                return await _attempt(job, run, runner, bundle)
            except RunnerConnectionLost as lost:
                now = asyncio.get_running_loop().time()
                run.deadline = now + job.budget if run.deadline is None else run.deadline  # lost uploading
                runner = await _resumed(lost, progress, reconnect, run.deadline - now, job.budget)
                run.resume = True
    finally:  # a node's request still open when its bootstrap ended is moot
        for answer in answers:
            answer.cancel()


@attrs.frozen
class _Job:
    """What one node's bootstrap is (`prepare_node`'s arguments, resolved)."""

    image: Any
    ops: tuple[Any, ...]
    workdir: str
    python: str | None
    system_site_packages: bool
    wheels: tuple[Path, ...]
    environment: str | None
    node: int
    emit: Any
    secrets: tuple[str, ...]
    budget: float
    progress: Any
    #: Bash lines run first in the script (`render_script(first=...)`).
    first: str = ""


@attrs.define
class _Run:
    """What one node's bootstrap carries from one attempt to the next (after a reconnect)."""

    script: Script | None = None
    #: The timeout counts from the first run of the script.
    deadline: float | None = None
    resume: bool = False
    before_script: Awaitable[Any] | None = None


async def _attempt(job: _Job, run: _Run, runner: CommandRunner, bundle: Any) -> Script:
    """One try at the bootstrap on `runner`: the uploads and the script's run, together.

    With a warm environment (`job.environment`) the script says first whether the node holds it
    (`environments.DECISION`), and the wheels go only when it does not: no round trip asks before
    the script starts. A resumed run sends them before its script starts, warm or not: the marker
    a run before it wrote may be on the node already, so the script would not wait for them.
    """
    if run.script is None:
        remote_wheels, includes_dir = _remote_paths(job.image, job.workdir, job.wheels)
        run.script = render_script(
            job.image, job.ops, workdir=job.workdir, python=job.python, wheels=remote_wheels,
            includes_dir=includes_dir, system_site_packages=job.system_site_packages,
            environment=job.environment,
            uploads_marker=f"{job.workdir}/{UPLOADS_MARKER}" if job.wheels or includes_dir else None,
            first=job.first,
        )
    script = run.script
    decided: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    if job.environment is None or run.resume:
        decided.set_result(False)

    def on_environment(warm: bool) -> None:
        if not decided.done():
            decided.set_result(warm)

    job.progress.on_environment = on_environment
    transfer = asyncio.ensure_future(_upload(
        runner, job.image, job.workdir, job.wheels, warm=decided, marker=script.uploads_marker,
        bytecode=bundle,
    ))
    try:
        if run.resume or script.uploads_marker is None:  # a resumed run finds its files in place
            await transfer
        if run.before_script is not None:
            await run.before_script
            run.before_script = None
    except BaseException:
        transfer.cancel()
        raise
    loop = asyncio.get_running_loop()
    if run.deadline is None:
        run.deadline = loop.time() + job.budget
    await _together(transfer, run_bootstrap(
        runner, script, node=job.node, emit=job.emit, timeout=max(run.deadline - loop.time(), 0.001),
        secrets=job.secrets, resume=run.resume, progress=job.progress, budget=job.budget,
    ))
    return script


async def _resumed(
    lost: RunnerConnectionLost, progress: Any, reconnect: Reconnect | None, left: float, budget: float
) -> CommandRunner:
    """A runner on a new connection after `lost`, to resume the bootstrap on (`prepare_node`);
    raises the bootstrap's failure, naming the phase that was running, when there is none."""
    # The phase that was running, or, before the first phase, the upload of the files.
    phase = progress.phase or progress.last_phase or "upload"
    if reconnect is None or left <= 0:
        hint = (
            "reconnecting is not possible here" if reconnect is None
            else f"bootstrap_timeout={budget:g}s ran out"
        )
        progress.fail_running()
        raise progress.failure(
            phase, f"{lost}; {hint}. Check the host and the network, then start the pool again."
        ) from None
    progress.note(f"skyward: {lost} in phase {phase!r}; reconnecting to resume the bootstrap")
    try:
        runner = await asyncio.wait_for(reconnect(), left)
    except SkywardError:
        raise  # a host key refused on reconnecting is a HostKeyError, not a failed bootstrap
    except (TimeoutError, ConnectionError, OSError) as exc:
        reason = "it timed out" if isinstance(exc, TimeoutError) else str(exc)
        progress.fail_running()
        raise progress.failure(
            phase,
            f"{lost}, and reconnecting failed: {reason}. Check that the host is up and reachable "
            "(raise Options(ssh_timeout=...) for a host that takes longer to come back), then "
            "start the pool again.",
        ) from None
    progress.interrupted()
    return runner


async def _environment(
    image: Any, python: str | None, system_site_packages: bool, root: str, wheels: tuple[Path, ...]
) -> str:
    """The folder on the node of the warm environment this image builds (`environments`)."""
    return await asyncio.to_thread(
        environments.environment_for, image, python, system_site_packages, wheels, root
    )


def _remote_paths(image: Any, workdir: str, wheels: tuple[Path, ...]) -> tuple[tuple[str, ...], str | None]:
    """Where `_upload` puts skyward's wheels and the image's includes on the node."""
    remote_wheels = tuple(f"{workdir}/wheels/{wheel.name}" for wheel in wheels)
    return remote_wheels, (f"{workdir}/includes" if image.includes else None)


async def _upload(
    runner: CommandRunner, image: Any, workdir: str, wheels: tuple[Path, ...], *,
    warm: Awaitable[bool], marker: str | None = None, bytecode: Awaitable[Path] | None = None,
) -> None:
    """Skyward's `wheels` (source "local") and the image's includes onto the node (`_remote_paths`).
    The includes go at once; the wheels once `warm` says the node has no warm environment (one
    holds them installed), as one folder (one session, not one per wheel) with the worker's
    `bytecode` (`bytecode.BUNDLE`). Then, when the script waits for them, its `marker` file (a
    warm script with no includes waits for nothing: `phases.await_uploads`)."""
    _, includes_dir = _remote_paths(image, workdir, wheels)
    staged: list[Path] = []

    async def send_wheels() -> bool:
        if not wheels or await warm:
            return False
        code = await bytecode if bytecode is not None else None
        staged.append(await asyncio.to_thread(_stage_wheels, wheels, code))
        await runner.put(staged[-1], f"{workdir}/wheels")
        return True

    async def send_includes() -> bool:
        if includes_dir is None:
            return False
        staged.append(await asyncio.to_thread(stage_includes, image.includes, image.excludes))
        await runner.put(staged[-1], includes_dir)
        return True

    try:
        sent = await _all([send_wheels(), send_includes()])
        if marker is not None and any(sent):
            staged.append(Path(tempfile.mkdtemp(prefix="skyward-uploads-")))
            (staged[-1] / UPLOADS_MARKER).touch()
            await runner.put(staged[-1] / UPLOADS_MARKER, marker)
    finally:
        for folder in staged:
            shutil.rmtree(folder, ignore_errors=True)


async def _together(transfer: asyncio.Future[None], run: Awaitable[None]) -> None:
    """The script's run while the uploads it waits for go on. The first to fail ends the other
    (the script stopped on the node, the copies cancelled) and its error is raised, the
    uploads' first: a script waiting for files that will not come has nothing to say."""
    script = asyncio.ensure_future(run)
    try:
        await asyncio.wait({transfer, script}, return_when=asyncio.FIRST_EXCEPTION)
        for task in (transfer, script):
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
    finally:
        for task in (transfer, script):
            if not task.done():
                task.cancel()
        await asyncio.gather(transfer, script, return_exceptions=True)


async def _all(awaitables: list[Awaitable[Any]]) -> list[Any]:
    """Await them together; the first error is raised once every one has ended (none left running)."""
    results = await asyncio.gather(*awaitables, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def _stage_wheels(wheels: Iterable[Path], bytecode: Path | None = None) -> Path:
    """A fresh local folder holding `wheels` (hard links where the file system allows: no copy),
    and the `bytecode` bundle as `BUNDLE` when there is one (left out when it cannot be read)."""
    staging = Path(tempfile.mkdtemp(prefix="skyward-wheels-"))
    for wheel in wheels:
        _place(wheel, staging / wheel.name)
    if bytecode is not None:
        with contextlib.suppress(OSError):  # an accelerator: the worker compiles without it
            _place(bytecode, staging / BUNDLE)
    return staging


def _place(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def bootstrap_secrets(setup: NodeSetup, ops: Iterable[Any] = ()) -> tuple[str, ...]:
    """Everything to mask in bootstrap output: the setup's, the ops' and Skyward's registered secrets."""
    found: list[str] = list(getattr(setup, "secrets", ()) or ())
    for op in ops:
        found += list(getattr(op, "secrets", ()) or ())
    from skyward.observe import logging as sky_logging

    found += sky_logging.registered_secrets()
    shortest = sky_logging.MIN_SECRET_LENGTH  # shorter ones would mask ordinary words
    return tuple(dict.fromkeys(s for s in found if s and len(s) >= shortest))


async def _client_wheels() -> tuple[Path, ...]:
    """The client's skyward wheels. Concurrent nodes share the assembly under way instead of each
    running its own after the other; one asking after it ended starts a new one (an edit counts)."""
    global _wheels_task
    loop = asyncio.get_running_loop()
    task = _wheels_task
    if task is None or task.done() or task.get_loop() is not loop:
        task = _wheels_task = asyncio.ensure_future(asyncio.to_thread(local_wheels, wheel_cache_dir()))
    return await asyncio.shield(task)


def _excluded(relative: str, name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(name, p) for p in patterns)


def stage_includes(includes: Iterable[str], excludes: Iterable[str] = ()) -> Path:
    """Copy `includes` into a fresh local folder laid out the way the node's PYTHONPATH expects.

    A package (a folder with `__init__.py`) keeps its name; the modules of a plain source folder
    (`./src`) land at the top; a `.py` file lands at the top. `excludes` are globs matched against
    each path relative to its include and against its bare name (`"*.ckpt"`, `"data/*"`, `"tests"`).
    Returns the folder; the caller removes it.
    """
    patterns = (*DEFAULT_EXCLUDES, *excludes)
    staging = Path(tempfile.mkdtemp(prefix="skyward-includes-"))
    try:
        for item in includes:
            source = Path(item).expanduser().resolve()
            if not source.exists():
                raise FileNotFoundError(
                    f"Image(includes=[{item!r}]): {source} does not exist; includes name local folders or "
                    ".py files, relative to the current directory"
                )
            if source.is_file():
                shutil.copy2(source, staging / source.name)
                continue
            package = (source / "__init__.py").exists()
            target = staging / source.name if package else staging
            _copy_tree(source, target, patterns)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging


def _copy_tree(source: Path, target: Path, patterns: tuple[str, ...]) -> None:
    for dirpath, dirnames, filenames in os.walk(source):
        here = Path(dirpath)
        rel_dir = here.relative_to(source)
        dirnames[:] = [
            d for d in dirnames if not _excluded((rel_dir / d).as_posix(), d, patterns)
        ]
        (target / rel_dir).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            relative = (rel_dir / name).as_posix()
            if not _excluded(relative, name, patterns):
                shutil.copy2(here / name, target / rel_dir / name)
