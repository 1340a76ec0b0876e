"""What every single-defect double starts from: the reference system (it passes everything), with
a little state of its own kept beside the reference's store, so a defect survives a restart."""

from __future__ import annotations

import json
from pathlib import Path

import adapterkit

_REF = Path(__file__).resolve().parents[2] / "systems" / "reference" / "adapter.py"
Reference = adapterkit.load_adapter_class(f"{_REF}:ReferenceAdapter", module_name="memmatrix_doubles_reference")


class Double(Reference):
    """The reference adapter plus ``self.note``: a small dict persisted next to its store."""

    NAME = "double"

    @property
    def _note_file(self) -> Path:
        return self.mem.path.parent / "double.json"

    @property
    def note(self) -> dict:
        return json.loads(self._note_file.read_text()) if self._note_file.exists() else {}

    def remember(self, **changes) -> None:
        self._note_file.write_text(json.dumps({**self.note, **changes}))

    def reset(self):
        self._note_file.unlink(missing_ok=True)
        super().reset()

    def capabilities(self):
        caps = super().capabilities()
        caps["system"] = {"name": self.NAME, "version": "1.0"}
        return caps

    def count(self, what: str) -> int:
        """Increment and return a persisted counter."""
        n = self.note.get(what, 0) + 1
        self.remember(**{what: n})
        return n
