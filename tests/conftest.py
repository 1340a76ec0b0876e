"""Shared fixtures. Tests needing Docker or a heavy system install are opt-in:
MEMMATRIX_TEST_ENABLE=docker,heavy enables them (``.ci/run`` does)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memmatrix.common.config import Config

ROOT = Path(__file__).resolve().parents[1]
ADAPTERS = Path(__file__).parent / "adapters"


def pytest_collection_modifyitems(config, items):
    enabled = {m.strip() for m in os.environ.get("MEMMATRIX_TEST_ENABLE", "").split(",") if m.strip()}
    for item in items:
        for marker in ("docker", "heavy"):
            if marker in item.keywords and marker not in enabled:
                item.add_marker(pytest.mark.skip(reason=f"needs {marker}: set MEMMATRIX_TEST_ENABLE={marker}"))


@pytest.fixture
def config(tmp_path) -> Config:
    """A Config on this checkout with a private cache and short timeouts."""
    return Config.from_env({"MEMMATRIX_HOME": str(ROOT), "MEMMATRIX_CACHE_DIR": str(tmp_path / "cache"),
                            "MEMMATRIX_CALL_TIMEOUT": "5", "MEMMATRIX_SETTLE_TIMEOUT": "2",
                            "MEMMATRIX_START_TIMEOUT": "20"})
