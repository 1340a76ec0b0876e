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


def _name(requirement: str) -> str:
    import re
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_runtime_dependencies_are_ranges_and_the_exact_set_is_the_constraints_file():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"]
    assert deps and not [d for d in deps if "==" in d or "<" not in d]  # a range with an upper bound, never a pin
    pinned = {_name(line): line.split("==")[1] for line in (ROOT / "constraints.txt").read_text().splitlines()
              if line and not line.startswith("#")}
    from packaging.requirements import Requirement
    for dep in deps + project["optional-dependencies"]["compose"]:
        req = Requirement(dep)
        assert _name(dep) in pinned and req.specifier.contains(pinned[_name(dep)]), dep  # CI's set is in range
    assert {_name(d) for d in project["optional-dependencies"]["compose"]} == {"testcontainers", "docker"}
    assert not {"testcontainers", "docker"} & {_name(d) for d in deps}  # the embedded runtime needs neither
    assert "--index-url" not in (ROOT / "constraints.txt").read_text()  # no machine's index options


def test_the_compose_runtime_without_its_extra_is_refused_before_work_naming_the_extra(monkeypatch):
    import importlib.util
    import pytest
    from memmatrix.common.errors import ConfigError
    from memmatrix.runtimes import require
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "testcontainers" else real(name, *a))
    with pytest.raises(ConfigError, match=r"needs testcontainers: pip install 'memmatrix\[compose\]'"):
        require("compose")
    require("embedded")  # nothing to check
