"""Event payloads shaped like GitHub's (the fields the action reads, in their real places)."""

from __future__ import annotations


def pull_request_labeled(*, number: int, base_sha: str, head_sha: str, repo: str = "octo/demo",
                         head_repo: str | None = None, label: str = "performance",
                         title: str = "Fuse the sum loop", body: str = "Makes work() faster.") -> dict:
    head_repo = head_repo or repo
    return {
        "action": "labeled",
        "number": number,
        "label": {"name": label},
        "pull_request": {
            "number": number,
            "html_url": f"https://github.com/{repo}/pull/{number}",
            "title": title,
            "body": body,
            "labels": [{"name": label}],
            "base": {"ref": "main", "sha": base_sha, "repo": {"full_name": repo, "fork": False}},
            "head": {"ref": "feature", "sha": head_sha,
                     "repo": {"full_name": head_repo, "fork": head_repo != repo}},
        },
        "repository": {"full_name": repo},
    }


def workflow_dispatch(*, base_sha: str | None, head_sha: str | None, pr_number: int | None = None,
                      run_id: str | None = None, repo: str = "octo/demo") -> dict:
    inputs = {}
    if base_sha:
        inputs["base-sha"] = base_sha
    if head_sha:
        inputs["head-sha"] = head_sha
    if pr_number is not None:
        inputs["pr-number"] = str(pr_number)
    if run_id is not None:
        inputs["run-id"] = run_id
    return {"inputs": inputs, "ref": "refs/heads/main", "repository": {"full_name": repo},
            "workflow": ".github/workflows/perfgate.yml"}
