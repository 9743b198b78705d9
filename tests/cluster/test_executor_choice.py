"""Choosing the executor, without a Ray instance: clear errors, and what a remote job may name."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pdesharp.cli import main
from pdesharp.evaluate.executors import ExecutorUnavailable, in_bound_tree, make_executor


def test_ray_missing_gives_the_install_command(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if not installed
    with pytest.raises(ExecutorUnavailable, match=r"pip install 'pdesharp\[ray\]'"):
        make_executor("ray")
    solver = tmp_path / "s.py"
    solver.write_text("def solver(u0, t, beta):\n    return u0\n")
    with pytest.raises(SystemExit) as exit_:
        main(["eval", str(solver), "--task", "advection", "--data-dir", str(tmp_path),
              "--executor", "ray"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "pdesharp[ray]" in err and "Traceback" not in err


def test_a_ray_address_needs_the_ray_executor():
    with pytest.raises(ExecutorUnavailable, match="needs --executor ray"):
        make_executor("local", address="auto")
    with pytest.raises(ExecutorUnavailable, match="unknown executor 'slurm'"):
        make_executor("slurm")


def test_only_paths_inside_bound_folders_would_be_named_to_a_worker(tmp_path):
    """A remote job names a path only to mask it inside the sandbox, which is needed only where
    the path sits in a folder the sandbox binds (the Python runtime, /usr)."""
    assert in_bound_tree(Path(sys.prefix) / "data" / "burgers_test.hdf5")
    assert in_bound_tree("/usr/share/pdebench/burgers_test.hdf5")
    assert not in_bound_tree(tmp_path / "burgers_test.hdf5")


def test_each_evaluation_asks_ray_for_its_threads_and_gpu():
    from pdesharp.evaluate.ray_executor import resources

    assert resources("cpu", 1) == {"num_cpus": 1, "num_gpus": 0}
    assert resources("cpu", 4) == {"num_cpus": 4, "num_gpus": 0}
    assert resources("cuda", 2) == {"num_cpus": 2, "num_gpus": 1}
