"""LlamaIndex's agent Memory (llama_index.core.memory.Memory) with its two long-term memory blocks.

How LlamaIndex keeps a conversation: ``Memory.put_messages`` appends the messages to a session's short-term FIFO
queue, rows of a SQL chat store (SQLAlchemyChatStore, status ``active``). When the queue holds more tokens than
``token_limit * chat_history_token_ratio``, the oldest messages (up to ``token_flush_size`` tokens, cut at a user
message, the latest user turn always kept) are marked ``archived`` and handed to every memory block:
FactExtractionMemoryBlock asks the LLM for the new facts in them and appends those to its ``facts`` list (condensing
the list with a second call once it holds more than ``max_facts``); VectorMemoryBlock embeds the batch as one node
of a vector store. ``Memory.get`` returns the active queue with the blocks rendered into the system message
(``<memory><extracted_info>...</extracted_info><vector_memory>...</vector_memory></memory>``): the facts, and the
``similarity_top_k`` batches nearest to the last ``retrieval_context_window`` messages plus the query.

Here: one Memory per scope (``session_id`` = the scope), the two blocks as the module guide's example builds them
(names ``extracted_info`` and ``vector_memory``, max_facts 50, priorities 1 and 2, the vector block's defaults), the
chat store on SQLite (``sqlite+aiosqlite``) in the run's data directory, the vector store a Chroma PersistentClient
collection beside it (the vector store of LlamaIndex's memory notebook). The door is ``Memory.get(input=query)``,
what a FunctionAgent reads on a later step of a run (``memory.aget(input=user_msg_str)``) without the query being
written into the memory. Forget is emulated: LlamaIndex deletes chat-store rows by id and vector nodes by id, and has
no delete at all for an extracted fact.

Options (system.yaml ``options``): ``chat_history_token_ratio`` (how much short-term history stays out of the blocks:
LlamaIndex's default 0.7 unless set; 0.001 is the setup that exercises the blocks) and ``fact_persistence``
(``process``, LlamaIndex's own behaviour, or ``file``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import threading
from importlib.metadata import version as installed
from pathlib import Path

from adapterkit import contains, coverage, sqlite_hits

#: the adapter's options (system.yaml `options`), each with its choices, the run's default first
OPTIONS = {"chat_history_token_ratio": ("0.7", "0.001", "0.02"), "fact_persistence": ("process", "file")}
TOKEN_LIMIT = 30000          # Memory's default token_limit
TOKEN_FLUSH_SIZE = 3000      # Memory's default token_flush_size
MAX_FACTS = 50               # the module guide's FactExtractionMemoryBlock(max_facts=50), also the field's default
TABLE = "llama_index_memory"  # Memory.from_defaults' default table_name
COLLECTION = "llamaindex_memory"
FORGET_COVERAGE = 0.8        # a message or fact is what the request names when it holds 80% of its content words
_FACT = re.compile(r"<fact>(.*?)</fact>", re.S)
_MESSAGE = re.compile(r"<message role='(\w+)'>(.*?)</message>", re.S)


def _section(text: str, name: str) -> str | None:
    m = re.search(rf"<{name}>(.*?)</{name}>", text, re.S)
    return m.group(1) if m else None


def _batches(section: str) -> list[str]:
    """The vector block's rendering: the retrieved nodes' texts joined by a blank line, each node a batch of
    ``<message role='...'>...</message>`` lines."""
    return [b.strip() for b in re.split(r"(?<=</message>)\s*\n\s*\n\s*(?=<message )", section.strip()) if b.strip()]


class LlamaIndexAdapter:
    def __init__(self, config: dict):
        os.environ["ANONYMIZED_TELEMETRY"] = "False"
        import chromadb
        from chromadb.config import Settings as ChromaSettings
        from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore
        from llama_index.embeddings.openai_like import OpenAILikeEmbedding
        from llama_index.llms.openai_like import OpenAILike

        self.version = installed("llama-index-core")
        options = {k: str(v) for k, v in (config.get("options") or {}).items()}
        for key, value in options.items():
            if key not in OPTIONS:
                raise ValueError(f"option {key!r} is not one of the LlamaIndex adapter's options {sorted(OPTIONS)}")
            if value not in OPTIONS[key]:
                raise ValueError(f"option {key}={value!r} is not one of {list(OPTIONS[key])}")
        self.ratio = float(options.get("chat_history_token_ratio", OPTIONS["chat_history_token_ratio"][0]))
        self.persist_facts = options.get("fact_persistence", OPTIONS["fact_persistence"][0]) == "file"

        self.data = Path(config["data_dir"]) / "llamaindex"
        self.data.mkdir(parents=True, exist_ok=True)
        (self.data / "facts").mkdir(exist_ok=True)
        self.db = self.data / "memory.db"

        # every coroutine runs on one event loop of the adapter's own: the SQL chat store's aiosqlite connections
        # belong to the loop that opened them
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="llamaindex-loop", daemon=True)
        self.thread.start()

        model = config["model"]
        self.llm = OpenAILike(model=model["chat_model"], api_base=model["base_url"], api_key=model["api_key"],
                              is_chat_model=True, is_function_calling_model=False, context_window=128000)
        self.embed = OpenAILikeEmbedding(model_name=model["embedding_model"], api_base=model["base_url"],
                                         api_key=model["api_key"], dimensions=int(model.get("embedding_dims") or 1536))
        self.chat_store = SQLAlchemyChatStore(table_name=TABLE, async_database_uri=f"sqlite+aiosqlite:///{self.db}")
        self.chroma = chromadb.PersistentClient(path=str(self.data / "chroma"),
                                                settings=ChromaSettings(anonymized_telemetry=False, allow_reset=True))
        self._open_vectors()
        self.memories: dict = {}
        self._run(self.chat_store.get_keys())  # creates the table on first use

    # ------------------------------------------------------------------ plumbing
    def _run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def _open_vectors(self) -> None:
        from llama_index.vector_stores.chroma import ChromaVectorStore
        self.collection = self.chroma.get_or_create_collection(COLLECTION)
        self.vectors = ChromaVectorStore(chroma_collection=self.collection)

    def _facts_file(self, scope: str) -> Path:
        return self.data / "facts" / (re.sub(r"[^A-Za-z0-9_.-]", "_", scope) + ".json")

    def _memory(self, scope: str):
        """The scope's Memory: its session in the shared chat store, its own blocks (a FactExtractionMemoryBlock
        keeps one fact list whatever the session, so each scope has its own), the shared vector store (the vector
        block filters by session)."""
        if scope in self.memories:
            return self.memories[scope]
        from llama_index.core.memory import FactExtractionMemoryBlock, Memory, VectorMemoryBlock
        facts = []
        if self.persist_facts and self._facts_file(scope).exists():
            facts = json.loads(self._facts_file(scope).read_text())
        blocks = [
            FactExtractionMemoryBlock(name="extracted_info", llm=self.llm, max_facts=MAX_FACTS, priority=1,
                                      facts=facts),
            VectorMemoryBlock(name="vector_memory", vector_store=self.vectors, priority=2, embed_model=self.embed),
        ]
        memory = Memory.from_defaults(session_id=scope, token_limit=TOKEN_LIMIT, chat_history_token_ratio=self.ratio,
                                      token_flush_size=TOKEN_FLUSH_SIZE, memory_blocks=blocks, insert_method="system",
                                      chat_store=self.chat_store)
        self.memories[scope] = memory
        return memory

    def _block(self, scope: str, name: str):
        return next(b for b in self._memory(scope).memory_blocks if b.name == name)

    def _save_facts(self, scope: str) -> None:
        if self.persist_facts:
            self._facts_file(scope).write_text(json.dumps(self._block(scope, "extracted_info").facts))

    def _rows(self, scope: str) -> list[tuple[int, str, str, str]]:
        """(row id, status, role, text) of the scope's chat-store rows, active and archived, oldest first."""
        if not self.db.exists():
            return []
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            rows = con.execute(f"SELECT id, status, role, data FROM {TABLE} WHERE key = ? ORDER BY timestamp, id",
                               (scope,)).fetchall()
        except sqlite3.OperationalError:
            return []
        finally:
            con.close()
        out = []
        for rid, status, role, data in rows:
            out.append((rid, status, role, self._text(json.loads(data))))
        return out

    @staticmethod
    def _text(data: dict) -> str:
        from llama_index.core.base.llms.types import ChatMessage
        return ChatMessage.model_validate(data).content or ""

    def _nodes(self, scope: str) -> list[tuple[str, str]]:
        got = self.collection.get(where={"session_id": scope}, include=["documents"])
        return list(zip(got.get("ids") or [], got.get("documents") or []))

    # ------------------------------------------------------------------ contract
    def capabilities(self) -> dict:
        no = lambda why: {"support": "unsupported", "reason": why}  # noqa: E731
        return {
            "system": {"name": "llamaindex", "version": self.version},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "emulated", "reason": (
                    "search-then-delete in every store: LlamaIndex deletes a chat-store row by id "
                    "(SQLAlchemyChatStore.delete_message) and a vector node by id (ChromaVectorStore.delete_nodes), "
                    "and has no delete for an extracted fact (the adapter removes it from the "
                    "FactExtractionMemoryBlock's facts list)")},
                "update": no("no update of a stored message, node or fact: a correction is a new conversation, and "
                             "the fact block only appends what the extraction returns"),
                "run_background_jobs": no("LlamaIndex's Memory has no background job: the waterfall into the "
                                          "long-term blocks (extraction, condensation, embedding) runs inside put"),
                "probe": {"support": "supported"},
                "audit": no("neither the chat store nor the blocks record mutations (archived rows are the flushed "
                            "queue, not an audit log)"),
                "share": no("no share or copy between sessions"),
                "import_history": no(
                    "one additive write path (put / put_messages); Memory.set() and agent.run(chat_history=...) "
                    "replace the session's whole chat history (archived rows included), which is not an import"),
            },
            "doors": [{"name": "memory_get", "description": (
                "Memory.get(input=query): the active chat history with the memory blocks rendered into the system "
                "message (<memory><extracted_info> the facts </extracted_info><vector_memory> the 2 nearest flushed "
                "batches </vector_memory></memory>), each message as 'role: content'")}],
            "stores": [
                {"name": "chat-store", "kind": "sql", "role": "primary", "description": (
                    "the SQL chat store's rows of the session (SQLAlchemyChatStore on SQLite, table llama_index_memory), "
                    "the active queue and the archived (flushed) messages")},
                {"name": "facts", "kind": "text", "description": (
                    "the FactExtractionMemoryBlock's facts list (in the adapter process; with fact_persistence=file "
                    "also its JSON file)")},
                {"name": "vectors", "kind": "vector", "description": (
                    "the VectorMemoryBlock's nodes of the session in the Chroma collection (nearest neighbour of the "
                    "needle, its document as evidence)")},
                {"name": "chroma-files", "kind": "sql", "description": (
                    "Chroma's SQLite file (chroma.sqlite3: documents, metadata and the embeddings queue) read "
                    "whole, every session's rows")},
            ],
            "background_jobs": [],
            "qualifiers": [],
            "volatile_fields": [],
            "notes": self._notes(),
        }

    def _notes(self) -> list[str]:
        ratio_note = {
            0.001: "chat_history_token_ratio=0.001 (option, the setup that exercises the long-term blocks; "
                   "LlamaIndex's default is 0.7): the short-term queue may "
                   "hold 30 of the 30000 tokens, so at each write everything before the latest user message is "
                   "flushed into the long-term blocks; with the default 0.7 nothing in these cases (a few hundred "
                   "tokens a scope) would ever leave the queue, and the blocks would never be used",
            0.02: "chat_history_token_ratio=0.02 (option; the memory notebook's long-term example; LlamaIndex's "
                  "default is 0.7): 600 tokens of short-term history, so only a scope that writes more than that "
                  "(the contradiction cases, not the deletion cases) flushes its oldest messages into the blocks",
            0.7: "chat_history_token_ratio=0.7 (LlamaIndex's default, the default setup): 21000 tokens of short-term "
                 "history, more than a case writes, so the blocks stay empty and the door is the raw chat history",
        }[self.ratio]
        return [
            f"llama-index-core {self.version}: Memory.from_defaults(session_id=<scope>, token_limit=30000, "
            "token_flush_size=3000, insert_method='system', memory_blocks=[FactExtractionMemoryBlock("
            "name='extracted_info', max_facts=50, priority=1), VectorMemoryBlock(name='vector_memory', priority=2)]), "
            "the blocks as the module guide's example (its StaticMemoryBlock left out: nothing static is known)",
            ratio_note,
            "the chat store is SQLAlchemyChatStore on SQLite (sqlite+aiosqlite) in the run's data directory, one "
            "table for every scope, keyed by session; LlamaIndex's default is an in-memory SQLite database, which a "
            "restart would empty",
            "VectorMemoryBlock's vector store is ChromaVectorStore over a chromadb PersistentClient collection in the "
            "data directory (the memory notebook uses Chroma's EphemeralClient), default distance, telemetry off",
            "the LLM is OpenAILike and the embedder OpenAILikeEmbedding (llama-index's OpenAI-compatible classes) "
            "pointed at the memmatrix model gateway, with the gateway's embedding width",
            ("fact_persistence=file (option): the adapter writes the FactExtractionMemoryBlock's facts to the data "
             "directory after every change and loads them at start; LlamaIndex keeps them only in the block object"
             if self.persist_facts else
             "fact_persistence=process (LlamaIndex's behaviour): the FactExtractionMemoryBlock's facts live in the "
             "block object only, so a restart starts with none (the module guide: 'beyond the default, the Memory "
             "object is not serializable'); the chat store and the Chroma collection persist"),
            "the door passes the query as Memory.get(input=...), so it is not written into the memory (an agent's "
            "first step puts the user message first, then calls get())",
        ]

    def reset(self) -> None:
        self.memories = {}
        for key in self._run(self.chat_store.get_keys()):
            self._run(self.chat_store.delete_messages(key))
        self.chroma.reset()  # every collection, and the files behind them
        self._open_vectors()
        for f in (self.data / "facts").glob("*.json"):
            f.unlink()

    def write(self, scope: str, at: str, messages: list) -> dict:
        from llama_index.core.base.llms.types import ChatMessage
        before = {r[0] for r in self._rows(scope)}
        memory = self._memory(scope)
        self._run(memory.aput_messages([ChatMessage(role=m["role"], content=m["content"]) for m in messages]))
        self._save_facts(scope)
        return {"ids": [str(r[0]) for r in self._rows(scope) if r[0] not in before]}

    def settle(self, timeout_s: float) -> dict:
        return {"quiescent": True, "detail": "put returns after the flush, the extraction and the embedding"}

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        messages = self._run(self._memory(scope).aget(input=query))
        lines, items = [], []
        for m in messages:
            content = m.content or ""
            lines.append(f"{m.role.value}: {content}")
            if m.role.value == "system" and "<memory>" in content:
                for fact in _FACT.findall(_section(content, "extracted_info") or ""):
                    items.append({"text": fact.strip(), "kind": "fact"})
                for batch in _batches(_section(content, "vector_memory") or ""):
                    items.append({"text": batch, "kind": "message-batch"})
            else:
                items.append({"text": content, "kind": f"{m.role.value}-message"})
        return {"text": "\n".join(lines), "items": items}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters, VectorStoreQuery
        embedding = self._run(self.embed.aget_query_embedding(query))
        result = self.vectors.query(VectorStoreQuery(
            query_str=query, query_embedding=embedding, similarity_top_k=k,
            filters=MetadataFilters(filters=[MetadataFilter(key="session_id", value=scope)])))
        return {"items": [{"id": n.node_id, "text": n.get_content(), "score": s, "kind": "message-batch"}
                          for n, s in zip(result.nodes or [], result.similarities or [])]}

    def forget(self, scope: str, at: str, text: str) -> dict:
        from llama_index.core.base.llms.types import ChatMessage
        ids: list[str] = []
        # the chat store: the rows (active or archived) whose message states the request, by row id
        for rid, _status, _role, content in self._rows(scope):
            if coverage(text, content) >= FORGET_COVERAGE:
                self._run(self.chat_store.delete_message(scope, rid))
                ids.append(f"message:{rid}")
        # the fact block: no delete of its own; the facts stating the request taken out of its list
        block = self._block(scope, "extracted_info")
        kept = [f for f in block.facts if coverage(text, f) < FORGET_COVERAGE]
        ids += [f"fact:{i}" for i, f in enumerate(block.facts) if coverage(text, f) >= FORGET_COVERAGE]
        block.facts = kept
        self._save_facts(scope)
        # the vector block: each node holding a message that states the request deleted by id, the batch's other
        # messages put back through the block's own put (one new node) so they stay retrievable
        vector_block = self._block(scope, "vector_memory")
        for node_id, document in self._nodes(scope):
            parts = _MESSAGE.findall(document or "")
            if not any(coverage(text, body) >= FORGET_COVERAGE for _, body in parts):
                continue
            self.vectors.delete_nodes([node_id])
            ids.append(f"node:{node_id}")
            rest = [ChatMessage(role=role, content=body) for role, body in parts
                    if coverage(text, body) < FORGET_COVERAGE]
            if rest:
                self._run(vector_block.aput(rest, session_id=scope))
        return {"ids": ids}

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        token = needle["token"]
        if store == "chat-store":
            hits = [f"{status} {role}: {content}" for _, status, role, content in self._rows(scope)
                    if contains(content, token)]
            return {"state": "present" if hits else "absent", "evidence": hits}
        if store == "facts":
            facts = list(self._block(scope, "extracted_info").facts)
            if self.persist_facts and self._facts_file(scope).exists():
                facts += json.loads(self._facts_file(scope).read_text())
            hits = sorted({f for f in facts if contains(f, token)})
            return {"state": "present" if hits else "absent", "evidence": hits}
        if store == "vectors":
            if not self._nodes(scope):
                return {"state": "absent", "evidence": [], "distance": None}
            embedding = self._run(self.embed.aget_query_embedding(needle["text"]))
            got = self.collection.query(query_embeddings=[embedding], n_results=1, where={"session_id": scope},
                                        include=["documents", "distances"])
            doc = ((got.get("documents") or [[]])[0] or [None])[0]
            distance = ((got.get("distances") or [[]])[0] or [None])[0]
            held = bool(doc) and contains(doc, token)
            node_id = ((got.get("ids") or [[]])[0] or [None])[0]
            return {"state": "present" if held else "absent", "evidence": [doc] if doc else [],
                    "distance": None if distance is None else round(float(distance), 6),
                    "items": [{"id": node_id, "text": doc, "kind": "message-batch"}] if held else []}
        if store == "chroma-files":
            hits = sqlite_hits(self.data / "chroma" / "chroma.sqlite3", token)
            return {"state": "present" if hits else "absent", "evidence": hits}
        raise KeyError(f"no store {store!r}")

    def close(self) -> None:
        try:
            engine = getattr(self.chat_store, "_async_engine", None)
            if engine is not None:
                self._run(engine.dispose())
        except Exception:
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
