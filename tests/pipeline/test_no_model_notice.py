"""With no model configured, `pdesharp solve` says it uses the built-in analyst and how to
configure an LLM; a PDE outside the analyst's class then gets a clear message, not a traceback."""

import yaml

from pdesharp.cli import main
from pdesharp.task import load_task


def test_no_model_notice_then_unsupported_message(tmp_path, monkeypatch, capsys, shared_data):
    monkeypatch.delenv("PDESHARP_MODEL", raising=False)
    spec = yaml.safe_load(load_task("advection").to_yaml())
    spec["name"] = "bbm_like"
    # a Sobolev-type term u_xxt: a mixed time-space derivative, outside the analyst's class
    spec["equation"]["equations"] = ["dt(u) - dx(dt(u), 2) + beta*dx(u)"]
    path = tmp_path / "bbm.yaml"
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
    assert "mixed time-space derivative dx(dt(u), 2)" in error  # names the term it cannot handle
    assert "--model" in error  # and suggests a language model
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
