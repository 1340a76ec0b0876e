"""Re-asks this machine made before: a mark for each model transcript whose every oracle answer matched.

``verify`` asks the oracle again for every answer an oracle run recorded (``reask``). The oracle's answer is a
function of the request, the run's case file and ablation, the system's oracle module and memmatrix's own code (run
by one Python): so when this machine has re-asked a model transcript with all of those unchanged and every answer
matched, asking again can only match. ``verify`` keeps a mark of that under its cache folder
(``<cache>/reasked/<code>/<key>``, an empty file), and a later ``verify`` of the same transcript skips the
re-asking; every other check (hashes, labels, re-scoring, costs, findings) runs as before. ``verify --fresh`` asks
every answer again.

A mark's key covers, in one sha256: every file of the memmatrix package running (``<code>``, with the Python
version, its Unicode database and orjson's version); every file of the system's folder (as the stamp's
``code_sha256`` counts them) and its oracle module's text; the case file's bytes; the ablation; the system's name;
and the model transcript's sha256 as the result records it. A mark is written only when every answer matched and
the lines read hashed to that sha256; a transcript whose lines do not is reported as changed whether or not it is
re-asked. Marks made by other code are removed when the first mark of this code is written. What the marks cannot
see: the oracle changed in a running process (a patched function): only the API's callers can do that, and the
CLI alone keeps marks.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import unicodedata
from pathlib import Path

import orjson

from ..common.canon import sha256_file, sha256_tree
from ..common.config import Config
from ..common.errors import MemmatrixError
from ..model.settings import ablation_of
from ..systems import recorded_system


def code_digest(package: Path | None = None) -> str:
    """One sha256 over the Python running and every file of the memmatrix package (``home``, the checkout's data
    when installed as a wheel, and caches left out: the system folders and case files are keyed on their own)."""
    root = package or Path(__file__).resolve().parents[1]
    h = hashlib.sha256(f"{sys.version}\0{unicodedata.unidata_version}\0{orjson.__version__}\n".encode())
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] != "home" and "__pycache__" not in rel.parts and path.suffix != ".pyc" and path.is_file():
            h.update(f"{rel.as_posix()}\0{sha256_file(path)}\n".encode())
    return h.hexdigest()


class Marks:
    """The marks of one ``verify`` (see the module's docstring): ``key`` for a result, ``seen``, ``keep``."""

    def __init__(self, cache_dir: Path, code: str | None = None) -> None:
        self.code = code or code_digest()
        self.dir = Path(cache_dir) / "reasked" / self.code[:40]
        self._files: dict[Path, str] = {}
        self._pruned = False

    def _digest(self, path: Path, tree: bool = False) -> str:
        if path not in self._files:
            self._files[path] = sha256_tree(path) if tree else sha256_file(path)
        return self._files[path]

    def key(self, stamp: dict, case_file: Path, config: Config, model_sha256: str) -> str | None:
        """The mark's name for a model transcript, or None when the system has no folder here (an adapter file
        named by its path: nothing to key its oracle on) or cannot be resolved."""
        try:
            spec = recorded_system(stamp["system"], config)
        except MemmatrixError:
            return None
        if spec.folder is None:
            return None
        parts = [self.code, stamp["system"]["name"], self._digest(spec.folder, tree=True),
                 spec.oracle.sha256 if spec.oracle is not None else "", self._digest(Path(case_file)),
                 ablation_of(stamp["model"]), model_sha256]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def seen(self, key: str) -> bool:
        return (self.dir / key).is_file()

    def keep(self, key: str) -> None:
        """Mark ``key`` re-asked; the first time, remove the marks other code made. A cache that cannot be
        written only means the next ``verify`` asks again."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            if not self._pruned:
                self._pruned = True
                for other in self.dir.parent.iterdir():
                    if other != self.dir:
                        shutil.rmtree(other, ignore_errors=True)
            (self.dir / key).touch()
        except OSError:
            pass
