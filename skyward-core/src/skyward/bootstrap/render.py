"""Render an `Image` plus plugin `Op`s into the one bash script every provider runs on a node.

The script is identical for every provider (Local(isolated=True), SSH, the clouds): the provider
only decides how to run it (`runner.run_bootstrap`) and where (`workdir`). It prints machine-readable
markers on stdout, which the runner turns into events:

    ::skyward-phase:<name>:start            a phase began
    ::skyward-phase:<name>:done             it finished
    ::skyward-phase:<name>:fail:<exit code> it failed (printed by an EXIT trap, so `exit 1` counts)
    ::skyward-command:<command>             a command the phase is about to run
    ::skyward-failed-command:<command>      inside a plugin op: the command that failed

Phases, in order: `uv` (the host's uv, else the pinned one installed once per host under
`~/.skyward/uv`, see `skyward.bootstrap.uv`; with a warm environment, decided before it, none is
needed), `venv` (`uv venv` at `<workdir>/venv`, reused when it was made for the same Python),
`apt` (only when `Image.apt`; its `apt-get update` starts in the background before the venv phase,
see `phases.apt_update_early`), then, when the provider uploads files while these first phases
run, a wait for them (`phases.await_uploads`), `pip` (only when `Image.pip`; skyward-core and its
dependencies join its resolve, one uv run instead of two, unless skyward comes from github), `env`
(writes `<workdir>/env.sh`), `includes` (only with an `includes_dir`), `skyward` (installs the
rest of skyward into the venv; the worker's start is the import check), then one phase per plugin
op, named after `Op.name`, in plugin order.

Scoped indexes (`PipIndex`): uv applies `[tool.uv.sources]` pins and `explicit = true` indexes when
it installs `-r pyproject.toml`, so with indexes the pip phase writes `<workdir>/requirements/
pyproject.toml` (mode 600: an index URL may hold credentials) naming `Image.pip` as dependencies,
each index as an explicit `[[tool.uv.index]]` and each of its packages pinned to it. A routed
package and nothing else comes from its index; its dependencies and every other package come from
the default index (PyPI). uv applies sources to the requirements named there only, so an index
package that arrives merely as a dependency of another comes from PyPI: list it in `Image.pip` to
route it. Without indexes the phase is one plain
`uv pip install`.

`env.sh` is POSIX sh (the worker launch may source it from `/bin/sh`): the image's `env` with every
value single-quoted, the values of `shell_vars` (each snippet runs once, in the env phase, and its
stdout becomes the value, so `{"HOST": "hostname"}` gives HOST its output), then skyward's own
variables: `SKYWARD_WORKDIR`, `SKYWARD_VENV`, `VIRTUAL_ENV`, `PATH` (the venv's bin and uv first)
and `PYTHONPATH` (the includes directory). The file is mode 600: image env values may be tokens.

A run cut off by a lost connection is resumed on a new one with `SKYWARD_BOOTSTRAP_RESUME=1`:
the image phases run again (each is idempotent), and each plugin op that completed (it leaves
`<workdir>/bootstrap/<op file>.done`) is skipped; a run without the variable clears those marks.

The worker is not started here. A provider starts it with `Script.launch_line(setup.launch)`:
`. <workdir>/env.sh && exec <launch command>`, after the bootstrap, or (SSH) on a request sent with
it that waits on the node for the file the script's EXIT trap writes its status into, when its
`first` lines name one (`phases.STATUS_VARIABLE`).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from skyward.bootstrap import environments
from skyward.bootstrap.ops import Op, as_ops
from skyward.bootstrap.phases import (
    PRELUDE,
    RESUME,
    UNSAFE_PHASE,
    apt_phase,
    apt_update_early,
    await_uploads,
    env_phase,
    includes_phase,
    interpreter_spec,
    op_phase,
    pip_phase,
    setup,
    uv_phase,
    venv_phase,
)
from skyward.bootstrap.skyward_installs import skyward_installs, skyward_phase

__all__ = ["IMAGE_PHASES", "RESUME", "Script", "phase_names", "render_script"]

#: The image phases, in the order they run; plugin ops follow, one phase each.
IMAGE_PHASES: tuple[str, ...] = ("uv", "venv", "apt", "pip", "env", "includes", "skyward")




@attrs.frozen
class Script:
    """A rendered bootstrap: the bash text and the paths it creates on the node."""

    text: str
    python_bin: str
    venv_dir: str
    workdir: str
    #: The warm environment the venv lives in (`environments`), None when it is the node folder's own.
    environment: str | None = None
    #: The file the client writes once its uploads are there (`prepare.UPLOADS_MARKER`); None when
    #: the script does not wait for uploads (nothing to upload).
    uploads_marker: str | None = None

    @property
    def env_file(self) -> str:
        return f"{self.workdir}/env.sh"

    def launch_line(self, launch: Any) -> str:
        """The shell line that starts the worker: the node's env, then `exec` of the launch command.

        `launch` is a `LaunchCommand` (anything with `render()`) or an already rendered string.
        """
        command = launch.render() if hasattr(launch, "render") else str(launch)
        return f". {shlex.quote(self.env_file)} && exec {command}"


def render_script(
    image: Any,
    ops: Iterable[Op | str] = (),
    *,
    workdir: str,
    python: str | None = None,
    wheels: tuple[str, ...] = (),
    includes_dir: str | None = None,
    system_site_packages: bool = False,
    environment: str | None = None,
    uploads_marker: str | None = None,
    first: str = "",
) -> Script:
    """The bootstrap script for `image` followed by the plugin `ops`, rooted at `workdir` on the node.

    `python`: None uses `image.python_version()`; `"auto"` the client's major.minor; a version
    (`"3.12"`) asks uv for that interpreter; a path (`"/usr/bin/python3.11"`) uses that one.
    `wheels` are paths *on the node* of skyward wheels the provider uploaded (source "local");
    `includes_dir` is where the provider put `Image.includes` (the script checks it and adds it to
    PYTHONPATH). `environment`: the folder on the node of the warm environment to build or reuse
    (`environments`); None keeps the venv in the node folder. `uploads_marker`: a path on the node
    that the phases needing the uploads (pip, env, includes, skyward) wait for, so that the first
    ones (uv, venv, apt) run while the provider uploads. `first`: bash lines run before anything
    else, each run of the script (a provider's start of the node's guardian: `guardian.script_start`).
    """
    if not workdir.startswith("/"):
        raise ValueError(
            f"render_script(workdir={workdir!r}): the workdir must be an absolute path on the node "
            "(the worker's python path is derived from it); resolve ~ or $HOME before rendering"
        )
    workdir = workdir.rstrip("/") or "/"
    venv = f"{workdir}/venv"
    body = _phases(
        image, as_ops(ops), workdir=workdir, python_spec=interpreter_spec(image, python), wheels=wheels,
        includes_dir=includes_dir, system_site_packages=system_site_packages, environment=environment,
        uploads_marker=uploads_marker,
    )
    text = PRELUDE + "__sky_main() {\n" + first + "\n".join(body) + "}\n\n__sky_main \"$@\" < /dev/null\n"
    return Script(
        text=text, python_bin=f"{venv}/bin/python", venv_dir=venv, workdir=workdir,
        environment=environment, uploads_marker=uploads_marker,
    )


def _phases(
    image: Any, op_list: Sequence[Op], *, workdir: str, python_spec: str, wheels: tuple[str, ...],
    includes_dir: str | None, system_site_packages: bool, environment: str | None,
    uploads_marker: str | None,
) -> list[str]:
    """The script's body, phase by phase, in the order `render_script` documents."""
    venv = f"{workdir}/venv"
    names = phase_names(image, op_list, includes_dir=includes_dir)
    shared = environment is not None
    reusable = environments.skip_when_warm if shared else (lambda phase: phase)
    body: list[str] = [setup(workdir)]
    if environment is not None:  # warm or cold decided first: a warm node needs no uv
        body.append(environments.select(environment))
    body.append(uv_phase(python_spec))
    if image.apt:
        body.append(apt_update_early())
    body.append(reusable(venv_phase(python_spec, system_site_packages, shared=shared)))
    if image.apt:
        body.append(reusable(apt_phase(tuple(image.apt))))
    if uploads_marker is not None:
        # Where only the wheels are uploaded, a warm environment waits for nothing.
        body.append(await_uploads(uploads_marker, cold_only=shared and includes_dir is None))
    installs = skyward_installs(image, wheels)
    core_in_pip = bool(image.pip) and installs.joins_pip
    if image.pip:
        joined = installs if core_in_pip else None
        body.append(reusable(pip_phase(tuple(image.pip), tuple(image.pip_indexes), joined)))
    body.append(env_phase(image, workdir, venv, environment))
    if includes_dir is not None:
        body.append(includes_phase(includes_dir))
    body.append(reusable(skyward_phase(image, wheels, core_in_pip=core_in_pip)))
    if shared:
        body.append(environments.seal())
    for index, (op, name) in enumerate(zip(op_list, names[-len(op_list):] if op_list else (), strict=True)):
        body.append(op_phase(op, name, index))
    return body


def phase_names(image: Any, ops: Sequence[Op], *, includes_dir: str | None = None) -> tuple[str, ...]:
    """Every phase the script for (`image`, `ops`) runs, in order; op names made unique and marker-safe."""
    names = ["uv", "venv"]
    if image.apt:
        names.append("apt")
    if image.pip:
        names.append("pip")
    names.append("env")
    if includes_dir is not None:
        names.append("includes")
    names.append("skyward")
    used = set(IMAGE_PHASES) | {"timeout", "bootstrap"}
    for op in ops:
        base = UNSAFE_PHASE.sub("-", op.name).strip("-") or "op"
        name, n = base, 1
        while name in used:
            n += 1
            name = f"{base}-{n}"
        used.add(name)
        names.append(name)
    return tuple(names)
