"""qdrant-client's local mode (mem0's default vector store) written by two threads while a third searches.

Run it with the Python of a mem0 environment memmatrix built (``$XDG_CACHE_HOME/memmatrix/envs/mem0-*/bin/python``,
or any virtualenv with ``qdrant-client``): ``python race.py [ROUNDS]``. Each round makes a fresh on-disk
collection, two writers upsert 500 points each (one point per call, as mem0 adds a memory) while a reader runs
3,000 nearest-neighbour queries, and then says how many points were acknowledged yet are missing (a silent loss),
how many upserts raised (a refusal the writer saw), and whether the collection's arrays still agree.

``LocalCollection._add_point`` takes ``idx = len(self.ids)`` and grows its numpy arrays without a lock
(qdrant/qdrant-client#1193), so two writers can take one index, and a reader can see ``ids`` grown before
``deleted`` has.
"""

from __future__ import annotations

import random
import sys
import tempfile
import threading

from qdrant_client import QdrantClient, models


def one_round(seed: int) -> dict:
    rnd = random.Random(seed)
    client = QdrantClient(path=tempfile.mkdtemp())
    client.create_collection("c", vectors_config=models.VectorParams(size=8, distance=models.Distance.COSINE))
    acknowledged, refused, query_errors = [], [], []
    vectors = {i: [rnd.random() for _ in range(8)] for i in range(1000)}
    queries = [[rnd.random() for _ in range(8)] for _ in range(3000)]

    def writer(start: int) -> None:
        for i in range(start, 1000, 2):
            try:
                client.upsert("c", [models.PointStruct(id=i, vector=vectors[i], payload={"i": i})])
                acknowledged.append(i)
            except Exception as exc:  # noqa: BLE001 - every failure is what is measured
                refused.append(f"{type(exc).__name__}: {exc}"[:80])

    def reader() -> None:
        for q in queries:
            try:
                client.query_points("c", query=q, limit=3)
            except Exception as exc:  # noqa: BLE001
                query_errors.append(type(exc).__name__)

    threads = [threading.Thread(target=writer, args=(0,)), threading.Thread(target=writer, args=(1,)),
               threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    collection = client._client.collections["c"]
    live = {pid for pid, idx in collection.ids.items() if idx < len(collection.deleted) and not collection.deleted[idx]}
    return {"acknowledged": len(acknowledged), "silently_lost": sum(i not in live for i in acknowledged),
            "refused": len(refused), "query_errors": len(query_errors),
            "arrays_agree": len(collection.ids) == len(collection.ids_inv) == len(collection.deleted),
            "first_refusal": refused[0] if refused else None}


if __name__ == "__main__":
    for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 5):
        print(one_round(r), flush=True)
