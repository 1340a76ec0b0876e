"""What an index and a resolver read about the package: an SPDX license expression (the TOML table is deprecated),
classifiers, keywords and project URLs."""

from __future__ import annotations

import tomllib

from conftest import ROOT


def test_the_package_says_its_license_as_an_spdx_expression_and_where_it_lives():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0" and (ROOT / project["license-files"][0]).is_file()
    assert not any(c.startswith("License ::") for c in project["classifiers"])  # PEP 639: the expression alone
    assert {"Homepage", "Source", "Issues", "Documentation"} <= set(project["urls"])
    assert project["keywords"] and project["authors"]
    python = [c for c in project["classifiers"] if c.startswith("Programming Language :: Python :: 3.")]
    assert python == ["Programming Language :: Python :: 3.11"] and project["requires-python"] == ">=3.11"
