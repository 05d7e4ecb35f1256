# kop: two commands matter — `make run` and `make test`. Everything else is a step of those.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)
# what serving needs (make run): kop, its runtime dependencies and the demo's clients
RUN_STAMP := $(VENV)/.serving-$(shell cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)

.PHONY: setup run serve test cluster-test unit integration lint bench soak pulsar-fetch pulsar-start pulsar-stop pulsar-status \
        kafka-fetch kafka-start kafka-stop kafka-status kcat conformance clean \
        pulsar-cluster pulsar-cluster-stop apps apps-test helm-tools helm-check cluster setup-serving prefetch

$(RUN_STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[demo]'
	@rm -f $(VENV)/.serving-*; touch $(RUN_STAMP)

$(STAMP): pyproject.toml constraints.txt | $(RUN_STAMP)
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[dev,spark]'
	@rm -f $(VENV)/.installed-*; touch $(STAMP)

## The native kernels (native/, Rust + PyO3, built by maturin through pip): rebuilt when
## their sources change; without cargo kop runs the same kernels in Python.
NATIVE_SRC   := native/Cargo.toml native/Cargo.lock native/pyproject.toml native/kop_native.pyi \
                $(wildcard native/src/*.rs)
NATIVE_STAMP := $(VENV)/.native-$(shell cat $(NATIVE_SRC) | cksum | cut -d' ' -f1)

$(NATIVE_STAMP): $(NATIVE_SRC) | $(RUN_STAMP)
	@if command -v cargo >/dev/null 2>&1; then \
	  $(BIN)/python -m pip install -q ./native && rm -f $(VENV)/.native-* && touch $@; \
	else \
	  $(BIN)/python -m pip uninstall -q -y kop-native >/dev/null 2>&1 || true; \
	  echo "kop_native not built: no cargo; running the pure-Python kernels"; \
	fi

setup: $(STAMP) $(NATIVE_STAMP)

## make run's own: kop and the README's demo clients, without the test extras (pyspark,
## pandas, mypy, ...)
setup-serving: $(RUN_STAMP) $(NATIVE_STAMP)

pulsar-fetch: setup
	$(BIN)/python tools/pulsar.py fetch

pulsar-start: setup
	$(BIN)/python tools/pulsar.py start

pulsar-stop:
	$(PYTHON) tools/pulsar.py stop

pulsar-status:
	$(PYTHON) tools/pulsar.py status

## The reference Apache Kafka broker (127.0.0.1:19092) kop is judged against; stdlib only, no venv.
## KAFKA_BROKERS=3: a cluster of its own beside it (127.0.0.1:19192, 19292, 19392), the judge
## of three kop instances (docs/kafka.md).
KAFKA_BROKERS ?= 1
kafka-fetch:
	$(PYTHON) tools/kafka.py fetch

kafka-start:
	$(PYTHON) tools/kafka.py start --brokers $(KAFKA_BROKERS)

kafka-stop:
	$(PYTHON) tools/kafka.py stop --brokers $(KAFKA_BROKERS)

kafka-status:
	$(PYTHON) tools/kafka.py status --brokers $(KAFKA_BROKERS)

## A Pulsar cluster like production (ZooKeeper, bookie, 2 brokers, proxy; token auth + TLS):
## docs/pulsar.md. Stdlib only, no venv. Prints how to point clients and kop at it.
pulsar-cluster:
	$(PYTHON) tools/pulsar_cluster.py start --auth --tls

pulsar-cluster-stop:
	$(PYTHON) tools/pulsar_cluster.py stop

## make run: venv + kop (serving only), a local Pulsar standalone, then Kafka on
## localhost:9092 in the foreground.
run: setup-serving
	$(BIN)/python tools/pulsar.py fetch
	$(BIN)/kop standalone

## make cluster: the same with three kop instances (node ids 0, 1, 2; Kafka on 9092, 9192,
## 9292; admin HTTP on 9094, 9194, 9294) in the foreground; Ctrl-C stops all three.
cluster: setup-serving
	$(BIN)/python tools/pulsar.py fetch
	$(BIN)/kop standalone --instances 3

## make test: venv + kop, lint, the unit, simulation and gateway-over-memory tiers (no Pulsar: a
## broken build is red within minutes), then the rest of the suite runs (integration against a real Pulsar, the Helm chart, the conformance quick
## tier against a reference Kafka), then the cluster tier: kop on a two-broker cluster behind
## a proxy with token auth and TLS (tools/pulsar_cluster.py). Kafka Streams and Kafka
## Connect (marker `apps`) run in it, unmodified, against kop.
##
## What the later tiers need (Pulsar, Kafka, kcat, the apps' jars, helm, the Go clients, Spark's
## connector) is fetched and built beside the unit tier, at the lowest CPU priority, its log
## printed when both are done: on a cold machine that is about 5 min of downloads and Go
## builds, of which the unit tier's 3.5 min hide all but 2 (warm: 11 s, all hidden). Two lanes
## at once (Maven beside Go) ended no sooner: the Go builds starve beside the unit tier.
test: setup lint
	@echo "[make test] fetching and building what the later tiers need, beside the unit tier"
	@nice -n 19 $(MAKE) --no-print-directory prefetch > $(VENV)/prefetch.log 2>&1 & fetching=$$!; \
	  $(BIN)/pytest -n auto tests/unit tests/sim tests/gateway $(PYTEST_ARGS); unit=$$?; \
	  wait $$fetching; fetched=$$?; echo "[make test] fetched and built:"; cat $(VENV)/prefetch.log; \
	  if [ $$unit -ne 0 ]; then exit $$unit; fi; \
	  if [ $$fetched -ne 0 ]; then echo "[make test] fetching or building failed (above)"; exit $$fetched; fi
	$(BIN)/python tools/run_tests.py --ignore=tests/unit --ignore=tests/sim --ignore=tests/gateway --durations=20 $(PYTEST_ARGS)
	$(BIN)/python tools/run_tests.py --cluster $(CLUSTER_ARGS)

## make prefetch: everything make test fetches or builds after the unit tier; no-ops when current.
prefetch: pulsar-fetch kafka-fetch kcat apps helm-tools
	$(BIN)/python -m conformance --build-drivers
	KOP_SPARK_JAVA_OPTIONS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC" $(BIN)/kop-spark fetch-connector

## Kafka Streams and Kafka Connect 4.3.1 (tests/integration/streams_connect): jars from Maven
## Central (cached), the Streams app compiled; a no-op when current. Stdlib only, no venv.
apps:
	$(PYTHON) tools/apps.py build

## make apps-test: those two applications, unmodified, against kop; APPS_TARGET=kafka runs the
## same tests against the reference Kafka (tools/kafka.py), APPS_TARGET=host:port against any.
APPS_TARGET ?= kop
apps-test: setup pulsar-fetch kafka-fetch apps
	KOP_APPS_TARGET=$(APPS_TARGET) $(BIN)/python tools/run_tests.py tests/integration/streams_connect $(PYTEST_ARGS)

## helm, kubeconform and Kubernetes v1.37.2's JSON schemas for the chart's checks
## (tools/helm.py): built from the Go module proxy, pinned, cached; a no-op when current
## (the first time about 200 s of CPU: 1.5-3.5 min). Stdlib only, no venv.
helm-tools:
	$(PYTHON) tools/helm.py build

## make helm-check: the chart alone (helm/kop): helm lint, helm template with the default values
## and every helm/kop/ci/*.yaml, kubeconform -strict on all of it, and what the pods rely on.
## `make test` runs the same module (tests/deploy), with the Docker image's wheel build.
helm-check: setup helm-tools
	$(BIN)/pytest tests/deploy/test_helm_chart.py tests/deploy/test_chart_monitoring.py tests/deploy/test_chart_extras.py $(PYTEST_ARGS)

## make cluster-test: only the cluster tier.
cluster-test: setup kafka-fetch
	$(BIN)/python tools/run_tests.py --cluster $(CLUSTER_ARGS)

unit: setup
	$(BIN)/pytest -n auto tests/unit tests/sim tests/gateway $(PYTEST_ARGS)

## make soak: the partition-log simulation with fresh seeds (SOAK_ARGS="--minutes 60"), then
## 10^6 mutated request frames against a kop of its own on a local Pulsar (FUZZ_SOAK_ARGS).
FUZZ_SOAK_ARGS ?= --frames 1000000
soak: pulsar-fetch
	$(BIN)/python tools/soak.py $(SOAK_ARGS)
	$(BIN)/python tools/run_tests.py --fuzz soak $(FUZZ_SOAK_ARGS)

lint: setup
	$(BIN)/ruff check kop spark_jobs tests bench tools conformance fuzz
	$(BIN)/mypy kop spark_jobs fuzz
	$(BIN)/lint-imports

bench: pulsar-fetch
	$(BIN)/python tools/run_tests.py --bench $(BENCH_ARGS)

## kcat (librdkafka's CLI, Debian package) for the conformance suite's kcat driver; apt-get only when missing.
kcat:
	bash tools/install_kcat.sh

## make conformance: the whole matrix (every scenario x client) against kop and a reference Kafka;
## writes docs/compatibility.md. CONFORMANCE_ARGS="--instances 3": three kop instances against a
## three-broker Kafka, written to docs/compatibility-3-instances.md. make test runs the quick tier
## (without kafkajs), and on three instances the part of it several instances change.
conformance: pulsar-fetch kafka-fetch kcat
	$(BIN)/python -m conformance $(CONFORMANCE_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
