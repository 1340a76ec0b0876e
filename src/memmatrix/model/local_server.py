"""A GGUF model served on loopback as an OpenAI-compatible upstream (run by ``memmatrix.model.local``).

It runs with the local-model environment's interpreter (llama-cpp-python and nothing of memmatrix), on the
standard library's http.server: llama_cpp.server would bring fastapi, uvicorn, pydantic-settings and
sse-starlette into the environment for routes this file serves in a page, and its chat handler does not force a
tool call or take a ``json_schema`` response format the way memmatrix needs.

    POST /v1/chat/completions   greedy decoding (temperature 0, top_k 1, no repeat penalty, a fixed seed), the
                                answer length capped; ``response_format`` json_object / json_schema and ``tools``
                                answered under a grammar, so the answer is always valid JSON of that shape (a
                                tools request always gets one call of an offered tool)
    POST /v1/embeddings         the same GGUF, mean-pooled and normalised (``n_embd`` dimensions)
    GET  /v1/models, /health

Calls are answered one at a time, and an answer is a function of its request alone, whatever was asked before
it: the prompt is evaluated in two fixed pieces, the first turn (a system prompt, often thousands of tokens and the
same on every call of a system) and the rest. The first piece's state is kept (the last one) and loaded when a
request starts with the same tokens, else computed from an empty context; either way the rest is evaluated on
the same state, so reusing it changes the time of a call, not its answer. The first line on stdout is JSON naming
the port and the model's facts; everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# llama_cpp is imported where it is used: the message and tool shaping below is tested without it

SAMPLER = {"temperature": 0.0, "top_k": 1, "top_p": 1.0, "min_p": 0.0, "typical_p": 1.0, "repeat_penalty": 1.0,
           "frequency_penalty": 0.0, "presence_penalty": 0.0}


class BadRequest(Exception):
    pass


def text_of(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: the text ones
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") in
                         ("text", "input_text", "output_text"))
    return json.dumps(content)


def plain_messages(messages: list, tools: list | None) -> list[dict]:
    """The conversation as system/user/assistant text turns any chat template takes: tool results and tool calls
    written out, one system turn first, consecutive turns of one role joined."""
    out: list[dict] = []
    for m in messages:
        if not isinstance(m, dict):
            raise BadRequest("every message must be an object")
        role, text = m.get("role"), text_of(m.get("content"))
        if role in ("system", "developer"):
            role = "system" if not out else "user"
        elif role == "tool" or role == "function":
            role, text = "user", f"Tool result ({m.get('name') or m.get('tool_call_id') or 'tool'}): {text}"
        elif role == "assistant" and m.get("tool_calls"):
            calls = [{"name": (c.get("function") or {}).get("name"), "arguments": (c.get("function") or {}).get("arguments")}
                     for c in m["tool_calls"]]
            text = (text + "\n" if text else "") + "Tool calls: " + json.dumps(calls)
        elif role not in ("user", "assistant"):
            role = "user"
        if out and out[-1]["role"] == role:
            out[-1]["content"] += "\n\n" + text
        else:
            out.append({"role": role, "content": text})
    if tools:
        listing = "\n".join(json.dumps({"name": t["function"]["name"], "description": t["function"].get("description", ""),
                                        "parameters": t["function"].get("parameters", {})}) for t in tools)
        note = f"You can call these tools. Answer with one JSON object {{\"name\": ..., \"arguments\": {{...}}}}:\n{listing}"
        if out and out[0]["role"] == "system":
            out[0]["content"] += "\n\n" + note
        else:
            out.insert(0, {"role": "system", "content": note})
    if not out or out[-1]["role"] != "user":
        out.append({"role": "user", "content": "Continue."})
    return out


def grammar_for(schema: dict | None, stderr):
    """A grammar for JSON of ``schema`` (any JSON without one, or when the schema cannot be turned into one)."""
    from llama_cpp import LlamaGrammar
    from llama_cpp.llama_grammar import JSON_GBNF
    if schema is not None:
        try:
            return LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        except Exception as exc:  # noqa: BLE001 - a schema the converter cannot take: any JSON object instead
            print(f"local model: schema not convertible ({type(exc).__name__}: {exc}); any JSON instead",
                  file=stderr, flush=True)
    return LlamaGrammar.from_string(JSON_GBNF, verbose=False)


def offered_tools(body: dict) -> list[dict]:
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict) and isinstance(t.get("function"), dict)]
    choice = body.get("tool_choice")
    if choice == "none":
        return []
    if isinstance(choice, dict) and (choice.get("function") or {}).get("name"):
        tools = [t for t in tools if t["function"]["name"] == choice["function"]["name"]] or tools
    return tools


def tool_schema(tools: list[dict]) -> dict:
    return {"anyOf": [{"type": "object", "properties": {
        "name": {"const": t["function"]["name"]},
        "arguments": t["function"].get("parameters") or {"type": "object"}},
        "required": ["name", "arguments"], "additionalProperties": False} for t in tools]}


class Model:
    def __init__(self, ns: argparse.Namespace):
        import llama_cpp
        from llama_cpp import Llama
        self.version = llama_cpp.__version__
        self.ns = ns
        self.lock = threading.Lock()
        common = dict(model_path=ns.model, n_threads=ns.threads, n_threads_batch=ns.threads, seed=ns.seed,
                      verbose=False, n_batch=512)
        self.llm = Llama(n_ctx=ns.n_ctx, **common)
        self.embedder = Llama(n_ctx=ns.embed_ctx, embedding=True, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
                              **common)
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        text = self.llm._model.token_get_text
        self.formatter = Jinja2ChatFormatter(self.llm.metadata["tokenizer.chat_template"],
                                             eos_token=text(self.llm.token_eos()), bos_token=text(self.llm.token_bos()))
        self.first_turn: tuple[str, object] | None = None  # (sha256 of the first piece's tokens, its saved state)

    def prompt(self, plain: list[dict]) -> tuple[list[int], int, list[str]]:
        """The prompt's tokens, where its first piece ends (the tokens up to the end of the first turn's text), and
        the stop strings of the chat template."""
        fmt = self.formatter(messages=plain)
        tokenize = lambda t: self.llm.tokenize(t.encode(), add_bos=not fmt.added_special, special=True)  # noqa: E731
        tokens = tokenize(fmt.prompt)
        end = fmt.prompt.find(plain[0]["content"]) + len(plain[0]["content"]) if plain[0]["content"] else -1
        head = tokenize(fmt.prompt[:end]) if end > 0 else []
        k = next((i for i, (a, b) in enumerate(zip(head, tokens)) if a != b), min(len(head), len(tokens)))
        k = k if 64 <= k < len(tokens) else 0  # a short first turn is not worth keeping
        stop = fmt.stop if isinstance(fmt.stop, list) else [fmt.stop] if fmt.stop else []
        return tokens, k, stop

    def prime(self, head: list[int]) -> str:
        """The context holding exactly ``head`` evaluated from empty: loaded when kept, else computed and kept."""
        self.llm.reset()
        if not head:
            return "none"
        key = hashlib.sha256(json.dumps(head).encode()).hexdigest()
        if self.first_turn is not None and self.first_turn[0] == key:
            self.llm.load_state(self.first_turn[1])
            return "loaded"
        self.first_turn = None
        self.llm.eval(head)
        self.first_turn = (key, self.llm.save_state())
        return "computed"

    def facts(self) -> dict:
        meta = self.llm.metadata
        return {"llama_cpp_python": self.version, "n_ctx": self.ns.n_ctx, "n_embd": self.llm.n_embd(),
                "embed_ctx": self.ns.embed_ctx, "threads": self.ns.threads, "seed": self.ns.seed,
                "max_tokens": self.ns.max_tokens, "sampler": SAMPLER, "prefix_cache": "first-turn",
                "gguf": {k: meta[k] for k in ("general.name", "general.architecture", "general.file_type")
                         if k in meta}}

    def chat(self, body: dict) -> dict:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("'messages' must be a non-empty list")
        tools = offered_tools(body)
        rf = body.get("response_format") if isinstance(body.get("response_format"), dict) else {}
        if tools:
            grammar, shape = grammar_for(tool_schema(tools), sys.stderr), "tools"
        elif rf.get("type") == "json_schema":
            schema = (rf.get("json_schema") or {}).get("schema")
            grammar, shape = grammar_for(schema if isinstance(schema, dict) else None, sys.stderr), "json"
        elif rf.get("type") == "json_object":
            grammar, shape = grammar_for(rf.get("schema") if isinstance(rf.get("schema"), dict) else None,
                                         sys.stderr), "json"
        else:
            grammar, shape = None, "text"
        asked = body.get("max_completion_tokens") or body.get("max_tokens") or self.ns.max_tokens
        max_tokens = max(1, min(int(asked), self.ns.max_tokens))
        plain = plain_messages(messages, tools)
        with self.lock:
            tokens, k, stop = self.prompt(plain)
            if len(tokens) + max_tokens > self.ns.n_ctx:
                raise BadRequest(f"the prompt has {len(tokens)} tokens; with {max_tokens} to answer it does not fit "
                                 f"the local model's context of {self.ns.n_ctx}")
            self.prime(tokens[:k])
            out = self.llm.create_completion(prompt=tokens, grammar=grammar, max_tokens=max_tokens, stop=stop,
                                             seed=self.ns.seed, **SAMPLER)
        choice = out["choices"][0]
        text = choice.get("text") or ""
        rid = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]
        message: dict = {"role": "assistant", "content": text}
        finish = choice.get("finish_reason") or "stop"
        if shape == "tools":
            try:
                call = json.loads(text)
                message = {"role": "assistant", "content": None, "tool_calls": [{
                    "id": f"call_{rid}", "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}]}
                finish = "tool_calls"
            except (ValueError, KeyError, TypeError):  # cut off by the length cap: the text as it came
                pass
        return {"id": f"chatcmpl-{rid}", "object": "chat.completion", "created": 0, "model": body.get("model"),
                "system_fingerprint": f"llama-cpp-python-{self.version}",
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
                "usage": out.get("usage")}

    def embeddings(self, body: dict) -> dict:
        raw = body.get("input")
        inputs = [raw] if isinstance(raw, str) else raw
        if not isinstance(inputs, list) or not inputs or not all(isinstance(x, str) for x in inputs):
            raise BadRequest("'input' must be a string or a non-empty list of strings (token ids are not taken: "
                             "their tokenizer is not this model's)")
        with self.lock:
            vectors = [self.embedder.embed(text, normalize=True, truncate=True) for text in inputs]
            tokens = sum(len(self.embedder.tokenize(t.encode(), add_bos=False)) for t in inputs)
        dims = body.get("dimensions")
        data = []
        for i, vec in enumerate(vectors):
            vec = [round(float(x), 6) for x in vec]
            if isinstance(dims, int) and dims != len(vec):
                raise BadRequest(f"'dimensions' {dims}: this model's embeddings have {len(vec)}")
            emb = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode() \
                if body.get("encoding_format") == "base64" else vec
            data.append({"object": "embedding", "index": i, "embedding": emb})
        return {"object": "list", "data": data, "model": body.get("model"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def handler(model: Model, name: str):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def answer(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                return self.answer(200, {"object": "list", "data": [{"id": name, "object": "model", "created": 0,
                                                                      "owned_by": "local"}]})
            if self.path == "/health":
                return self.answer(200, {"ok": True})
            self.answer(404, {"error": {"message": f"no route GET {self.path}", "type": "not_found"}})

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            routes = {"/v1/chat/completions": model.chat, "/v1/embeddings": model.embeddings}
            fn = routes.get(self.path.split("?", 1)[0])
            if fn is None:
                return self.answer(404, {"error": {"message": f"no route POST {self.path}; served: {sorted(routes)}",
                                                   "type": "not_found"}})
            try:
                body = json.loads(raw or b"null")
                if not isinstance(body, dict):
                    raise BadRequest("the request body must be a JSON object")
                return self.answer(200, fn(body))
            except (BadRequest, ValueError) as exc:
                return self.answer(400, {"error": {"message": str(exc), "type": "invalid_request_error"}})
            except Exception as exc:  # noqa: BLE001 - said to the caller, who records it
                return self.answer(500, {"error": {"message": f"{type(exc).__name__}: {exc}", "type": "server_error"}})

    return Handler


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True)
    p.add_argument("--name", required=True, help="the model id it answers as")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--n-ctx", type=int, default=8192)
    p.add_argument("--embed-ctx", type=int, default=2048)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-tokens", type=int, default=512)
    ns = p.parse_args(argv)
    model = Model(ns)
    server = ThreadingHTTPServer(("127.0.0.1", ns.port), handler(model, ns.name))  # loopback only
    server.daemon_threads = True
    print(json.dumps({"port": server.server_address[1], **model.facts()}), flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
