"""What a sleep-time pass sends Letta's sleep-time agent: the message SleeptimeMultiAgentV4 builds (letta 0.16.8,
``letta/groups/sleeptime_multi_agent_v4.py`` ``_participant_agent_step``), the main agent's messages rendered as
``letta.groups.helpers.stringify_message`` renders them, here from what GET /agents/{id}/messages lists.

No route starts a pass (Letta starts one after every 5th main-agent turn), so the adapter's jobs op sends this
message itself (adapter.py ``_sleeptime_pass``).
"""

from __future__ import annotations

#: the message Letta's SleeptimeMultiAgentV4._participant_agent_step sends a sleep-time agent (0.16.8), verbatim
SLEEPTIME_REMINDER = (
    "<system-reminder>\n"
    "You are a sleeptime agent - a background agent that asynchronously processes conversations after they occur.\n\n"
    "IMPORTANT: You are NOT the primary agent. You are reviewing a conversation that already happened between a "
    "primary agent and its user:\n"
    '- Messages labeled "assistant" are from the primary agent (not you)\n'
    '- Messages labeled "user" are from the primary agent\'s user\n\n'
    "Your primary role is memory management. Review the conversation and use your memory tools to update any "
    "relevant memory blocks with information worth preserving. "
    "Check your memory_persona block for any additional instructions or policies.\n"
    "</system-reminder>\n\n"
    "Messages:\n")


def stringify(message: dict) -> str | None:
    """A message of GET /agents/{id}/messages as letta.groups.helpers.stringify_message renders it for a
    sleep-time agent (None: not shown)."""
    kind = message.get("message_type")
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    if kind == "user_message":
        return f"{message.get('name') or 'user'}: {content}"
    if kind == "assistant_message":
        return f"assistant: {content}"
    if kind == "reasoning_message":
        return f"assistant: <thinking>{message.get('reasoning')}</thinking>"
    if kind == "tool_call_message":
        calls = message.get("tool_calls") or [message.get("tool_call") or {}]
        return "\n".join(f"assistant: Calling tool {c.get('name')}" for c in calls if c.get("name")) or None
    if kind == "tool_return_message":
        ret = message.get("tool_return")
        return None if ret is None or str(ret) == "None" else f"assistant: Tool call returned {ret}"
    return None

