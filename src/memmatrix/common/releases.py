"""A system's release history: the package index's list, what the adapter can drive, and ``--versions SPEC``.

The list is read from the package index's JSON simple API (PEP 691/700: every version and each file's
upload time) at sweep time and recorded with the sweep, so bisect and the timeline use the list the
sweep saw. Only final releases count (no pre-releases, no release whose every file is yanked).

``system.yaml``'s ``releases`` block declares the rest::

    releases:
      python: "3.11"                       # interpreter of every generated environment
      requirements: ["mem0ai=={version}"]  # the lock's input for any release
      ranges:                              # by PEP 440 specifier, first match wins for drivable
        - versions: "<0.1.30"
          drivable: false
          reason: "..."                    # said whenever such a release is asked for
        - versions: ">=1.0,<2"
          requirements: ["kuzu==0.11.3"]   # added for these releases
"""

from __future__ import annotations

import json
import os
import urllib.request
from dataclasses import dataclass, field

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from .errors import MemmatrixError

DEFAULT_INDEX = "https://pypi.org/simple"
INDEX_VARIABLE = "MEMMATRIX_INDEX_URL"


class ReleaseError(MemmatrixError):
    """A --versions SPEC, a releases block or the package index cannot give the releases asked for."""


def index_url() -> str:
    return (os.environ.get(INDEX_VARIABLE) or DEFAULT_INDEX).rstrip("/")


def version_key(version: str) -> tuple:
    """Release order: PEP 440 versions in their order, after any version string that is not one."""
    try:
        return (1, Version(version))
    except InvalidVersion:
        return (0, version)


def _final(text: str) -> Version | None:
    try:
        v = Version(text)
    except InvalidVersion:
        return None
    return None if v.is_prerelease or v.is_devrelease else v


