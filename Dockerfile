# The image the Helm chart (helm/kop) runs: kop's wheel on a slim Python 3.11.
#
#   docker build -t kop:0.1.0 .        # from the repository root
#   docker run --rm kop:0.1.0 --help
#
# The wheel is built as tests/unit/test_packaging.py builds and installs it in
# `make test`. kop_native (native/, Rust) is not built here: kop runs its per-record
# loops in Python then, and says so once at start.

FROM python:3.11-slim AS wheel
WORKDIR /src
RUN pip install --no-cache-dir "build==1.*"
COPY pyproject.toml ./
COPY kop ./kop
COPY spark_jobs ./spark_jobs
RUN python -m build --wheel --outdir /dist

FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN groupadd --system --gid 10001 kop \
 && useradd --system --uid 10001 --gid kop --no-create-home --home-dir /nonexistent kop
COPY --from=wheel /dist/ /tmp/dist/
RUN pip install --no-cache-dir /tmp/dist/*.whl && rm -rf /tmp/dist
USER 10001:10001
# Kafka, admin HTTP (/healthz, /readyz, /metrics)
EXPOSE 9092 9094
ENTRYPOINT ["kop"]
CMD ["serve", "--config", "/etc/kop/kop.toml"]
