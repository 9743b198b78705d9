"""With no model configured, `pdesharp solve` says it uses the built-in analyst and how to
configure an LLM; a PDE outside the analyst's class then gets a clear message, not a traceback."""

import yaml

from pdesharp.cli import main
from pdesharp.task import load_task


def test_no_model_notice_then_unsupported_message(tmp_path, monkeypatch, capsys, shared_data):
    monkeypatch.delenv("PDESHARP_MODEL", raising=False)
    spec = yaml.safe_load(load_task("advection").to_yaml())
    spec["name"] = "kdv_like"
    # a nonlinear third derivative nothing implicit holds, outside the analyst's class (a
    # Sobolev-type dt(u - dx(u, 2)), the form this test used before, is now supported)
    spec["equation"]["equations"] = ["dt(u) + beta*u*dx(u, 3)"]
    path = tmp_path / "kdv.yaml"
    path.write_text(yaml.safe_dump(spec))
    try:  # dev data given, so the run gets as far as the equation
        code = main(["solve", str(path), "--out", str(tmp_path / "runs"), "--quiet",
                     "--dev-data", str(shared_data / "advection_dev.hdf5")])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert "no model configured" in err and "--model openai:gpt-4o" in err
    assert code not in (0, None)
    assert "Traceback" not in err
    error = err.split("pdesharp: error:", 1)[1]
    assert "dev data" not in error  # stopped by the equation, not by missing data
    assert "the term -beta*u*dx(u, 3) in dt(u)" in error  # names the term it cannot handle
    assert "--model" in error  # and suggests a language model
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
