#!/usr/bin/env bash
# Regenerate every committed result under results/ (oracle model, no API key), then verify them.
# The compose runs need Docker (scripts/offline-docker.sh); without a registry also set
#   MEMMATRIX_BASE_IMAGE=memmatrix/base:bookworm MEMMATRIX_FALKORDB_IMAGE=memmatrix/falkordb-lite:0.11.0
set -euo pipefail
cd "$(dirname "$0")/.."
mm=${MEMMATRIX:-.venv/bin/memmatrix}
out=${1:-results}
# Graphiti's build_communities never returns on some graphs (see README): a hang costs one call timeout.
export MEMMATRIX_CALL_TIMEOUT=${MEMMATRIX_CALL_TIMEOUT:-60}

$mm run --out "$out"                                                   # every system, both protocols, embedded
$mm run --system mem0@1.0.11 --out "$out"
for system in reference mem0@2.2.1 mem0@1.0.11 graphiti; do
  $mm run --system "$system" --runtime compose --out "$out"
done
# Graphiti's other delete paths (the REST server's) and an extractor that resolves no dates
for path in edge_delete episode_node_delete; do
  $mm run --system graphiti --protocol deletion --option forget_path=$path --out "$out"
done
MEMMATRIX_MODEL_ORACLE_ABLATION=undated $mm run --system graphiti --protocol contradiction --out "$out"
$mm verify "$out"
