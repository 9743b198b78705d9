"""``pdesharp data generate|info|subset|download`` end to end (no real network, fake generator)."""

from __future__ import annotations

import hashlib
import sys
import types
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml

from pdesharp.cli import main
from pdesharp.data import generate as gen
from pdesharp.data.paths import resolve_split
from pdesharp.task import load_task

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake_generator(monkeypatch):
    """A tiny generator standing in for the real advection one: records how it was called."""
    calls = []
    mod = types.ModuleType("pdesharp_test_fakes.advection_gen")

    def generate(n_samples, seed, params=None, nx=16, **options):
        calls.append(dict(n_samples=n_samples, seed=seed, params=params, nx=nx, **options))
        rng = np.random.default_rng(seed)
        return {"tensor": rng.standard_normal((n_samples, 3, nx)),  # float64 on purpose
                "t-coordinate": np.array([0.0, 0.5, 1.0]),
                "x-coordinate": (np.arange(nx) + 0.5) / nx}

    mod.generate = generate
    mod.ATTRS = {"scheme": "fake exact solution", "cfl": 0.4}
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setitem(gen.GENERATORS, "advection", mod.__name__)
    return calls


def test_generate_cli_writes_float32_gzip_with_provenance(fake_generator, tmp_path, capsys):
    rc = main(["data", "generate", "advection", "--samples", "4", "--seed", "11", "--nx", "32",
               "--data-dir", str(tmp_path)])
    assert rc == 0
    out = tmp_path / "generated" / "advection_seed11_n4.hdf5"
    assert str(out) in capsys.readouterr().out
    assert fake_generator == [dict(n_samples=4, seed=11, params=None, nx=32)]
    with h5py.File(out) as h5:
        assert h5["tensor"].shape == (4, 3, 32) and h5["tensor"].dtype == np.float32
        assert h5["tensor"].compression == "gzip"
        expected = np.random.default_rng(11).standard_normal((4, 3, 32)).astype(np.float32)
        np.testing.assert_array_equal(h5["tensor"][:], expected)
        a = h5.attrs
        assert a["seed"] == 11 and a["n_samples"] == 4 and a["task"] == "advection"
        assert a["generator"] == "pdesharp_test_fakes.advection_gen"
        assert a["scheme_scheme"] == "fake exact solution" and a["scheme_cfl"] == 0.4
        assert a["pdesharp_version"] and a["created"].startswith("20")
        assert '"nx": 32' in a["options"]
        assert a["parameters"] == "generator defaults" and "0.1" in a["task_parameters"]
    assert not list(out.parent.glob("*.part"))
    # a second run refuses to clobber the file unless asked
    with pytest.raises(SystemExit) as err:
        main(["data", "generate", "advection", "--samples", "4", "--seed", "11",
              "--data-dir", str(tmp_path)])
    assert err.value.code == 2 and "--overwrite" in capsys.readouterr().err
    out2 = tmp_path / "x.hdf5"
    assert main(["data", "generate", "advection", "--samples", "2", "--seed", "1",
                 "--out", str(out2)]) == 0
    assert h5py.File(out2)["tensor"].shape == (2, 3, 16)


def test_write_generated_keeps_integers_and_is_atomic(tmp_path):
    path = gen.write_generated(tmp_path / "g.hdf5", {"a": np.ones((2, 3)), "k": np.arange(3)},
                               attrs={"params": {"nu": 0.1}})
    with h5py.File(path) as h5:
        assert h5["a"].dtype == np.float32 and h5["k"].dtype.kind == "i"
        assert h5.attrs["params"] == '{"nu": 0.1}'

    class Boom(dict):
        def items(self):
            yield "a", np.ones(2)
            raise RuntimeError("generator died half way")

    with pytest.raises(RuntimeError):
        gen.write_generated(tmp_path / "h.hdf5", Boom())
    assert not (tmp_path / "h.hdf5").exists() and not (tmp_path / "h.hdf5.part").exists()


