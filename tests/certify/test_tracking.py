"""The certificate's MLflow run, in a real sqlite store."""

from __future__ import annotations

from mcpworld.certify.certificate import write_csv
from mcpworld.certify.tracking import log_certificate
from mcpworld.certify.verdict import ModeOutcome, judge
from mcpworld.config.schema import TrackingConfig


def test_the_certificate_is_one_run_with_its_counts_and_table(tmp_path):
    certs = [
        judge("a", "app", "generic", ModeOutcome(2, 2, [1.0, 2.0]), ModeOutcome(0, 2), ModeOutcome(0, 2)),
        judge("b", "app", "generic", ModeOutcome(2, 2, [1.0, 2.0]), ModeOutcome(2, 2), ModeOutcome(0, 2)),
    ]
    csv_path, md_path = tmp_path / "certificate.csv", tmp_path / "certificate.md"
    write_csv(certs, csv_path)
    md_path.write_text("table\n")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    tracking = TrackingConfig(uri=uri, artifact_root=str(tmp_path / "artifacts"), experiment="certs")
    run_id = log_certificate(tracking, certs, {"n": "2", "overrides": "app=xterm"}, 1, [csv_path, md_path])
    assert run_id

    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.tags["mcpworld.level"] == "certificate"
    assert run.data.metrics["certified"] == 1 and run.data.metrics["lenient"] == 1
    assert run.data.metrics["tasks"] == 2 and run.data.metrics["regressions"] == 1 and run.data.metrics["episodes"] == 12
    assert run.data.params["n"] == "2"
    assert {a.path for a in client.list_artifacts(run_id)} == {"certificate.csv", "certificate.md"}
    assert log_certificate(TrackingConfig(backend="none"), certs, {}, 0, []) is None


def test_a_store_that_fails_costs_a_warning_not_the_certificate(tmp_path, capsys):
    tracking = TrackingConfig(uri=f"sqlite:///{tmp_path}/no/such/dir/mlflow.db", experiment="x")
    (tmp_path / "no").write_text("a file, not a folder")
    assert log_certificate(tracking, [], {}, 0, []) is None
    assert "warning: the certificate was not logged to MLflow" in capsys.readouterr().err
