# perfgate's GitHub App: the web process (webhook intake, pages, dashboard) by default,
# the job consumer with `docker run IMAGE perfgate worker`. No torch: the App only stores and
# renders results; benchmarks run on the target's own GPU runners.
#
#   docker build -t perfgate-app .
#   docker run -p 127.0.0.1:8000:8000 -v perfgate:/data -e GITHUB_WEBHOOK_SECRET -e PERFGATE_PUBLIC_URL perfgate-app
#   docker run -v perfgate:/data -e GITHUB_APP_ID -e GITHUB_PRIVATE_KEY -e PERFGATE_PUBLIC_URL perfgate-app perfgate worker
#
# The web process gets the webhook secret and never the App's private key (it only checks and
# queues deliveries); the worker gets the App's id and key and does the GitHub work.
# With the default SQLite database and queue, web and worker share the /data volume; with
# DATABASE_URL=postgresql://... and REDIS_URL=rediss://:PASSWORD@... they can run on different machines:
# docker-compose.yml (one machine) and deploy/kubernetes/ (a cluster) run it that way, with
# `perfgate migrate` once before web and worker start.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PERFGATE_HOME=/data

RUN groupadd --system --gid 10001 perfgate \
    && useradd --system --uid 10001 --gid perfgate --no-log-init --home-dir /data --create-home perfgate

WORKDIR /srv/perfgate
COPY pyproject.toml README.md ./
COPY runner ./runner
COPY action ./action
COPY bot ./bot
# The bot extra (Flask, PyGithub, SQLAlchemy, Alembic, gunicorn, Huey, ruptures) plus the
# PostgreSQL and Redis clients; torch is not a dependency of either. The project itself comes
# from the build context (DL3013 asks for ==pins, which a local path cannot have; the
# dependency ranges live in pyproject.toml).
# hadolint ignore=DL3013
RUN pip install --no-cache-dir ".[bot]" "psycopg[binary]==3.3.*" "redis==5.*" \
    && python -c "import bot, runner, sys; assert 'torch' not in sys.modules"

USER 10001:10001
VOLUME ["/data"]
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"]

# Several workers: the App is stateless (everything lives in the database and the queue).
CMD ["gunicorn", "--bind", "0.0.0.0:8000", "--workers", "2", "--threads", "4", "--timeout", "30", \
     "--access-logfile", "-", "bot:create_app()"]
