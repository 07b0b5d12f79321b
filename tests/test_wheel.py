"""The wheel users install: built as CI would (manylinux2014, abi3), installed
without a Rust toolchain into a fresh virtualenv, and run there with what it
brings (the report's libraries included: they are dependencies)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from build_env import UNOPTIMISED_ENGINE

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    p = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, env=env, check=False)
    assert p.returncode == 0, f"{args}: {p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    return p.stdout + p.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("maturin")
    pytest.importorskip("ziglang")
    out = tmp_path_factory.mktemp("dist")
    # The release configuration (`make wheel`): glibc 2.17 symbols only, linked by zig; the
    # engine unoptimised (32 s alone on two cores; the optimised one took 84 s in the suite).
    env = {**os.environ, **UNOPTIMISED_ENGINE}
    _run(
        [
            sys.executable,
            "-m",
            "maturin",
            "build",
            "--release",
            "--zig",
            "--compatibility",
            "manylinux2014",
            "--out",
            str(out),
        ],
        ROOT,
        env,
    )
    (whl,) = out.glob("*.whl")
    return whl


def test_the_wheel_is_abi3_manylinux_with_its_license_and_data(wheel: Path) -> None:
    assert "-cp311-abi3-" in wheel.name and "manylinux2014_x86_64" in wheel.name, wheel.name
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith("LICENSE") for n in names), names
    for data in (
        "cellsim/templates/report.html.j2",
        "cellsim/cellsim.mplstyle",
        "cellsim/py.typed",
        "cellsim/data/published.toml",
        "cellsim/data/grids/memory.toml",  # the hypothesis grids (cellsim validate --grid NAME)
        # C programs: the SDK headers and the C runtime `cellsim cc` compiles in
        "cellsim/include/spu_mfcio.h",
        "cellsim/include/libspe2.h",
        "cellsim/c/runtime.c",
    ):
        assert data in names, data
    assert "Requires-Python: >=3.11" in meta
    # the main job's libraries come with every install, not with an extra
    for dep in ("matplotlib", "jinja2"):
        assert any(
            line.startswith(f"Requires-Dist: {dep}") and "extra ==" not in line for line in meta.splitlines()
        ), dep
    assert "Classifier: License :: OSI Approved :: MIT License" in meta


def test_the_wheel_installs_and_runs_in_a_fresh_virtualenv(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    py, cellsim = venv / "bin" / "python", venv / "bin" / "cellsim"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    _run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)], tmp_path, env)
    where = _run([str(py), "-c", "import cellsim; print(cellsim.__file__)"], tmp_path, env)
    assert str(venv) in where, "the installed package, not the source tree"
    # a machine, the SDK, an experiment's tables and its figure
    script = tmp_path / "double_buffer.py"
    script.write_text((ROOT / "examples" / "double_buffer.py").read_text())
    assert _run([str(py), str(script)], tmp_path, env).strip() == (
        (ROOT / "examples" / "double_buffer.out").read_text().strip()
    )
    out = _run(
        [str(cellsim), "run", "dma-latency", "--sizes", "128", "--op", "get", "--target", "ls"], tmp_path, env
    )
    assert "published (Kistler et al. 2006) vs simulated" in out
    _run([str(cellsim), "run", "dma-latency", "--sizes", "128", "--plot", "x.png"], tmp_path, env)
    assert (tmp_path / "x.png").stat().st_size > 0