def fetch_releases(package: str, url: str | None = None, timeout: float = 30.0) -> dict:
    """The package's final releases, oldest first, each with its first upload time, as the index lists them."""
    url = (url or index_url()).rstrip("/")
    request = urllib.request.Request(f"{url}/{package}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:  # noqa: S310 (the user's index)
            data = json.loads(resp.read())
    except (OSError, ValueError) as exc:
        raise ReleaseError(f"cannot list the releases of {package} at {url}/{package}/ ({exc}); check the network "
                           f"or point {INDEX_VARIABLE} at an index serving PEP 691 JSON") from None
    uploaded: dict[str, str] = {}
    live: set[str] = set()
    for f in data.get("files", []):
        version = _version_of_file(f.get("filename", ""), package)
        if version is None:
            continue
        if not f.get("yanked"):
            live.add(version)
        when = f.get("upload-time")
        if when and (version not in uploaded or when < uploaded[version]):
            uploaded[version] = when
    versions = data.get("versions") or sorted(live)
    finals = sorted((v for v in (_final(t) for t in versions) if v is not None and (str(v) in live or not live)))
    return {"package": package, "index": url,
            "releases": [{"version": str(v), "uploaded": uploaded.get(str(v))} for v in finals]}


def _version_of_file(filename: str, package: str) -> str | None:
    """The version in a wheel or sdist file name (``mem0ai-1.0.11-py3-none-any.whl``, ``x-1.0.tar.gz``)."""
    norm = package.replace("-", "_").lower()
    name = filename
    for ext in (".whl", ".tar.gz", ".zip", ".tar.bz2"):
        if name.endswith(ext):
            name = name[: -len(ext)]
            break
    else:
        return None
    head = name.lower().replace("-", "_")
    if not head.startswith(norm + "_"):
        return None
    rest = name[len(norm) + 1:]
    return rest.split("-", 1)[0]


@dataclass(frozen=True)
class Ranges:
    """The ``releases`` block of a system.yaml: which releases the adapter drives and what each needs."""
    python: str | None
    requirements: tuple[str, ...]
    ranges: tuple[dict, ...] = field(default=())

    @classmethod
    def of(cls, meta: dict) -> "Ranges | None":
        block = meta.get("releases")
        if not block:
            return None
        for i, r in enumerate(block.get("ranges", [])):
            try:
                SpecifierSet(r["versions"])
            except InvalidSpecifier:
                raise ReleaseError(f"system {meta['name']}: releases.ranges[{i}].versions {r['versions']!r} is not a "
                                   "PEP 440 specifier (e.g. '>=1.0,<2'); fix system.yaml") from None
        return cls(block.get("python"), tuple(block.get("requirements", [])), tuple(block.get("ranges", [])))

    def _matching(self, version: str) -> list[dict]:
        v = Version(version)
        return [r for r in self.ranges if v in SpecifierSet(r["versions"], prereleases=True)]

    def refusal(self, version: str) -> str | None:
        """Why the adapter cannot drive ``version`` (declared in system.yaml), or None when it can."""
        try:
            Version(version)
        except InvalidVersion:
            return f"{version!r} is not a release version"
        for r in self._matching(version):
            if r.get("drivable") is False:
                return f"releases {r['versions']}: {r.get('reason', 'declared not drivable')}"
        return None

    def requirements_for(self, version: str) -> list[str]:
        lines = [line.format(version=version) for line in self.requirements]
        for r in self._matching(version):
            lines += [line.format(version=version) for line in r.get("requirements", [])]
        return lines


def drivable(releases: list[str], ranges: Ranges | None) -> list[str]:
    return [v for v in releases if ranges is None or ranges.refusal(v) is None]


def select(spec: str, releases: list[str], ranges: Ranges | None) -> list[str]:
    """The releases SPEC names, oldest first: ``1.0.11,2.2.1``, ``0.1.0..2.2.1``, ``every:N``, ``A..B:every:N``
    or ``spread:N`` (N releases evenly over the drivable ones, both ends included); items are comma-separated.

    A release named outright that the index does not list, or that the adapter cannot drive, is refused;
    ranges and samples take only the drivable ones.
    """
    known = sorted(releases, key=Version)
    usable = drivable(known, ranges)
    chosen: set[str] = set()
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        base, step = item, None
        if item.startswith("every:") or ":every:" in item:
            base, _, n = item.rpartition("every:")
            base = base.rstrip(":")
            step = _count(n, item)
        if item.startswith("spread:"):
            chosen.update(_spread(usable, _count(item[len("spread:"):], item)))
            continue
        if base == "" or ".." in base:
            lo, _, hi = base.partition("..")
            for end in (lo, hi):
                if end and _final(end) is None:
                    raise ReleaseError(f"--versions {item!r}: {end!r} is not a release version")
            span = [v for v in usable if (not lo or Version(v) >= Version(lo)) and (not hi or Version(v) <= Version(hi))]
            if not span:
                raise ReleaseError(f"--versions {item!r} holds no release the adapter can drive "
                                   f"(drivable: {_describe(usable)})")
            if step:
                picked = span[::step]
                if picked[-1] != span[-1]:
                    picked.append(span[-1])
                span = picked
            chosen.update(span)
            continue
        if item not in known:
            raise ReleaseError(f"--versions: the index lists no release {item!r} (releases: {_describe(known)})")
        why = ranges.refusal(item) if ranges else None
        if why:
            raise ReleaseError(f"--versions: the adapter cannot drive {item} ({why}); pick from {_describe(usable)}")
        chosen.add(item)
    if not chosen:
        raise ReleaseError(f"--versions {spec!r} names no release; give e.g. '1.0.0,2.0.0', '1.0..2.0' or 'every:10'")
    return sorted(chosen, key=Version)


def _count(text: str, item: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ReleaseError(f"--versions {item!r}: {text!r} is not a positive whole number")
    return int(text)


def _spread(usable: list[str], n: int) -> list[str]:
    if n >= len(usable):
        return list(usable)
    if n == 1:
        return [usable[-1]]
    return sorted({usable[round(i * (len(usable) - 1) / (n - 1))] for i in range(n)}, key=Version)


def _describe(versions: list[str]) -> str:
    if not versions:
        return "none"
    return f"{len(versions)} from {versions[0]} to {versions[-1]}"


def between(releases: list[str], lo: str, hi: str) -> list[str]:
    """The releases strictly between ``lo`` and ``hi`` (release order)."""
    a, b = Version(lo), Version(hi)
    return [v for v in sorted(releases, key=Version) if a < Version(v) < b]
