# syntax=docker/dockerfile:1
# Caldera: build the locked environment with uv, ship only the virtualenv, run as non-root.

FROM python:3.11-slim AS build
RUN pip install --no-cache-dir uv==0.13.9
ENV UV_COMPILE_BYTECODE=1 UV_LINK_MODE=copy UV_PYTHON_DOWNLOADS=never
WORKDIR /src
# Dependencies first, so code changes do not invalidate this layer.
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --frozen --no-dev --no-install-project
COPY app ./app
COPY plugins ./plugins
COPY schemas ./schemas
RUN uv sync --frozen --no-dev --no-editable

FROM python:3.11-slim
RUN useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin caldera
COPY --from=build /src/.venv /src/.venv
# PYTHONDONTWRITEBYTECODE: the root filesystem is read-only at run time (compose, Kubernetes);
# the build stage compiled the bytecode already (UV_COMPILE_BYTECODE).
ENV PATH=/src/.venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    CALDERA_LOG_FORMAT=json
USER 10001
# The verbs on 127.0.0.1:8090 (as the sidecar runs them: only the pod reaches them; 8080 is
# vc-scheduler's); /healthz, /readyz and /metrics alone on 0.0.0.0:8091 (README, "Security").
EXPOSE 8091
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('CALDERA_HEALTH_PORT', '8091'), timeout=2)"]
ENTRYPOINT ["caldera"]
CMD ["serve", "--host", "127.0.0.1", "--port", "8090", "--health-host", "0.0.0.0", "--health-port", "8091"]
