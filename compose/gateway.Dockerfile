# The memmatrix model gateway as a service. BASE_IMAGE is any image with python3 and venv:
# the official python slim image by default, a locally built one where no registry is reachable
# (scripts/offline-docker.sh).
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
RUN python3 -m venv /opt/venv
COPY pyproject.toml README.md /opt/memmatrix/
COPY src /opt/memmatrix/src
COPY schemas /opt/memmatrix/schemas
RUN /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check --no-input /opt/memmatrix
ENV PATH=/opt/venv/bin:$PATH MEMMATRIX_HOME=/opt/memmatrix PYTHONDONTWRITEBYTECODE=1
EXPOSE 8790
CMD ["memmatrix", "model", "serve", "--host", "0.0.0.0", "--port", "8790"]
