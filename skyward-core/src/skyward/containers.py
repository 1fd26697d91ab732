"""`sky.containers`: the Docker images a container-based cloud boots its nodes from.

`sky.Image` describes the workers' environment (Python, pip, apt); the *base* image the machine
runs is the provider's choice, set per provider (`RunPod(container_image=...)`,
`VastAI(docker_image=...)`, `Novita(docker_image=...)`). The helpers here spell the references
of the usual base images so that nobody has to remember a tag's exact shape, and return a
`DockerImage`: the reference plus what is known of its CUDA and Ubuntu versions (the torch
plugin's wheel index, `cuda_tag`, can be read from it). A plain string is accepted wherever a
`DockerImage` is; `DockerImage.of(ref, cuda=..., ubuntu=...)` wraps any other reference.

    sky.containers.cuda("12.9", variant="devel", ubuntu="24.04")  # nvidia/cuda:12.9.1-devel-ubuntu24.04
    sky.containers.ubuntu("24.04")                                # ubuntu:24.04
    sky.containers.pytorch("2.8", cuda="12.8")                    # nvcr.io/nvidia/pytorch:25.06-py3
    sky.containers.runpod_pytorch("2.8")                          # runpod/pytorch:2.8.0-py3.11-...
"""

from __future__ import annotations

import re

import attrs

from skyward.errors import ConfigurationError

__all__ = ["DockerImage", "cuda", "cuda_of", "image_ref", "pytorch", "runpod_pytorch", "ubuntu"]

#: What `image_ref` learnt of each reference it turned into a string (a `DockerImage`'s `cuda`):
#: provider configs keep the string their API takes, and `cuda_of` still knows the version.
_KNOWN_CUDA: dict[str, str] = {}
#: A CUDA version written in a reference: `nvidia/cuda:12.8.1-...`, `...-cuda12.8.1-...`.
_CUDA_IN_REF = re.compile(r"(?:nvidia/cuda:|cuda)(\d+)\.(\d+)")

#: The last patch release of each CUDA minor that `nvidia/cuda` publishes images for.
CUDA_PATCHES = {
    "11.8": "11.8.0", "12.1": "12.1.1", "12.2": "12.2.2", "12.3": "12.3.2", "12.4": "12.4.1",
    "12.5": "12.5.1", "12.6": "12.6.3", "12.8": "12.8.1", "12.9": "12.9.1", "13.0": "13.0.1",
}
#: `nvidia/cuda` flavours: the bare runtime libraries, the runtime, the toolkit (nvcc), with cuDNN.
CUDA_VARIANTS = ("base", "runtime", "devel", "cudnn-runtime", "cudnn-devel")
#: NGC PyTorch releases (`nvcr.io/nvidia/pytorch:<release>-py3`): torch version -> (release, CUDA,
#: Ubuntu), oldest CUDA first, from NVIDIA's PyTorch release notes.
NGC_PYTORCH = {
    "2.3": (("24.04", "12.4", "22.04"),),
    "2.4": (("24.07", "12.5", "22.04"),),
    "2.5": (("24.10", "12.6", "22.04"),),
    "2.6": (("24.12", "12.6", "24.04"), ("25.01", "12.8", "24.04")),
    "2.7": (("25.03", "12.8", "24.04"),),
    "2.8": (("25.06", "12.9", "24.04"), ("25.08", "13.0", "24.04")),
    "2.10": (("25.12", "13.1", "24.04"),),
}
#: RunPod's official PyTorch images (torch, Python, CUDA and sshd), by torch version.
RUNPOD_PYTORCH = {
    "2.1": ("runpod/pytorch:2.1.0-py3.10-cuda11.8.0-devel-ubuntu22.04", "11.8", "22.04"),
    "2.2": ("runpod/pytorch:2.2.0-py3.10-cuda12.1.1-devel-ubuntu22.04", "12.1", "22.04"),
    "2.4": ("runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04", "12.4", "22.04"),
    "2.8": ("runpod/pytorch:2.8.0-py3.11-cuda12.8.1-cudnn-devel-ubuntu22.04", "12.8", "22.04"),
}
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")


def _minor(version: str, what: str) -> str:
    """'12.8' from '12.8' or '12.8.1'; a clear error for anything else."""
    text = str(version).strip()
    if not _VERSION.match(text):
        raise ConfigurationError(f"{what} version {version!r}: expected major.minor, e.g. '12.8'")
    return ".".join(text.split(".")[:2])


def _optional_minor(what: str) -> object:
    def convert(value: object) -> str | None:
        return None if value is None else _minor(str(value), what)

    return convert


def _check_ref(instance: DockerImage, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value):
        raise ConfigurationError(
            f"DockerImage({value!r}): expected an image reference such as "
            "'nvidia/cuda:12.8.1-devel-ubuntu22.04'"
        )


@attrs.frozen
class DockerImage:
    """A Docker image reference, with the CUDA and Ubuntu versions it is known to carry (None:
    unknown). `str(image)` is the reference, as a provider's API takes it."""

    ref: str = attrs.field(validator=_check_ref)
    cuda: str | None = attrs.field(default=None, converter=_optional_minor("CUDA"), kw_only=True)
    ubuntu: str | None = attrs.field(default=None, kw_only=True)

    @classmethod
    def of(cls, ref: str | DockerImage, cuda: str | None = None, ubuntu: str | None = None) -> DockerImage:
        """Any reference (`"myorg/train:1.2"`), with what you know of its CUDA and Ubuntu."""
        if isinstance(ref, DockerImage):
            return attrs.evolve(ref, cuda=cuda or ref.cuda, ubuntu=ubuntu or ref.ubuntu)
        return cls(str(ref).strip(), cuda=cuda, ubuntu=ubuntu)

    @property
    def cuda_tag(self) -> str | None:
        """The CUDA version as PyTorch's wheel indexes name it (`cu128`), or None."""
        return f"cu{self.cuda.replace('.', '')}" if self.cuda else None

    def __str__(self) -> str:
        return self.ref


