# The image the Helm chart (helm/kop) runs: kop's wheel and its native kernels
# (kop_native, Rust) on a slim Python 3.11, as `make` installs them.
#
#   docker build -t kop:0.1.0 .        # from the repository root
#   docker run --rm kop:0.1.0 --version
#
# The wheel is built as tests/deploy/test_image.py builds and installs it in
# `make test`; the dependencies are the versions make test ran with (constraints.txt).
# kop_native is built with the Rust release make test builds it with (and the crate's
# Cargo.lock): without it the `pulsar` entry format runs its per-record loops in Python,
# 28-97x slower per record (python -m bench.native_kernels).

FROM python:3.11-slim-bookworm AS wheel
WORKDIR /src
RUN pip install --no-cache-dir "build==1.*"
COPY pyproject.toml README.md LICENSE ./
COPY kop ./kop
COPY spark_jobs ./spark_jobs
RUN python -m build --wheel --outdir /dist

FROM rust:1.95.0-slim-bookworm AS native
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /maturin \
 && /maturin/bin/pip install --no-cache-dir "maturin>=1.9.4,<2"
WORKDIR /native
COPY native ./
RUN /maturin/bin/maturin build --release --locked --out /dist

FROM python:3.11-slim-bookworm
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN groupadd --system --gid 10001 kop \
 && useradd --system --uid 10001 --gid kop --no-create-home --home-dir /nonexistent kop
COPY constraints.txt /tmp/constraints.txt
COPY --from=wheel /dist/ /tmp/dist/
COPY --from=native /dist/ /tmp/dist/
RUN pip install --no-cache-dir -c /tmp/constraints.txt /tmp/dist/*.whl \
 && python -c "import kop_native" \
 && rm -rf /tmp/dist /tmp/constraints.txt
USER 10001:10001
# Kafka, admin HTTP (/healthz, /readyz, /metrics)
EXPOSE 9092 9094 8081
ENTRYPOINT ["kop"]
CMD ["serve", "--config", "/etc/kop/kop.toml"]
