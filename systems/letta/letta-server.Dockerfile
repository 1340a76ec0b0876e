# The Letta server (`letta server`) at a pinned version, built from the base image where no registry is
# reachable (memmatrix/letta-server:<version>); where one is, compose.yaml runs the official letta/letta
# image instead. Same interface as the official image under compose.yaml's command: `alembic upgrade head`
# in the working directory (alembic.ini + alembic/ from the letta sdist, fetched and hash-checked by
# server.py), then `letta server`.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
ARG SYSTEM_VERSION=0.16.8
RUN python3 -m venv /opt/venv
COPY systems/letta/locks/${SYSTEM_VERSION}.txt /opt/lock.txt
RUN /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check --no-input --require-hashes --no-deps -r /opt/lock.txt
COPY src/memmatrix/adapterkit.py systems/letta/server.py systems/letta/postgres.py /opt/build/
RUN cd /opt/build && /opt/venv/bin/python -c "import sys; from server import migrations; print(migrations(sys.argv[1]))" ${SYSTEM_VERSION} \
    && ln -s /opt/venv/share/memmatrix-letta-${SYSTEM_VERSION} /app
WORKDIR /app
ENV PATH=/opt/venv/bin:$PATH PYTHONDONTWRITEBYTECODE=1
EXPOSE 8283
CMD ["sh", "-c", "alembic upgrade head && exec letta server --host 0.0.0.0 --port 8283"]
