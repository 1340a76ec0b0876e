"""What a release says: its section of CHANGELOG.md (``memmatrix changelog VERSION``, which the release workflow
runs), checked against the tag before anything is published."""

from __future__ import annotations

import re
from pathlib import Path

from ..common.errors import ConfigError


def section(text: str, version: str) -> str:
    """The body of the ``## VERSION`` section (a leading ``v`` in the tag ignored), without its heading."""
    wanted = version.removeprefix("v")
    parts = re.split(r"^## +(.+?) *$", text, flags=re.M)
    for heading, body in zip(parts[1::2], parts[2::2]):
        if heading == wanted:
            if not body.strip():
                raise ConfigError(f"CHANGELOG.md: the section for {wanted} is empty; say what changed in it")
            return body.strip() + "\n"
    found = ", ".join(parts[1::2]) or "none"
    raise ConfigError(f"CHANGELOG.md has no section '## {wanted}' (sections: {found}); add it before tagging v{wanted}")


def release_text(home: Path, version: str, package_version: str) -> str:
    """What the release of tag ``version``, refused when the tag and the package's version disagree."""
    if version.removeprefix("v") != package_version:
        raise ConfigError(f"tag {version} does not match the package version {package_version} (pyproject.toml); "
                          f"set one to the other")
    return section((home / "CHANGELOG.md").read_text(encoding="utf-8"), version)
