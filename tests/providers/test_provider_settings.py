"""`skyward.extension.settings`: a cloud config's key and endpoint are checked when it is built,
the error naming the config and the argument, and a key given is masked from then on."""

from __future__ import annotations

import attrs
import pytest

from skyward.errors import ConfigurationError
from skyward.extension.settings import api_url, secret
from skyward.secrets import mask


@attrs.frozen(kw_only=True)
class Cloud:
    api_key: str | None = attrs.field(default=None, repr=False, validator=secret("Cloud"))
    api_url: str | None = attrs.field(default=None, converter=api_url("Cloud"))


def test_an_endpoint_is_an_http_url_kept_without_its_trailing_slash() -> None:
    assert Cloud(api_url="http://127.0.0.1:9/v1/").api_url == "http://127.0.0.1:9/v1"
    assert Cloud().api_url is None
    with pytest.raises(ConfigurationError, match=r"Cloud\(api_url='ftp://x'\): expected an http\(s\) URL"):
        Cloud(api_url="ftp://x")


def test_a_key_is_a_non_empty_string_masked_once_given() -> None:
    with pytest.raises(ConfigurationError, match=r"Cloud\(api_key=...\): expected the key"):
        Cloud(api_key=" ")
    Cloud(api_key="cloud-SETTINGS-TEST-KEY")
    assert "cloud-SETTINGS-TEST-KEY" not in mask("the key is cloud-SETTINGS-TEST-KEY")
