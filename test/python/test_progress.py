"""Progress of compiles (docs/python.md): stages on stderr for compiles that
run long (or all, or none), every record through Python logging when the
``lamina`` logger's INFO records are handled."""

import logging

import pytest
import torch
from torch import nn

import lamina
from lamina.runtime import progress


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))


def build(**options):
    return lamina.build(lamina.create_schedule(model()), **options)


X = torch.randn(3, 8)


def test_progress_true_reports_every_stage(capsys):
    compiled = build(progress=True)
    with torch.no_grad():
        compiled(X)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("lamina: Sequential(3x8 float32), train mode: ")
    assert any("compiling @forward (lamina-cpu-pipeline)" in line
               for line in lines)
    assert "compiled in" in lines[-1]
    # A call that compiles nothing reports nothing.
    with torch.no_grad():
        compiled(X)
    assert capsys.readouterr().err == ""
    # Training compiles the forward / backward pair.
    compiled(X.requires_grad_()).sum().backward()
    err = capsys.readouterr().err
    assert "differentiating (lamina-generate-backward)" in err
    assert "compiling @forward_backward" in err


def test_short_compiles_print_nothing_by_default(capsys, monkeypatch):
    monkeypatch.setattr(progress, "THRESHOLD", 1e9)
    build()(X)
    assert capsys.readouterr().err == ""


def test_long_compiles_report_while_they_run(capsys, monkeypatch):
    # A compile past the threshold shows, and a stage running repeats its
    # line every heartbeat.
    monkeypatch.setattr(progress, "THRESHOLD", 0.0)
    monkeypatch.setattr(progress, "HEARTBEAT", 0.001)
    with torch.no_grad():
        build()(X)
    err = capsys.readouterr().err
    assert "still compiling @forward" in err
    assert " s so far" in err and "compiled in" in err


@pytest.mark.parametrize("silence", ["option", "environment"])
def test_progress_can_be_silenced(capsys, monkeypatch, silence):
    monkeypatch.setattr(progress, "THRESHOLD", 0.0)
    if silence == "option":
        build(progress=False)(X)
    else:
        monkeypatch.setenv("LAMINA_PROGRESS", "0")
        build()(X)
    assert capsys.readouterr().err == ""


def test_logging_takes_every_record_when_asked(capsys, caplog):
    with caplog.at_level(logging.INFO, logger="lamina"):
        build(progress=False)(X)
    messages = [r.getMessage() for r in caplog.records if r.name == "lamina"]
    assert any("tracing the model" in m for m in messages)
    assert any("compiled in" in m for m in messages)
    assert "lamina:" not in capsys.readouterr().err
