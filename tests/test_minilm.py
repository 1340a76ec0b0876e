"""The optional real embedder: all-MiniLM-L6-v2 from the minilm extra, loaded offline.

Heavy (torch and sentence-transformers in a virtualenv of their own): MEMMATRIX_TEST_ENABLE=heavy.
"""

import os
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.heavy

SNIPPET = """
import json, requests
from memmatrix.model import Gateway, GatewaySettings
with Gateway(GatewaySettings(embedder="minilm"), []) as gw:
    r = requests.post(gw.url + "/embeddings", json={"input": ["Where do I live?", "I live in Quillmere.",
                                                               "My dog is called Zanzibrook."]}).json()
    v = [d["embedding"] for d in r["data"]]
    cos = lambda a, b: sum(x * y for x, y in zip(a, b))
    print(json.dumps({"dims": len(v[0]), "near": cos(v[0], v[1]), "far": cos(v[0], v[2]),
                      "identity": gw.identity()["embedding_model"]}))
"""


def test_minilm_embeddings_through_the_gateway(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                          "-e", f"{ROOT}[minilm]"], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr[-2000:]
    out = subprocess.run([str(venv / "bin" / "python"), "-c", SNIPPET], capture_output=True, text=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    import json
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["dims"] == 384 and got["identity"] == "all-MiniLM-L6-v2"
    assert got["near"] > got["far"] + 0.2  # a real sentence model, not a bag of hashed words
