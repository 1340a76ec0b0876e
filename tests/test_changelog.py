"""A release's notes are its CHANGELOG.md section, refused when missing, empty, or when the tag disagrees with the
package version."""

from __future__ import annotations

import pytest

from conftest import ROOT
from memmatrix import __version__
from memmatrix.ci.changelog import release_text, section
from memmatrix.common.errors import ConfigError

TEXT = "# Changelog\n\n## Unreleased\n\n- next\n\n## 0.2.0\n\n- two\n- more\n\n## 0.1.0\n\n- one\n"


def test_a_version_s_section_is_its_body_whatever_the_tag_s_v():
    assert section(TEXT, "v0.2.0") == "- two\n- more\n"
    assert section(TEXT, "0.1.0") == "- one\n"


@pytest.mark.parametrize("text, version, message", [
    (TEXT, "0.3.0", "no section '## 0.3.0' (sections: Unreleased, 0.2.0, 0.1.0)"),
    ("## 0.3.0\n\n## 0.2.0\n- two\n", "0.3.0", "the section for 0.3.0 is empty"),
])
def test_a_missing_or_empty_section_is_refused_with_what_to_add(text, version, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        section(text, version)


def test_the_committed_changelog_has_the_package_version_and_a_tag_that_disagrees_is_refused():
    assert release_text(ROOT, f"v{__version__}", __version__).strip()
    with pytest.raises(ConfigError, match="does not match the package version"):
        release_text(ROOT, "v9.9.9", __version__)
