#!/usr/bin/env bash
# Regenerate every committed result under results/ (oracle model, no API key), then verify them.
# Every setting is memmatrix's default, so the README's first command reproduces these bytes (for the systems its
# main job runs; `--system all` adds those whose system.yaml says main_job: false).
# The compose runs need Docker (scripts/offline-docker.sh); without a registry also set
#   MEMMATRIX_BASE_IMAGE=memmatrix/base:bookworm MEMMATRIX_FALKORDB_IMAGE=memmatrix/falkordb-lite:0.11.0
#   MEMMATRIX_LETTA_IMAGE=memmatrix/letta-server:0.16.8 MEMMATRIX_PGVECTOR_IMAGE=memmatrix/pgvector-lite:16
#   MEMMATRIX_HINDSIGHT_PG_IMAGE=memmatrix/pg0-postgres:18
# and, where PyTorch's CPU index is unreachable, serve the torch 2.13.0+cpu wheel for A-MEM's image:
#   scripts/wheel-index.sh <folder holding it> & MEMMATRIX_TORCH_INDEX_URL=http://127.0.0.1:18480/simple
# --replace: a new protocol or dataset version replaces the committed result of the older one.
set -euo pipefail
cd "$(dirname "$0")/.."
mm=${MEMMATRIX:-.venv/bin/memmatrix}
out=${1:-results}

$mm run --replace --system all --out "$out"                            # every system, every protocol, embedded
$mm run --replace --system mem0@1.0.11 --out "$out"
for system in reference mem0@2.2.1 mem0@1.0.11 graphiti letta mempalace langmem cognee amem hindsight; do
  $mm run --replace --system "$system" --runtime compose --out "$out"
done
# Graphiti's other delete paths (the REST server's) and an extractor that resolves no dates
for path in edge_delete episode_node_delete; do
  $mm run --replace --system graphiti --protocol deletion --option forget_path=$path --out "$out"
done
# Letta with its whole agent deleted as the forget (what an agent's deletion leaves behind)
$mm run --replace --system letta --protocol deletion --option forget_path=agent_delete --out "$out"
MEMMATRIX_MODEL_ORACLE_ABLATION=undated $mm run --replace --system graphiti --protocol contradiction --out "$out"
# the setups vendor claims name (claims/*.yaml: a test's `setup` and `cases`), each a variant folder of its own
$mm run --replace --system graphiti --protocol deletion --cases cases/deletion/shared-1.0.0.json --out "$out"
$mm run --replace --system graphiti --protocol contradiction --cases cases/contradiction/phrasing-1.0.0.json --out "$out"
for system in amem hindsight; do
  $mm run --replace --system "$system" --protocol contradiction --cases cases/contradiction/update-1.0.0.json --out "$out"
done
$mm run --replace --system langmem --protocol contradiction --option memory_shape=profile --out "$out"
$mm run --replace --system langmem --protocol deletion --option forget_path=ttl --out "$out"
$mm run --replace --system mempalace --protocol contradiction --option memory=kg --out "$out"
for path in retire redact; do
  $mm run --replace --system hindsight --protocol deletion --option forget_path=$path --out "$out"
done
for option in provider_trace=off sleeptime=on; do
  $mm run --replace --system letta --protocol deletion --protocol contradiction --option $option --out "$out"
done
# the generated sets (README "The breadth set", "Scale", "The breadth set and the density stream", "Contradiction
# at scale"): every system that declares parallel instances runs on two; the scale sets on the systems the README
# reports
for system in reference notes append mem0 graphiti langmem mempalace amem hindsight letta cognee; do
  $mm run --replace --system "$system" --protocol deletion --cases cases/deletion/breadth-2.0.0.json --jobs 2 --out "$out"
done
for system in reference notes append mem0 graphiti langmem mempalace amem hindsight letta cognee; do
  $mm run --replace --system "$system" --protocol contradiction --cases cases/contradiction/breadth-2.0.0.json --jobs 2 --out "$out"
done
for system in mem0 graphiti letta; do
  $mm run --replace --system "$system" --protocol contradiction --cases cases/contradiction/density20-2.0.0.json --out "$out"
done
for set in scale10 scale100; do
  for system in mem0 graphiti letta; do
    $mm run --replace --system "$system" --protocol deletion --cases cases/deletion/$set-2.0.0.json --jobs 2 --out "$out"
  done
  for system in reference mem0 graphiti letta; do
    $mm run --replace --system "$system" --protocol contradiction --cases cases/contradiction/$set-2.0.0.json --out "$out"
  done
done
# the stress protocols and sets (README "The boundaries protocol", "The concurrency protocol", "Provider failure")
for system in reference notes append mem0 graphiti letta mempalace langmem cognee amem hindsight; do
  $mm run --replace --system "$system" --protocol boundaries --cases cases/boundaries/poison-1.1.0.json --out "$out"
done
for system in reference mem0@2.2.1 mem0@1.0.11 graphiti letta; do
  $mm run --replace --system "$system" --protocol concurrency --out "$out"
done
for ablation in flaky stall; do
  for system in mem0 graphiti letta; do
    MEMMATRIX_MODEL_ORACLE_ABLATION=$ablation $mm run --replace --system "$system" --protocol writepath --out "$out"
  done
done
# release histories (README "History"): sampled releases, then every change point bisected to adjacent releases
$mm sweep --system mem0 --again --bisect --out "$out" \
  --versions 0.1.9,0.1.12,0.1.20,0.1.27,0.1.57,0.1.59,0.1.70,0.1.100,0.1.117,1.0.0,1.0.7,1.0.11,2.0.0,2.2.1
$mm sweep --system graphiti --protocol deletion --again --bisect --out "$out" \
  --versions 0.18.1,0.18.6,0.20.4,0.21.0,0.24.0,0.27.1,0.29.3,0.30.2,0.31.2
$mm verify "$out"
