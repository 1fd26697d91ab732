from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from guardian_support import Node


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    node = Node(tmp_path)
    yield node
    node.cleanup()