def test_unavailable_generator_is_named(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(gen.GENERATORS, "burgers", "not_written_yet")
    with pytest.raises(SystemExit):
        main(["data", "generate", "burgers", "--samples", "1", "--seed", "0",
              "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert "pdesharp.data.generate.not_written_yet" in err and "not available" in err
    with pytest.raises(gen.GeneratorUnavailable, match="no data generator for task 'allen_cahn1d'"):
        gen.get_generator("allen_cahn1d")
    with pytest.raises(SystemExit):
        main(["data", "generate", "burgers", "--samples", "1", "--seed", "0", "--darcy-low", "4"])
    assert "darcy task only" in capsys.readouterr().err


def _write_1d(path: Path, nb: int, nt: int = 4, nx: int = 8, extra_t: bool = True) -> bytes:
    with h5py.File(path, "w") as h5:
        h5["tensor"] = np.arange(nb, dtype=np.float32)[:, None, None] * np.ones((1, nt, nx), np.float32)
        h5["t-coordinate"] = np.arange(nt + int(extra_t), dtype=np.float32)
        h5["x-coordinate"] = np.arange(nx, dtype=np.float32)
    return path.read_bytes()


def test_info_shows_present_and_missing(tmp_path, capsys):
    task = load_task("burgers")
    dev = tmp_path / task.data.dev.files[0]
    dev.parent.mkdir(parents=True)
    _write_1d(dev, 5)
    assert main(["data", "info", "burgers", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    dev_line = next(line for line in out.splitlines() if " dev " in line)
    assert "present" in dev_line and "[5, 4, 8]" in dev_line and "float32" in dev_line
    test_line = next(line for line in out.splitlines() if " test " in line)
    assert "missing" in test_line
    assert f"pdesharp data download burgers --split test --data-dir {tmp_path}" in out


def test_subset_cli(tmp_path, capsys):
    src = tmp_path / "1D_Advection_Sols_beta0.1.hdf5"
    _write_1d(src, 155)
    assert main(["data", "subset", "advection", "--source", str(src), "--data-dir",
                 str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert "samples 105..154 of 155" in out and "dropped the last value" in out
    task = load_task("advection")
    dev = resolve_split(task, "dev", data_dir_override=tmp_path / "d")
    assert h5py.File(dev)["tensor"][0, 0, 0] == 105


def test_download_cli_codepde_from_mirror(file_server, tmp_path, capsys):
    base, st = file_server
    task = load_task("burgers")
    bodies = {}
    for split in ("dev", "test"):
        rel = getattr(task.data.download, f"codepde_{split}")
        body = _write_1d(tmp_path / f"{split}.hdf5", 3 if split == "dev" else 6, extra_t=False)
        st.files[f"/mirror/{rel}"] = body
        bodies[split] = body
    root = tmp_path / "data"
    assert main(["data", "download", "burgers", "--base-url", base + "/mirror",
                 "--data-dir", str(root)]) == 0
    for split in ("dev", "test"):
        path = resolve_split(task, split, data_dir_override=root)
        assert path == root / getattr(task.data, split).files[0]
        assert path.read_bytes() == bodies[split]
    # a 404 exits non-zero with the manual-placement hint
    with pytest.raises(SystemExit) as err:
        main(["data", "download", "advection", "--split", "dev", "--base-url", base + "/mirror",
              "--data-dir", str(root), "--retries", "0"])
    assert err.value.code == 1
    msg = capsys.readouterr().err
    assert "HTTP 404" in msg and str(root / "codepde" / "advection") in msg


def test_download_cli_pdebench_then_subsets(file_server, tmp_path, capsys):
    base, st = file_server
    body = _write_1d(tmp_path / "full.hdf5", 160)
    spec = yaml.safe_load((REPO / "src/pdesharp/tasks/burgers.yaml").read_text())
    spec["data"]["download"]["pdebench_md5"] = hashlib.md5(body).hexdigest()
    task_file = tmp_path / "burgers_copy.yaml"
    task_file.write_text(yaml.safe_dump(spec))
    st.files["/pb/1D_Burgers_Sols_Nu0.01.hdf5"] = body
    root = tmp_path / "data"
    assert main(["data", "download", str(task_file), "--source", "pdebench",
                 "--base-url", base + "/pb", "--data-dir", str(root)]) == 0
    assert (root / "pdebench" / "1D_Burgers_Sols_Nu0.01.hdf5").read_bytes() == body
    task = load_task(task_file)
    with h5py.File(resolve_split(task, "dev", data_dir_override=root)) as h5:
        np.testing.assert_array_equal(h5["tensor"][:, 0, 0], np.arange(110, 160))
        assert len(h5["t-coordinate"]) == 4
    with h5py.File(resolve_split(task, "test", data_dir_override=root)) as h5:
        assert h5["tensor"].shape[0] == 100
    out = capsys.readouterr().out
    assert "verified: size, md5" in out
    # rerunning is a no-op: the subsets exist, so the big file is not fetched again
    n = len(st.requests)
    assert main(["data", "download", str(task_file), "--source", "pdebench",
                 "--base-url", base + "/pb", "--data-dir", str(root)]) == 0
    assert len(st.requests) == n and "already present" in capsys.readouterr().out


def test_download_cli_offline_lists_every_target(tmp_path, capsys):
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # connection refused: stands in for "no network"
    with pytest.raises(SystemExit) as err:
        main(["data", "download", "burgers", "--base-url", f"http://127.0.0.1:{port}",
              "--data-dir", str(tmp_path), "--retries", "0"])
    assert err.value.code == 1
    msg = capsys.readouterr().err
    task = load_task("burgers")
    assert "network" in msg
    for split in ("dev", "test"):  # both exact target paths, not just the one that failed
        assert str(tmp_path / getattr(task.data, split).files[0]) in msg
