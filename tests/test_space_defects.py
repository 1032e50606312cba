"""Regression tests of Space defects: the withdraw endpoint's early answers, canonical scores,
quota charged only for a stored submission, the Review tab's controls for non-reviewers, and
the app coming up on a saturated machine."""

from __future__ import annotations

from dataclasses import replace

import pytest
from gradio_client import Client

from space.config import SpaceConfig
from tests.space_support import free_port, predictions, running_app

FORM = {"model_name": "judge A", "organisation": "lab", "model_type": "embedding", "access": "open",
        "link": "https://example.org/a", "model_date": "2025-06-01"}


# ------------------------------------------------------------------ 1. /withdraw's early answers


def test_withdraw_endpoint_explains_a_malformed_or_unknown_id_and_an_unticked_box(dataset, gold, tmp_path):
    """Each early answer fills every output of the event (status and the five of the page), so
    the client gets the message instead of a generic error."""
    config = replace(SpaceConfig.from_env({}, dataset=str(dataset), data_dir=tmp_path / "data"), port=free_port())
    with running_app(config, n_bootstrap=20) as (app, url):
        record = app.submitter.submit(predictions(gold, 3), "main", FORM, address="127.0.0.1").record
        client = Client(url, verbose=False, download_files=False, analytics_enabled=False)

        status, *page = client.predict("../x", "", True, api_name="/withdraw")
        assert "not an id" in status and len(page) == 5, status
        status, *page = client.predict("main-0123456789abcdef", "", True, api_name="/withdraw")
        assert "there is no submission with the id" in status and len(page) == 5, status
        status, *page = client.predict(record.id, "", False, api_name="/withdraw")
        assert "Tick the box to confirm" in status and len(page) == 5, status
        assert app.store.results() == [record] and app.store.get(record.id).withdrawal is None
