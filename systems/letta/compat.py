"""What the installed letta release offers, read from its source text (never imported: ``letta.server.db``
builds a database engine at import) and never from its version string. Each flag names the first release
that has it; the boundaries were checked against every wheel from 0.10.0 to 0.16.8
(docs/research/letta-releases/README.md). The adapter drives 0.15.1 to 0.16.8 (system.yaml's releases block).

Under compose the adapter image installs the same lock as the server image, so the local source is the
server's release. What the database holds (provider_traces.call_type) is asked of the database instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path


def _src(rel: str) -> str:
    spec = find_spec("letta")
    if spec is None or spec.origin is None:
        return ""
    path = Path(spec.origin).parent / rel
    return path.read_text(encoding="utf-8") if path.exists() else ""


@dataclass(frozen=True)
class Features:
    tool_run: bool            # 0.15.1: POST /agents/{id}/tools/{name}/run (the door's search tools)
    embedding_handle: bool    # 0.16.0: openai/text-embedding-3-small resolves with a custom OPENAI_BASE_URL
    model_handle: bool        # 0.16.2: openai-proxy/<m> resolves as `model` (the provider_models table)
    compaction_agent: bool    # 0.16.0: an agent's compaction_settings (what a bare POST /summarize uses)
    compaction_request: bool  # 0.16.2: POST /summarize takes {compaction_settings}, answers a CompactionResponse
    summary_role: bool        # 0.16.5: compaction stores its summary as messages.role 'summary'
    block_rebuild: bool       # 0.16.7: PATCH /blocks/{id} rebuilds the system message of every agent the block is
                              # attached to (checked in the wheels 0.15.1 to 0.16.8; before, it rebuilds none)


def detect() -> Features:
    agents = _src("server/rest_api/routers/v1/agents.py")
    return Features(
        tool_run='"/{agent_id}/tools/{tool_name}/run"' in agents,
        embedding_handle="Skipping embedding models for" not in _src("schemas/providers/openai.py"),
        model_handle="provider_manager.get_llm_config_from_handle" in _src("server/server.py"),
        compaction_agent="compaction_settings" in _src("schemas/agent.py"),
        compaction_request="class CompactionRequest" in agents,
        summary_role='summary = "summary"' in _src("schemas/enums.py"),
        block_rebuild="_rebuild_system_prompts_for_connected_agents" in _src("services/block_manager.py"),
    )
