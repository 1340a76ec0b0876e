"""memmatrix estimate: the oracle runs' model traffic times a price table (publish/estimate.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memmatrix.common.errors import ConfigError
from memmatrix.evidence.verify import load_result
from memmatrix.publish.estimate import load_prices, price, traffic

ROOT = Path(__file__).resolve().parents[1]
MEM0 = ROOT / "results/contradiction/mem0/2.2.1/embedded"


def test_the_system_traffic_leaves_the_judge_apart_and_the_price_adds_both():
    result = load_result(MEM0 / "result.json")
    t = traffic(MEM0, result)
    per = result["cost"]["per_operation"]
    assert t["llm_calls"] == sum(v["llm_calls"] for op, v in per.items() if not op.startswith("judge")) > 0
    assert t["judge"]["llm_calls"] == per["judge"]["llm_calls"] + per["judge-suite"]["llm_calls"] > 0
    assert t["embedding_inputs"] > 0 and t["embedding_tokens"] >= t["embedding_inputs"]
    assert "JSON" in t["asks"] and "tool calls" not in t["asks"]
    prices = {"chat_model": "c", "embedding_model": "e", "models": {"c": {"input": 1.0, "output": 2.0},
                                                                     "e": {"input": 0.5}}}
    want = ((t["tokens_in"] + t["judge"]["tokens_in"]) * 1.0 + (t["tokens_out"] + t["judge"]["tokens_out"]) * 2.0
            + t["embedding_tokens"] * 0.5) / 1e6
    assert price(t, prices) == pytest.approx(want)


@pytest.mark.parametrize("text,fix", [
    ("models: []\n", "models: {NAME"),
    ("chat_model: x\nembedding_model: e\nmodels: {e: {input: 1}}\n", "chat_model 'x' is not under 'models'"),
    ("chat_model: c\nembedding_model: c\nmodels: {c: {input: -1}}\n", "non-negative"),
])
def test_a_price_table_mistake_is_named_with_its_fix(tmp_path, text, fix):
    (tmp_path / "p.yaml").write_text(text)
    with pytest.raises(ConfigError, match=fix.replace("{", r"\{").replace("[", r"\[")):
        load_prices(tmp_path / "p.yaml")


def test_the_command_prices_the_example_table_and_refuses_a_bad_one_before_work(tmp_path):
    env = {"MEMMATRIX_HOME": str(ROOT), "PATH": str(Path(sys.executable).parent)}
    done = subprocess.run([sys.executable, "-m", "memmatrix", "estimate", str(ROOT / "results"), "--system", "mem0",
                           "--protocol", "deletion"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "| mem0 |" in done.stdout and "gpt-4o-mini" in done.stdout and "All 1 runs" in done.stdout
    (tmp_path / "bad.yaml").write_text("models: {}\nchat_model: a\nembedding_model: b\n")
    done = subprocess.run([sys.executable, "-m", "memmatrix", "estimate", "--prices", "bad.yaml"], capture_output=True,
                          text=True, env=env, cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "bad.yaml" in done.stderr
    assert done.stdout == ""  # refused before any result was read
