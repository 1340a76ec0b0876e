"""What the installed mem0ai release offers, detected from its code (never from its version string), and the
calls that differ between releases. Measured over every release from 0.1.9 to 2.2.1 (the probe behind
system.yaml's releases block): each flag names the first release that has it.

Releases before 0.1.9 are a different design (add(data: str), tool-call extraction, no ids) and are declared
not drivable in system.yaml.
"""

from __future__ import annotations

import inspect
import sqlite3
from dataclasses import dataclass


def _params(fn) -> dict:
    try:
        return dict(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return {}


def _source(fn) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return ""


@dataclass(frozen=True)
class Features:
    telemetry_switch: bool    # 0.1.12: MEM0_TELEMETRY; before it PostHog is switched off by hand
    env_beats_config: bool    # before 0.1.12 OPENAI_API_KEY / OPENAI_API_BASE override the config
    llm_base_url: bool        # 0.1.3: openai_base_url in the LLM config
    emb_base_url: bool        # 0.1.3: openai_base_url in the embedder config
    set_v11: bool             # before 0.1.59 the default output version is v1.0 (a bare list)
    wipes_path: bool          # before 1.0.8 a local qdrant path is deleted at start-up unless on_disk
    native_reset: bool        # 0.1.94: Memory.reset works with local qdrant
    reset_resets_graph: bool  # 1.0.10: Memory.reset also resets the graph
    vs_text_first: bool       # 0.1.74: vector_store.search(query, vectors, limit, filters)
    embed_action: bool        # 0.1.58: embed(text, memory_action)
    infer: bool               # 0.1.69: add(infer=False), the direct import path
    search_v2: bool           # 2.0.0: search/get_all take filters= and top_k
    close: bool               # 1.0.11: Memory.close
    messages_table: bool      # 2.0.0: the raw messages table
    kuzu: bool                # 0.1.117-1.0.11: the embedded kuzu graph store
    delete_all_wipes: bool    # 0.1.118-1.0.5: delete_all ends with vector_store.reset(): every user's vectors go
    delete_all_pages: bool    # 2.0.15: delete_all lists in batches until none is left (before: one list, 100)
    delete_all_trims_ids: bool  # 2.0.10: delete_all trims its ids and refuses blank ones or inner whitespace
    reset_drops_messages: bool  # 2.0.8: Memory.reset drops the messages table too (2.0.0-2.0.7 keep its rows)


def detect() -> Features:
    """Call after ``import mem0`` (with MEM0_DIR and MEM0_TELEMETRY already set)."""
    from mem0 import Memory
    import mem0.memory.telemetry as tel
    import mem0.vector_stores.qdrant as vq
    from mem0.configs.base import MemoryConfig
    from mem0.configs.embeddings.base import BaseEmbedderConfig
    from mem0.configs.llms.base import BaseLlmConfig
    from mem0.embeddings.openai import OpenAIEmbedding
    from mem0.memory.storage import SQLiteManager

    llm = _params(BaseLlmConfig.__init__)
    try:
        from mem0.configs.llms.openai import OpenAIConfig  # 0.1.116: the openai keys live here
        llm.update(_params(OpenAIConfig.__init__))
    except ImportError:
        pass
    try:
        from mem0.utils.factory import GraphStoreFactory
        kuzu = "kuzu" in getattr(GraphStoreFactory, "provider_to_class", {})
    except ImportError:
        kuzu = False
    version_field = MemoryConfig.model_fields.get("version")
    switch = hasattr(tel, "MEM0_TELEMETRY")
    return Features(
        telemetry_switch=switch, env_beats_config=not switch,
        llm_base_url="openai_base_url" in llm,
        emb_base_url="openai_base_url" in _params(BaseEmbedderConfig.__init__),
        set_v11=version_field is not None and version_field.default != "v1.1",
        wipes_path="rmtree" in _source(vq.Qdrant.__init__),
        native_reset=hasattr(vq.Qdrant, "reset"),
        reset_resets_graph="graph.reset" in _source(Memory.reset),
        vs_text_first="vectors" in _params(vq.Qdrant.search),
        embed_action=len(_params(OpenAIEmbedding.embed)) >= 3,
        infer="infer" in _params(Memory.add),
        search_v2="top_k" in _params(Memory.search),
        close=hasattr(Memory, "close"),
        messages_table=hasattr(SQLiteManager, "save_messages"),
        kuzu=kuzu,
        delete_all_wipes="vector_store.reset()" in _source(getattr(Memory, "delete_all", None)),
        delete_all_pages="DELETE_ALL_BATCH_SIZE" in _source(getattr(Memory, "delete_all", None)),
        delete_all_trims_ids="_validate_and_trim_entity_id" in _source(getattr(Memory, "delete_all", None)),
        reset_drops_messages="self.db.reset()" in _source(getattr(Memory, "reset", None)),
    )


def silence_telemetry(f: Features) -> None:
    """Before 0.1.12 there is no switch: PostHog's client is disabled after import (offline it could only fail)."""
    if f.telemetry_switch:
        return
    import mem0.memory.telemetry as tel
    posthog = getattr(getattr(tel, "telemetry", None), "posthog", None)
    if posthog is not None:
        posthog.disabled = True


def results(res) -> list:
    """The memories of an add/search/get_all result: a list (v1.0), {"memories"} (to 0.1.11) or {"results"}."""
    if isinstance(res, list):
        return res
    return res.get("results", res.get("memories", [])) or []


def relations(res) -> list:
    if isinstance(res, list):
        return []
    return res.get("relations", res.get("entities", [])) or []


def history_rows(path) -> list[dict]:
    con = sqlite3.connect(path)
    con.row_factory = sqlite3.Row
    try:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='history'").fetchone():
            return []
        return [dict(r) for r in con.execute("SELECT * FROM history ORDER BY rowid")]
    finally:
        con.close()


def emulated_reset(m, dims: int, on_disk: bool) -> None:
    """Before 0.1.94 Memory.reset breaks a local qdrant (the collection is never recreated, or the client's
    lock is held twice): empty the collection and the history table through mem0's own objects instead."""
    vs = m.vector_store  # the instance: m.config's vector store settings are rewritten by some releases
    vs.delete_col()
    vs.create_col(dims, on_disk)
    with m.db.connection as con:
        con.execute("DROP TABLE IF EXISTS history")
    m.db._create_history_table()


def close(m, f: Features) -> None:
    if f.close:
        m.close()
    elif hasattr(m.db, "close"):
        m.db.close()
    else:
        m.db.connection.close()
    for store in (getattr(m, "vector_store", None), getattr(m, "_telemetry_vector_store", None)):
        try:
            store.client.close()  # a local qdrant holds a file lock until closed
        except Exception:
            pass
