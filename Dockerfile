# syntax=docker/dockerfile:1
# Caldera: build the locked environment with uv, ship only the virtualenv, run as non-root.
#
# BASE is any Debian-like image with Python 3.11+ and its venv module: python:3.11-slim by
# default; tests/image/run.sh builds on a Debian bookworm base bootstrapped from Debian's
# packages (mmdebstrap) where no registry is reachable. A PEM file named extra-ca.pem in the
# build context is trusted while the build downloads packages (a proxy's CA); it stays in the
# build stage.
ARG BASE=python:3.11-slim

FROM ${BASE} AS build
# uv from PyPI in a venv of its own: python:3.11-slim has pip, a bare Debian base only venv.
COPY pyproject.toml uv.lock README.md extra-ca.pe[m] /src/
RUN python3 -m venv /opt/uv \
    && if [ -f /src/extra-ca.pem ]; then export PIP_CERT=/src/extra-ca.pem; fi \
    && /opt/uv/bin/pip install --no-cache-dir --disable-pip-version-check uv==0.13.9
ENV PATH=/opt/uv/bin:$PATH UV_COMPILE_BYTECODE=1 UV_LINK_MODE=copy UV_PYTHON_DOWNLOADS=never
WORKDIR /src
# Dependencies first, so code changes do not invalidate this layer.
RUN if [ -f extra-ca.pem ]; then export SSL_CERT_FILE=/src/extra-ca.pem; fi \
    && uv sync --frozen --no-dev --no-install-project
COPY app ./app
COPY plugins ./plugins
COPY schemas ./schemas
RUN if [ -f extra-ca.pem ]; then export SSL_CERT_FILE=/src/extra-ca.pem; fi \
    && uv sync --frozen --no-dev --no-editable

FROM ${BASE}
# The source commit, for caldera_build_info's commit label (app/metrics.py, commit()):
# docker build --build-arg COMMIT=$(git rev-parse HEAD) .
ARG COMMIT=unknown
RUN useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin caldera
COPY --from=build /src/.venv /src/.venv
# PYTHONDONTWRITEBYTECODE: the root filesystem is read-only at run time (compose, Kubernetes);
# the build stage compiled the bytecode already (UV_COMPILE_BYTECODE).
ENV PATH=/src/.venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    CALDERA_LOG_FORMAT=json \
    CALDERA_BUILD_COMMIT=${COMMIT}
USER 10001
# The verbs on 127.0.0.1:8090 (as the sidecar runs them: only the pod reaches them; 8080 is
# vc-scheduler's); /healthz, /readyz and /metrics alone on 0.0.0.0:8091 (README, "Security").
EXPOSE 8091
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('CALDERA_HEALTH_PORT', '8091'), timeout=2)"]
ENTRYPOINT ["caldera"]
CMD ["serve", "--host", "127.0.0.1", "--port", "8090", "--health-host", "0.0.0.0", "--health-port", "8091"]
