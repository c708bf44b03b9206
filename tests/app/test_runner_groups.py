"""One baseline per GPU model, end to end against the fake GitHub: a labelled PR of a target with
two runner groups is dispatched once per group, in parallel, on each group's labels; one check run
and one sticky comment (a table per model) follow both runs, and the check fails if either fails."""

from __future__ import annotations

from testkit import payloads as P
from testkit.results_doc import bench, results_doc

from .flow import complete, deliver, sticky, upload

HEAD, BASE = "1" * 40, "2" * 40
CONFIG = ('[runners.h100]\nlabels = ["self-hosted", "h100"]\n'
          '[runners.mi300x]\nlabels = ["self-hosted", "mi300x"]\n')


def test_a_labelled_pr_is_measured_on_each_gpu_model_with_one_check_and_one_comment(app, client, fake_github, scene):
    gh = fake_github
    scene.files[(P.REPO, "perfgate.toml")] = CONFIG
    gh.state.add_pull(P.REPO, 7, head_sha=HEAD, base_sha=BASE, labels=["performance"])
    gh.state.set_permission(P.REPO, "maintainer", "maintain")

    deliver(client, P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, labels=("performance",)))
    h100, mi300x = gh.state.dispatches
    assert (h100["inputs"]["runner"], mi300x["inputs"]["runner"]) == ("h100", "mi300x")
    assert h100["inputs"]["runs-on"] == '["self-hosted", "h100"]' and h100["inputs"]["run-id"] != mi300x["inputs"]["run-id"]
    assert h100["inputs"]["head-sha"] == mi300x["inputs"]["head-sha"] == HEAD
    (check,) = gh.state.check_runs.values()  # one check run for both
    assert check["external_id"] == h100["inputs"]["run-id"]

    # the first model reports: the check stays in progress, the comment shows it and waits for the other
    upload(scene, h100, results_doc([bench("bench_norm", "unchanged", 1.0)], base_sha=BASE, head_sha=HEAD))
    complete(gh, client, h100)
    assert gh.state.check_runs[check["id"]]["status"] == "in_progress"
    body = sticky(gh).body
    assert "### `h100`" in body and "### `mi300x`" in body and "bench_norm" in body and "⏳" in body

    # the second reports a regression: one comment with a table per model, the check fails
    upload(scene, mi300x, results_doc([bench("bench_norm", "regression", 1.2)], base_sha=BASE, head_sha=HEAD))
    complete(gh, client, mi300x)
    done = gh.state.check_runs[check["id"]]
    assert done["status"] == "completed" and done["conclusion"] == "failure"
    assert done["output"]["title"].startswith("h100: ") and "mi300x: 1 regression" in done["output"]["title"]
    body = sticky(gh).body
    assert body.count("| benchmark |") == 2 and body.index("`h100`") < body.index("`mi300x`") and "⏳" not in body
    assert len(gh.state.check_runs) == 1
