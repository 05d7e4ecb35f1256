"""The wheel the Dockerfile installs, built the way it builds it, so packaging cannot rot.

The Dockerfile copies pyproject.toml, kop/ and spark_jobs/ and runs `python -m build
--wheel`; this test does the same in a scratch directory, checks the wheel, installs
it (and nothing else) into a fresh virtualenv and runs its `kop` command. Its
dependencies come from the test's own environment, added to the fresh one's path:
the wheel's code is what runs, and fetching its dependencies again would only test
PyPI.
"""

from __future__ import annotations

import email
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
PIP = (sys.executable, "-m", "pip")  # this environment's pip installs into the fresh one


def _stage(name: str) -> str:
    """The Dockerfile's stage `name` (from its FROM line to the next)."""
    text = DOCKERFILE.read_text()
    start = re.search(rf"^FROM .* AS {name}$", text, re.MULTILINE)
    assert start is not None, f"no stage {name}"
    end = text.find("\nFROM ", start.end())
    return text[start.start() : end if end >= 0 else len(text)]


def _copied_sources(stage: str = "wheel") -> list[str]:
    """What a stage copies from the build context, so the test builds from the same."""
    sources: list[str] = []
    for line in re.findall(r"^COPY (?!--)(.+)$", _stage(stage), re.MULTILINE):
        sources += line.split()[:-1]
    return sources


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in _copied_sources():
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, src / name)
    out = tmp_path_factory.mktemp("dist")
    run = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(src)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (built,) = out.glob("*.whl")
    return built


def test_dockerfile_builds_and_runs_the_wheel() -> None:
    text = DOCKERFILE.read_text()
    assert _copied_sources() == ["pyproject.toml", "README.md", "LICENSE", "kop", "spark_jobs"]
    assert "FROM python:3.11-slim" in text
    assert "python -m build --wheel" in text
    assert 'ENTRYPOINT ["kop"]' in text
    assert "USER 10001" in text  # the chart's runAsUser


def test_the_image_is_the_fast_kop_with_the_tested_dependencies() -> None:
    """kop_native is built (the crate's lock, a Rust at least the crate's minimum) and
    must import in the final image; the wheel installs with the versions make test
    ran (constraints.txt), and the build context holds all of it but build output."""
    native = _stage("native")
    assert _copied_sources("native") == ["native"]
    assert "maturin build --release --locked" in native
    rust = re.search(r"^FROM rust:(\d+)\.(\d+)\.\d+-slim", native, re.MULTILINE)
    assert rust is not None
    cargo = tomllib.loads((REPO / "native" / "Cargo.toml").read_text())["package"]
    minimum = tuple(int(x) for x in cargo["rust-version"].split("."))
    assert (int(rust.group(1)), int(rust.group(2))) >= minimum
    final = DOCKERFILE.read_text().rsplit("\nFROM ", 1)[1]
    assert "COPY --from=native /dist/" in final
    assert "pip install --no-cache-dir -c /tmp/constraints.txt" in final
    assert 'python -c "import kop_native"' in final  # a build without it fails
    ignored = (REPO / ".dockerignore").read_text().splitlines()
    for source in [*_copied_sources(), "native", "constraints.txt"]:
        assert f"!{source}" in ignored
    assert "native/target" in ignored


def test_constraints_pin_every_runtime_dependency_within_its_range() -> None:
    """pyproject.toml gives ranges (a user takes a fix without a kop release);
    constraints.txt pins what make test ran, inside them."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pins = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            req = Requirement(line)
            pins[_canonical(req.name)] = next(iter(req.specifier)).version
    for dep in map(Requirement, project["dependencies"]):
        assert str(dep.specifier) and "==" not in str(dep.specifier), dep  # a range
        pinned = pins.get(_canonical(dep.name))
        assert pinned is not None, f"{dep.name} is not pinned in constraints.txt"
        assert dep.specifier.contains(pinned), (dep, pinned)


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_wheel_holds_kop_and_its_command(wheel: Path) -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        info = f"kop_gateway-{project['version']}.dist-info"
        entry_points = zf.read(f"{info}/entry_points.txt").decode()
        metadata = email.message_from_bytes(zf.read(f"{info}/METADATA"))
    for module in (
        "kop/__init__.py",
        "kop/cli/main.py",
        "kop/config/settings.py",
        "kop/wiring/app.py",
    ):
        assert module in names
    assert "kop/pulsar/wire/proto/PulsarApi_pb2.py" in names  # generated, checked in
    assert "kop = kop.cli.main:main" in entry_points
    required = {Requirement(r) for r in metadata.get_all("Requires-Dist") or []}
    runtime = {r for r in required if r.marker is None or "extra" not in str(r.marker)}
    assert runtime == {Requirement(r) for r in project["dependencies"]}
    assert metadata["Requires-Python"] == project["requires-python"]


def test_wheel_installs_and_kop_runs(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [*PIP, "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # the dependencies, from this environment (a plain path entry: no .pth of it runs,
    # so an editable kop installed here cannot stand in for the wheel's)
    Path(site, "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KOP_", "PYTHON"))}
    help_run = subprocess.run(
        [str(venv / "bin" / "kop"), "--help"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert help_run.returncode == 0, help_run.stderr
    assert "serve" in help_run.stdout
    where = subprocess.run(
        [str(python), "-c", "import kop.cli.main; print(kop.cli.main.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,  # not the repository, whose kop/ would shadow the wheel's
        check=True,
    ).stdout.strip()
    assert where.startswith(site), where
    check = subprocess.run(
        [*PIP, "--python", str(python), "check"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert "kop-gateway 0.1.0 requires" not in check.stdout, check.stdout
