"""Write a run's directory so that it is either the old run or the new one, never half of each."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
from contextlib import contextmanager
from pathlib import Path

from ..common import schemas
from ..common.canon import canonical
from ..common.errors import SchemaViolation

#: the empty file a run locks beside a version's setups, so two runs never write one result at once
LOCK_NAME = ".memmatrix.lock"


def result_dir(out: Path, protocol: str, system: str, version: str, runtime: str) -> Path:
    return Path(out) / protocol / system / version / runtime


def render_result(result: dict) -> str:
    return json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def check_result(result: dict, schemas_dir: Path) -> None:
    problems = schemas.errors(schemas_dir, "result", result)
    if problems:
        raise SchemaViolation("the result does not fit schemas/result.schema.json, so nothing was written:\n  - "
                              + "\n  - ".join(problems[:20]))


def write_run(target: Path, result: dict, files: dict[str, bytes], schemas_dir: Path, guard=None) -> Path:
    """Validate ``result`` then replace ``target`` with a directory holding result.json and ``files``.

    Writes into one output folder are serialised by a lock, and ``guard(existing result or None)``
    runs under it: a run may refuse to replace what another run wrote meanwhile.
    """
    check_result(result, schemas_dir)
    # the result must survive a round trip unchanged, or verify could never agree with it
    if json.loads(canonical(result)) != result:
        raise SchemaViolation("the result does not survive a JSON round trip; nothing was written")
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with out_lock(target):
        if guard is not None:
            guard(_read_existing(target))
        stage = target.parent / f".{target.name}.staging-{os.getpid()}"
        old = target.parent / f".{target.name}.old-{os.getpid()}"
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir()
        try:
            for name, data in files.items():
                (stage / name).write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
            (stage / "result.json").write_text(render_result(result), encoding="utf-8")
            if target.exists():
                os.replace(target, old)
            os.replace(stage, target)
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            if old.exists() and not target.exists():
                os.replace(old, target)
            raise
        shutil.rmtree(old, ignore_errors=True)
    return target


def _read_existing(target: Path) -> dict | None:
    f = target / "result.json"
    if not f.exists():
        return None
    try:
        return json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


@contextmanager
def out_lock(target: Path):
    """An exclusive lock on the folder that holds ``target`` (two runs never write one result at once)."""
    lock = open(Path(target).parent / LOCK_NAME, "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()


def clean_stale(out: Path) -> None:
    """Clean up after runs that were killed while writing: their ``.NAME.staging-PID`` folders go, and a
    ``.NAME.old-PID`` goes too, or becomes NAME again when the kill came between the two renames. Only
    folders whose pid is dead: another run may be writing into the same output folder right now."""
    from ..runtimes.procs import pid_alive
    for p in sorted(Path(out).rglob(".*.*-*")):
        m = re.fullmatch(r"\.(.+)\.(staging|old)-(\d+)", p.name)
        if not m or not p.is_dir() or int(m.group(3)) == os.getpid() or pid_alive(int(m.group(3))):
            continue
        target = p.parent / m.group(1)
        if m.group(2) == "old" and not target.exists():
            os.replace(p, target)
        else:
            shutil.rmtree(p, ignore_errors=True)
