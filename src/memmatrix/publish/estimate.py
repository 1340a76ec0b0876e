"""What a run with a real model would cost: the model traffic the oracle runs measured, times a price table.

A system asks the model the same questions whoever answers, so the oracle's runs count the calls a provider would
be asked: chat calls and the tokens of their requests, and embedding inputs. What they cannot measure is how long
a real model's answers are: the oracle answers tersely, so output tokens are a floor. Tokens are the oracle's
estimate (words and punctuation), not a provider tokenizer's count, and a system that retries or asks again after a
real model's mistake makes more calls than with the oracle. ``memmatrix estimate`` says all of that beside the
figure; ``examples/prices.yaml`` is the table to edit.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..common.canon import read_text, stored_transcript
from ..common.errors import ConfigError
from ..common.releases import version_key
from ..model.dialects.common import approx_tokens

PRICE_KEYS = ("input", "output")


def load_prices(path: Path) -> dict:
    """The price table: ``chat_model`` and ``embedding_model`` named, each with USD per million input (and output)
    tokens under ``models``; every mistake named with the fix."""
    import yaml
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the price table ({type(exc).__name__}); pass a YAML file like "
                          "examples/prices.yaml") from None
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise ConfigError(f"{path}: a price table has 'models: {{NAME: {{input: USD, output: USD}}}}' (per million "
                          "tokens); see examples/prices.yaml")
    for role in ("chat_model", "embedding_model"):
        name = data.get(role)
        if name not in data["models"]:
            raise ConfigError(f"{path}: {role} {name!r} is not under 'models'; name one of "
                              f"{', '.join(map(str, data['models']))}")
    for name, price in data["models"].items():
        if not isinstance(price, dict) or not all(isinstance(price.get(k, 0), (int, float)) and price.get(k, 0) >= 0
                                                  for k in PRICE_KEYS):
            raise ConfigError(f"{path}: models.{name} must be {{input: USD, output: USD}} per million tokens, "
                              "non-negative numbers")
    return data


def traffic(folder: Path, result: dict) -> dict:
    """A run's model traffic: chat calls and tokens from its cost, embedding inputs and their tokens from its model
    transcript (the cost counts embedding inputs, not their tokens)."""
    per = result["cost"].get("per_operation") or {}
    judge = {k: sum(v.get(k, 0) for op, v in per.items() if op.startswith("judge"))
             for k in ("llm_calls", "tokens_in", "tokens_out")}
    total = {k: v - judge.get(k, 0) for k, v in result["cost"]["total"].items() if isinstance(v, (int, float))}
    emb_tokens, asks = 0, set()
    path = stored_transcript(folder, "model-transcript")
    if path.is_file():
        for line in read_text(path).splitlines():
            rec = json.loads(line)
            req = rec.get("request") or {}
            if rec.get("kind") == "embedding":
                inp = req.get("input")
                for text in ([inp] if isinstance(inp, str) else inp if isinstance(inp, list) else []):
                    emb_tokens += approx_tokens(text) if isinstance(text, str) else len(text) if isinstance(
                        text, list) else 1
                asks.add(f"embeddings ({req['dimensions']} dims)" if req.get("dimensions") else "embeddings")
            elif rec.get("kind") == "chat" and not str((rec.get("context") or {}).get("call", "")).startswith("judge"):
                asks.add(_asks(rec.get("endpoint") or "", req))
    return {"llm_calls": total["llm_calls"], "tokens_in": total["tokens_in"], "tokens_out": total["tokens_out"],
            "embedding_inputs": total["embedding_inputs"], "embedding_tokens": emb_tokens,
            "cases": len(result["cases"]), "asks": sorted(asks), "judge": judge}


def _asks(endpoint: str, req: dict) -> str:
    """What one chat request needs of a model: tool calls, a JSON schema, JSON, or text (and on which endpoint)."""
    rf = req.get("response_format") or ((req.get("text") or {}).get("format")) or {}
    kind = "tool calls" if req.get("tools") else "JSON schema" if isinstance(rf, dict) and rf.get("type") == \
        "json_schema" else "JSON" if isinstance(rf, dict) and rf.get("type") == "json_object" else "text"
    return kind + (" (Responses API)" if endpoint.endswith("/responses") else "")


def price(t: dict, prices: dict) -> float:
    chat = prices["models"][prices["chat_model"]]
    emb = prices["models"][prices["embedding_model"]]
    tin, tout = t["tokens_in"] + t["judge"]["tokens_in"], t["tokens_out"] + t["judge"]["tokens_out"]
    return (tin * chat.get("input", 0) + tout * chat.get("output", 0) + t["embedding_tokens"] * emb.get("input", 0)) / 1e6


def default_runs(results: list[tuple[Path, dict]], protocols: tuple[str, ...] | None = None) -> list[tuple[Path, dict]]:
    """Each system's newest release's oracle run at its default setup (embedded, no options, the default case
    file), per protocol: what a nightly run of the main job asks a model."""
    newest: dict[tuple[str, str], tuple[Path, dict]] = {}
    for path, r in results:
        s, proto = r["stamp"]["system"], r["stamp"]["protocol"]["name"]
        if Path(path).parent.name != "embedded" or r["stamp"]["model"]["mode"] != "oracle" or s.get("options"):
            continue
        if protocols and proto not in protocols:
            continue
        key = (s["name"], proto)
        if key not in newest or version_key(s["version"]) > version_key(newest[key][1]["stamp"]["system"]["version"]):
            newest[key] = (path, r)
    return [newest[k] for k in sorted(newest)]


def markdown(runs: list[tuple[Path, dict]], prices: dict, home: Path, base: str = "") -> str:
    chat, emb = prices["chat_model"], prices["embedding_model"]
    out = [f"Priced with `{chat}` for chat and `{emb}` for embeddings "
           f"({prices.get('currency', 'USD')} per million tokens: chat {prices['models'][chat].get('input', 0):g} in, "
           f"{prices['models'][chat].get('output', 0):g} out; embeddings {prices['models'][emb].get('input', 0):g}).",
           "", "| system | release | protocol | cases | chat calls | tokens in | tokens out (a floor) | embedding inputs | "
           "embedding tokens | judge calls (tokens in) | cost | the model must answer |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    total = 0.0
    for path, r in runs:
        t = traffic(home / Path(path).parent, r)
        cost = price(t, prices)
        total += cost
        s = r["stamp"]["system"]
        out.append(f"| {s['name']} | [{s['version']}]({base}{Path(path).as_posix()}) | {r['stamp']['protocol']['name']} | "
                   f"{t['cases']} | {t['llm_calls']:,} | {t['tokens_in']:,} | {t['tokens_out']:,} | "
                   f"{t['embedding_inputs']:,} | {t['embedding_tokens']:,} | "
                   f"{t['judge']['llm_calls']:,} ({t['judge']['tokens_in']:,}) | {cost:.4f} | "
                   f"{', '.join(t['asks']) or 'nothing'} |")
    out += ["", f"All {len(runs)} runs: {total:.4f} {prices.get('currency', 'USD')}, the judge's calls included (the "
            "contradiction protocol's hygiene judge and its accuracy suite, asked of the same model in proxy mode; "
            "chat calls and tokens are the system's own). Tokens are the oracle's estimate "
            "(words and punctuation); a real model's answers are longer than the oracle's and its mistakes can make "
            "a system ask again, so read the figure as the cost of the questions, not a bound on the bill."]
    return "\n".join(out) + "\n"
