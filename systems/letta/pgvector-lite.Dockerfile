# Postgres 16 + pgvector from the pgserver wheel (the same hashed lock as Letta's environment), built from the
# base image where no registry is reachable (memmatrix/pgvector-lite:16); where one is, compose.yaml runs the
# official pgvector/pgvector:pg16. pgvector-lite.sh gives it the official image's interface: POSTGRES_USER,
# POSTGRES_PASSWORD, POSTGRES_DB, PGDATA, /docker-entrypoint-initdb.d/*.sql on first start, the server run by
# the unprivileged user postgres, pg_isready on PATH.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
ARG SYSTEM_VERSION=0.16.8
RUN python3 -m venv /opt/venv
COPY systems/letta/locks/${SYSTEM_VERSION}.txt /opt/lock.txt
RUN /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check --no-input --require-hashes --no-deps -r /opt/lock.txt
RUN useradd --system --home-dir /var/lib/postgresql --create-home postgres \
    && ln -s "$(/opt/venv/bin/python -c 'import pgserver, os; print(os.path.dirname(pgserver.__file__))')/pginstall" /opt/pg \
    && mkdir -p /docker-entrypoint-initdb.d /var/run/postgresql && chown postgres:postgres /var/run/postgresql
COPY systems/letta/pgvector-lite.sh /usr/local/bin/pgvector-lite.sh
ENV PATH=/opt/pg/bin:$PATH PGDATA=/var/lib/postgresql/data LC_ALL=C LANG=C
EXPOSE 5432
ENTRYPOINT ["sh", "/usr/local/bin/pgvector-lite.sh"]