def image_ref(value: object, *, provider: str, argument: str) -> str:
    """The reference a provider's API takes, from a `DockerImage` or a string; `provider` and
    `argument` name where it was passed (`RunPod(container_image=...)`) in the error."""
    if isinstance(value, DockerImage):
        if value.cuda:
            _KNOWN_CUDA[value.ref] = value.cuda
        return value.ref
    if isinstance(value, str) and value.strip() and not any(c.isspace() for c in value.strip()):
        return value.strip()
    raise ConfigurationError(
        f"{provider}({argument}={value!r}): expected an image reference string or a DockerImage "
        "(sky.containers.cuda('12.8'), sky.containers.DockerImage.of('repo/image:tag'))"
    )


def cuda(version: str = "12.8", variant: str = "devel", ubuntu: str | None = None) -> DockerImage:
    """NVIDIA's `nvidia/cuda` image: `variant` is base, runtime, devel, cudnn-runtime or
    cudnn-devel; `ubuntu` defaults to 24.04 (22.04 for CUDA releases older than 12.5)."""
    full = str(version).strip()
    minor = _minor(full, "CUDA")
    if full.count(".") == 1:
        if minor not in CUDA_PATCHES:
            raise ConfigurationError(
                f"sky.containers.cuda({version!r}): no known nvidia/cuda release for CUDA {minor}; "
                f"pass the full version (e.g. '{minor}.0') or one of {', '.join(CUDA_PATCHES)}"
            )
        full = CUDA_PATCHES[minor]
    if variant not in CUDA_VARIANTS:
        raise ConfigurationError(
            f"sky.containers.cuda(variant={variant!r}): expected one of {', '.join(CUDA_VARIANTS)}"
        )
    distro = _minor(ubuntu, "Ubuntu") if ubuntu else ("24.04" if _at_least(minor, "12.5") else "22.04")
    return DockerImage(f"nvidia/cuda:{full}-{variant}-ubuntu{distro}", cuda=minor, ubuntu=distro)


def ubuntu(version: str = "24.04") -> DockerImage:
    """The plain `ubuntu` image (no CUDA: for CPU nodes, or an image whose CUDA comes from pip)."""
    distro = _minor(version, "Ubuntu")
    return DockerImage(f"ubuntu:{distro}", ubuntu=distro)


def pytorch(version: str = "2.8", cuda: str | None = None) -> DockerImage:
    """NVIDIA's NGC PyTorch image (`nvcr.io/nvidia/pytorch:<release>-py3`) carrying torch
    `version`: the release with `cuda` if there is one, else the first with a newer CUDA of the
    same major (CUDA's minor-version compatibility), else the newest."""
    torch = _minor(version, "PyTorch")
    releases = NGC_PYTORCH.get(torch)
    if releases is None:
        raise ConfigurationError(
            f"sky.containers.pytorch({version!r}): no known NGC release carries torch {torch} "
            f"(known: {', '.join(NGC_PYTORCH)}); use DockerImage.of('nvcr.io/nvidia/pytorch:YY.MM-py3')"
        )
    chosen = releases[-1]
    if cuda is not None:
        wanted = _minor(cuda, "CUDA")
        same_major = [r for r in releases if r[1].split(".")[0] == wanted.split(".")[0]]
        exact = [r for r in releases if r[1] == wanted]
        newer = [r for r in same_major if _at_least(r[1], wanted)]
        chosen = (exact or newer or same_major or releases)[0]
    release, cuda_minor, distro = chosen
    return DockerImage(f"nvcr.io/nvidia/pytorch:{release}-py3", cuda=cuda_minor, ubuntu=distro)


def runpod_pytorch(version: str = "2.8") -> DockerImage:
    """RunPod's official PyTorch image for torch `version` (it comes with sshd and Python)."""
    torch = _minor(version, "PyTorch")
    if torch not in RUNPOD_PYTORCH:
        raise ConfigurationError(
            f"sky.containers.runpod_pytorch({version!r}): known torch versions are "
            f"{', '.join(RUNPOD_PYTORCH)}; use DockerImage.of('runpod/pytorch:<tag>') for another"
        )
    ref, cuda_minor, distro = RUNPOD_PYTORCH[torch]
    return DockerImage(ref, cuda=cuda_minor, ubuntu=distro)


def _at_least(version: str, floor: str) -> bool:
    return tuple(int(p) for p in version.split(".")) >= tuple(int(p) for p in floor.split("."))


def cuda_of(image: object) -> str | None:
    """The CUDA version (`"12.8"`) of a base image: a `DockerImage`'s own, the one it had when a
    provider config took its reference (`image_ref`), or the one its reference spells; None when
    none of them says."""
    if isinstance(image, DockerImage):
        return image.cuda or cuda_of(image.ref)
    if not isinstance(image, str):
        return None
    if image in _KNOWN_CUDA:
        return _KNOWN_CUDA[image]
    match = _CUDA_IN_REF.search(image)
    return f"{match[1]}.{match[2]}" if match else None
