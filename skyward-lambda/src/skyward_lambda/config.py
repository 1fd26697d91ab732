"""`sky.LambdaCloud(...)`: the frozen value a user writes to run a pool on Lambda Cloud.

Everything is checked when the value is built, so a misspelt region fails on the line that wrote
it. The API keys are resolved when a pool starts (`account`), never here: an environment key would
otherwise travel inside every pickled spec; one given explicitly is kept out of `repr` and
registered for masking. The imports flow one way: account <- api/catalog/machine <- pricing <-
provider <- config <- hooks (the config imports the provider only inside `create`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import attrs

from skyward.errors import ConfigurationError
from skyward.observe.logging import register_secret
from skyward.providers.base import ProviderConfig

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.providers.credentials import CredentialStatus, MissingCredential
    from skyward.spec import Spec
    from skyward_lambda.offers import LambdaOffers
    from skyward_lambda.provider import LambdaProvider

#: Lambda's region names: "us-east-1", "us-south-2", "europe-central-1", "asia-northeast-1".
_REGION = re.compile(r"^[a-z]+(?:-[a-z]+)*-\d+$")


def _region(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _REGION.match(value.strip().lower()):
        raise ConfigurationError(f'LambdaCloud(region={value!r}): expected a region name such as "us-east-1"')
    return value.strip().lower()


def _secret(instance: LambdaCloud, attribute: attrs.Attribute[str | None], value: object) -> None:
    if value is None:
        return
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(
            f"LambdaCloud({attribute.name}=...): expected the key as a non-empty string, or None"
        )
    register_secret(value)


def _url(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ConfigurationError(f"LambdaCloud(api_url={value!r}): expected an http(s) URL")
    return value.rstrip("/")


@attrs.frozen(kw_only=True)
class LambdaCloud(ProviderConfig):
    """Run a pool on Lambda Cloud GPU VMs (on-demand: Lambda sells no spot), one VM per node,
    reached over SSH as `ubuntu`.

    `api_key` defaults to `LAMBDA_API_KEY`; `guardian_api_key` (default `LAMBDA_GUARDIAN_API_KEY`,
    else the pool's key) is the key each VM keeps to terminate itself when its client is gone
    (see docs/lambda.md). `region` limits where VMs go (else `Spec.region`, else any region with
    capacity); `image_family` picks Lambda's image (None: Lambda's default, Lambda Stack).
    `ssh_user` / `ssh_port` say how to log in; `python` names an interpreter already on the image
    instead of installing one; `api_url` points at another endpoint (tests, proxies).
    """

    region: str | None = attrs.field(default=None, converter=_region)
    api_key: str | None = attrs.field(default=None, repr=False, validator=_secret)
    guardian_api_key: str | None = attrs.field(default=None, repr=False, validator=_secret)
    image_family: str | None = None
    ssh_user: str = "ubuntu"
    ssh_port: int = 22
    python: str | None = None
    api_url: str | None = attrs.field(default=None, converter=_url)

    @property
    def name(self) -> str:
        return "lambda"

    @property
    def url(self) -> str:
        from skyward_lambda.account import API_URL

        return self.api_url or API_URL

    def create(self, options: Options | None = None) -> LambdaProvider:
        """The provider for one pool; resolves the keys now, so a missing one fails first.
        Imported here, when a pool starts: it loads aiohttp and asyncssh."""
        from skyward_lambda.provider import LambdaProvider

        return LambdaProvider(self, options)

    def hourly_price(self, spec: Spec) -> float | None:
        """The first offer's price per node per hour, for `Options(selection="cheapest")`; None
        when it cannot be told (no key, no matching type, the API down)."""
        from skyward_lambda.pricing import estimate_hourly_price

        return estimate_hourly_price(self, spec)

    def offer_source(self) -> LambdaOffers:
        """This account's instance types and prices in Skyward's catalog (`sky offers`)."""
        from skyward_lambda.offers import LambdaOffers

        return LambdaOffers(api_key=self.api_key, api_url=self.api_url)

    def missing_credentials(self) -> MissingCredential | None:
        """What this config lacks to start: None with `api_key=` given or `$LAMBDA_API_KEY`
        set, else which variable to set. Reads the environment only; calls nothing."""
        from skyward.providers.credentials import lacking
        from skyward_lambda.account import API_KEY_VARIABLE

        if self.api_key:
            return None
        return lacking(
            self.credentials(),
            provider="LambdaCloud",
            credential=API_KEY_VARIABLE,
            fix="set it or pass LambdaCloud(api_key=...)",
        )

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: whether `$LAMBDA_API_KEY` is set; with `check`, whether Lambda
        accepts it (one listing of the account's instances, `sweep.verify`)."""
        from skyward_lambda.account import locate_api_key

        status = locate_api_key()
        if not check:
            return status
        from skyward_lambda.sweep import verify

        return verify(status)
