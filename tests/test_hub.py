"""Publishing releases: the local git hub (versions load by tag) and the Hub API path against a fake Hub.

No test reaches the network: a guard refuses every connection that is not to 127.0.0.1, and the
RemoteHub tests talk to a small HTTP server in a thread that speaks just enough of the Hub API for
huggingface_hub's create_repo, list_repo_refs, list_repo_files, create_commit and create_tag.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
import secrets
import socket
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kernelvault.contracts import Candidate, RewardBreakdown, RunEnvironment, Task, Verdict, content_hash
from kernelvault.corpus.card import build_card
from kernelvault.corpus.schema import ATTEMPT_SCHEMA, attempt_row
from kernelvault.corpus.stats import compute_stats
from kernelvault.hub import LocalHub, PublishError, RemoteHub, hub_from_env, publish

REPO = "kv-org/kernels"


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch):
    """Any connection to a host other than 127.0.0.1 fails the test."""
    connect = socket.socket.connect

    def guarded(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in ("127.0.0.1", "::1"):
            raise AssertionError(f"connection to {address} attempted; tests stay on 127.0.0.1")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


def attempt(index: int) -> dict:
    """A correct attempt measured on a GPU, told apart from the others by its sample index."""
    source = f"class Model:  # task {index}\n    pass\n"
    task = Task(task_id=content_hash(source), name=f"task_{index}", source=source, origin="bundled")
    code = f"class ModelNew:  # {index}\n    pass\n"
    verdict = Verdict(
        task_id=task.task_id, target="triton", candidate_hash=content_hash(code), code=code, compiled=True,
        correct=True, failure_kind=None, failure_message=None, stages=(), speedup=1.0 + index,
        environment=RunEnvironment("cuda", "NVIDIA H200", "sm_90"), reward=RewardBreakdown(0.4, 1.0, 0.0, 1.4),
    )  # fmt: skip
    candidate = Candidate(task.task_id, "triton", code, f"example:{index}")
    return attempt_row("run1", task, candidate, verdict, sample_index=index)


def write_release(
    root: Path, triton_rows: list[int], sft_text: str, shards: int = 1, rl: bool = True
) -> Path:
    """A release folder: triton attempts (by sample index), sft and rl tables, and the card."""
    table = pa.Table.from_pylist([attempt(i) for i in triton_rows], schema=ATTEMPT_SCHEMA)
    (root / "triton").mkdir(parents=True)
    per_shard = -(-table.num_rows // shards)
    for n in range(shards):
        shard = table.slice(n * per_shard, per_shard)
        pq.write_table(shard, root / "triton" / f"train-{n:05d}-of-{shards:05d}.parquet")
    (root / "triton" / ".train-00099.parquet.tmp").write_bytes(b"half a shard")  # hidden: never published
    (root / "sft").mkdir()
    messages = [[{"role": "user", "content": sft_text}, {"role": "assistant", "content": "```python\n```"}]]
    pq.write_table(
        pa.table({"messages": messages, "task_id": ["t0"]}), root / "sft" / "train-00000-of-00001.parquet"
    )
    if rl:
        (root / "rl").mkdir()
        pq.write_table(
            pa.table({"prompt": [sft_text], "task_id": ["t0"]}), root / "rl" / "train-00000-of-00001.parquet"
        )
    stats = [compute_stats(table, "triton")]
    card = build_card(root, REPO, "0.0.0", stats, plots=[])
    card.save(root / "README.md")
    return root


# ---------------------------------------------------------------- LocalHub


def test_local_hub_versions_load_by_tag(tmp_path, hf_cache):
    import datasets

    hub = LocalHub(tmp_path / "hub")
    first = publish(write_release(tmp_path / "r1", [0, 1, 2], "first"), REPO, "0.1.0", hub)
    # v0.2.0 has other triton rows in two shards with other names, a new sft row, and no rl config.
    second = publish(
        write_release(tmp_path / "r2", [5, 6, 7, 8, 9], "second", shards=2, rl=False), REPO, "0.2.0", hub
    )
    assert (first.tag, first.files, second.tag, second.files) == ("v0.1.0", 4, "v0.2.0", 4)
    assert (
        first.url_or_path == second.url_or_path == str(tmp_path / "hub" / "datasets" / "kv-org" / "kernels")
    )
    assert hub.versions(REPO) == ["v0.1.0", "v0.2.0"]

    def load(tag: str, config: str) -> datasets.Dataset:
        return datasets.load_dataset(str(hub.checkout(REPO, tag)), config, split="train")

    assert sorted(load("v0.1.0", "triton")["sample_index"]) == [0, 1, 2]
    assert sorted(load("v0.2.0", "triton")["sample_index"]) == [5, 6, 7, 8, 9]  # no stale v0.1.0 shard
    assert load("v0.1.0", "sft")["messages"][0][0]["content"] == "first"
    assert load("v0.2.0", "sft")["messages"][0][0]["content"] == "second"
    assert load("v0.1.0", "rl")["prompt"] == ["first"]
    assert not (hub.checkout(REPO, "v0.2.0") / "rl").exists()
    assert hub.checkout(REPO, "v0.1.0") == (
        tmp_path / "hub" / "revisions" / "kv-org" / "kernels" / "kv-org--kernels--v0.1.0"
    )
    assert not list(hub.checkout(REPO, "v0.1.0").rglob(".train-*"))


def test_local_hub_has_one_commit_per_version_and_refuses_a_republish(tmp_path):
    hub = LocalHub(tmp_path / "hub")
    first = publish(write_release(tmp_path / "r1", [0, 1], "first"), REPO, "0.1.0", hub)
    second = publish(write_release(tmp_path / "r2", [2, 3], "second"), REPO, "0.2.0", hub)
    repo = hub.repo_path(REPO)

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
        ).stdout

    assert git("log", "--format=%s", "main").splitlines() == ["Release v0.2.0", "Release v0.1.0"]
    assert git("rev-parse", "v0.1.0").strip() == first.commit
    assert git("rev-parse", "v0.2.0").strip() == second.commit
    with pytest.raises(PublishError, match="already has v0.1.0"):
        publish(write_release(tmp_path / "r3", [4], "third"), REPO, "0.1.0", hub)
    assert git("rev-parse", "HEAD").strip() == second.commit  # nothing was committed
    assert hub.versions(REPO) == ["v0.1.0", "v0.2.0"]


def test_checkout_is_read_only_and_made_once(tmp_path):
    hub = LocalHub(tmp_path / "hub")
    publish(write_release(tmp_path / "r1", [0], "first"), REPO, "0.1.0", hub)
    path = hub.checkout(REPO, "v0.1.0")
    shard = path / "triton" / "train-00000-of-00001.parquet"
    assert not shard.stat().st_mode & 0o222
    assert hub.checkout(REPO, "v0.1.0") == path
    with pytest.raises(ValueError, match="no revision"):
        hub.checkout(REPO, "v9.9.9")


@pytest.mark.parametrize(
    "version",
    [
        "v0.1.0",
        "1.0",
        "01.2.3",
        "1.2.3-rc1",
        "1.2.3rc1",
        "1.2.3.post1",
        "1.2.3+local",
        "1!1.2.3",
        " 1.2.3",
        "",
    ],
)
def test_bad_versions_are_refused(tmp_path, version):
    with pytest.raises(ValueError, match="X.Y.Z"):
        publish(write_release(tmp_path / "r", [0], "x"), REPO, version, LocalHub(tmp_path / "hub"))


def test_versions_sort_as_numbers_and_other_tags_are_not_versions(tmp_path):
    hub = LocalHub(tmp_path / "hub")
    for index, version in enumerate(["0.10.0", "0.9.0", "0.9.1", "1.0.0"]):
        publish(write_release(tmp_path / f"r{index}", [index], version), REPO, version, hub)
    for tag in ("v1.1.0rc1", "latest", "v2"):  # tags someone added by hand
        subprocess.run(["git", "-C", str(hub.repo_path(REPO)), "tag", tag], check=True)
    assert hub.versions(REPO) == ["v0.9.0", "v0.9.1", "v0.10.0", "v1.0.0"]


def test_hub_from_env_is_local_unless_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("KV_HUB_DIR", str(tmp_path / "hub"))
    monkeypatch.delenv("KV_HUB", raising=False)
    local = hub_from_env()
    assert isinstance(local, LocalHub) and local.root == tmp_path / "hub"
    monkeypatch.setenv("KV_HUB", "hf")
    assert isinstance(hub_from_env(), RemoteHub)
    assert isinstance(hub_from_env(remote=False), LocalHub)


# ---------------------------------------------------------------- RemoteHub against a fake Hub


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeHub:
    """Repos as {path: bytes} per commit; tags map to commit ids. Every request is recorded.

    It serves reads by revision as the Hub does (the dataset info, the file tree, paths-info and file downloads
    at a tag, a branch or a commit), from a snapshot of the files kept at every commit."""

    url: str = ""
    requests: list[Recorded] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[str] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    repos: set[str] = field(default_factory=set)
    snapshots: dict[str, dict[str, bytes]] = field(default_factory=dict)  # commit id -> files
    unrouted: list[str] = field(default_factory=list)  # requests the fake does not serve (a test shows them)

    def commit_of(self, revision: str) -> str | None:
        if revision == "main":
            return self.commits[-1] if self.commits else None
        return self.tags.get(revision) or (revision if revision in self.snapshots else None)


def make_handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    repo_path = r"/api/datasets/(?P<repo>[^/]+/[^/]+)"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # keep the test output clean
            pass

        def reply(self, status: int, payload: object) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def handle_any(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = urlsplit(self.path).path
            hub.requests.append(
                Recorded(self.command, path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            route = f"{self.command} {unquote(path)}"
            if route == "POST /api/repos/create":
                payload = json.loads(body)
                repo = f"{payload['organization']}/{payload['name']}"
                if "forbidden" in repo:
                    return self.reply(403, {"error": "You don't have the rights to create a dataset here"})
                if repo in hub.repos:
                    # The real Hub's 409 carries the url too: create_repo(exist_ok=True) reads it.
                    url = f"{hub.url}/datasets/{repo}"
                    return self.reply(409, {"error": "You already created this dataset repo", "url": url})
                hub.repos.add(repo)
                return self.reply(200, {"url": f"{hub.url}/datasets/{repo}"})
            if route == "POST /api/validate-yaml":
                return self.reply(200, {"errors": [], "warnings": []})
            if match := re.fullmatch(repo_path + r"/refs", unquote(path)):
                head = hub.commits[-1] if hub.commits else "0" * 40
                tags = [{"name": t, "ref": f"refs/tags/{t}", "targetCommit": c} for t, c in hub.tags.items()]
                branches = [{"name": "main", "ref": "refs/heads/main", "targetCommit": head}]
                return self.reply(200, {"branches": branches, "converts": [], "tags": tags})
            if re.fullmatch(repo_path + r"/tree/main", unquote(path)):
                entries = [
                    {"type": "file", "path": p, "size": len(c), "oid": hashlib.sha1(c).hexdigest()}
                    for p, c in sorted(hub.files.items())
                ]
                return self.reply(200, entries)
            if re.fullmatch(repo_path + r"/preupload/main", unquote(path)):
                files = json.loads(body)["files"]
                # "regular" for every file: contents travel inline, base64, in the commit payload.
                modes = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]
                return self.reply(200, {"files": modes})
            if match := re.fullmatch(repo_path + r"/commit/main", unquote(path)):
                lines = [json.loads(line) for line in body.splitlines() if line.strip()]
                assert lines[0]["key"] == "header"
                for line in lines[1:]:
                    if line["key"] == "file":
                        hub.files[line["value"]["path"]] = base64.b64decode(line["value"]["content"])
                    elif line["key"] == "deletedFile":
                        del hub.files[line["value"]["path"]]
                    else:
                        return self.reply(400, {"error": f"fake hub: unsupported {line['key']}"})
                oid = hashlib.sha1(body).hexdigest()
                hub.commits.append(oid)
                hub.snapshots[oid] = dict(hub.files)
                url = f"{hub.url}/datasets/{match['repo']}/commit/{oid}"
                return self.reply(200, {"commitUrl": url, "commitOid": oid, "pullRequestUrl": None})
            if match := re.fullmatch(repo_path + r"/tag/(?P<revision>[^/]+)", unquote(path)):
                tag = json.loads(body)["tag"]
                if tag in hub.tags:
                    return self.reply(409, {"error": "tag exists"})
                hub.tags[tag] = match["revision"]
                return self.reply(200, {})
            if self.command in ("GET", "HEAD", "POST") and (answered := self.read_route(unquote(path), body)):
                return answered
            hub.unrouted.append(route)
            return self.reply(404, {"error": f"fake hub: no route {route}"})

        def read_route(self, path: str, body: bytes) -> bool:
            """The Hub's read API at a revision: what `datasets.load_dataset(repo, revision=tag)` asks for."""
            info = re.fullmatch(repo_path + r"(?:/revision/(?P<revision>[^/]+))?", path)
            tree = re.fullmatch(repo_path + r"/tree/(?P<revision>[^/]+)(?:/(?P<folder>.*))?", path)
            paths_info = re.fullmatch(repo_path + r"/paths-info/(?P<revision>[^/]+)", path)
            resolve = re.fullmatch(
                r"/datasets/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<file>.+)", path
            )
            match = info or tree or paths_info or resolve
            if match is None or match["repo"] not in hub.repos:
                return False
            commit = hub.commit_of(match["revision"] or "main")
            if commit is None:
                self.reply(404, {"error": f"Invalid rev id: {match['revision']}"})
                return True
            files = hub.snapshots[commit]

            def entry(name: str) -> dict[str, object]:
                content = files[name]
                return {
                    "type": "file",
                    "path": name,
                    "size": len(content),
                    "oid": hashlib.sha1(content).hexdigest(),
                }

            if info:
                self.reply(200, {"id": match["repo"], "sha": commit, "private": False, "disabled": False,
                                 "siblings": [{"rfilename": name} for name in sorted(files)], "tags": []})  # fmt: skip
            elif tree:
                folder = (match["folder"] or "").strip("/")
                recursive = "recursive=true" in (urlsplit(self.path).query or "").lower()
                inside = [name for name in sorted(files) if not folder or name.startswith(folder + "/")]
                listed: dict[str, dict[str, object]] = {}
                for name in inside:
                    rest = name[len(folder) + 1 :] if folder else name
                    if recursive or "/" not in rest:
                        listed[name] = entry(name)
                    folders = rest.split("/")[:-1]
                    for depth in range(1, len(folders) + 1 if recursive else min(1, len(folders)) + 1):
                        sub = "/".join(filter(None, [folder, *folders[:depth]]))
                        listed.setdefault(sub, {"type": "directory", "path": sub, "oid": "0" * 40})
                self.reply(200, list(listed.values()))
            elif paths_info:
                wanted = (
                    json.loads(body or b"{}").get("paths", [])
                    if body.startswith(b"{")
                    else [value for key, value in re.findall(r"(paths)=([^&]+)", unquote(body.decode()))]
                )
                found = [entry(name) for name in wanted if name in files]
                found += [{"type": "directory", "path": name, "oid": "0" * 40} for name in wanted
                          if name not in files and any(f.startswith(name + "/") for f in files)]  # fmt: skip
                self.reply(200, found)
            else:
                name = match["file"]
                if name not in files:
                    self.reply(404, {"error": f"Entry not found: {name}"})
                    return True
                content = files[name]
                self.send_response(200)
                self.send_header("Content-Length", str(len(content)))
                self.send_header("ETag", f'"{hashlib.sha1(content).hexdigest()}"')
                self.send_header("X-Repo-Commit", commit)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(content)
            return True

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = handle_any

    return Handler


@pytest.fixture
def fake_hub(monkeypatch):
    hub = FakeHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(hub))
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True, raising=False)
    # huggingface_hub and datasets read the endpoint when first imported: another test may have imported them.
    monkeypatch.setattr(constants, "ENDPOINT", hub.url)
    monkeypatch.setattr(
        constants, "HUGGINGFACE_CO_URL_TEMPLATE", hub.url + "/{repo_id}/resolve/{revision}/{filename}"
    )
    try:
        import datasets
    except ImportError:
        pass
    else:
        monkeypatch.setattr(datasets.config, "HF_ENDPOINT", hub.url)
        monkeypatch.setattr(
            datasets.config, "HUB_DATASETS_URL", hub.url + "/datasets/{repo_id}/resolve/{revision}/{path}"
        )
    yield hub
    server.shutdown()
    server.server_close()


@pytest.fixture
def token(monkeypatch) -> str:
    value = "hf_" + secrets.token_hex(16)
    monkeypatch.setenv("HF_TOKEN", value)
    return value


def test_remote_publish_is_one_commit_and_a_tag(tmp_path, fake_hub, token, monkeypatch, capfd, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("KV_HUB_DIR", str(tmp_path / "local-hub"))
    release = write_release(tmp_path / "release", [0, 1, 2], "first")
    hub = hub_from_env(remote=True)
    result = publish(release, REPO, "0.1.0", hub)

    commits = [r for r in fake_hub.requests if r.method == "POST" and "/commit/" in r.path]
    assert len(commits) == 1
    expected = {
        path.relative_to(release).as_posix(): path.read_bytes()
        for path in release.rglob("*")
        if path.is_file() and not path.name.startswith(".")
    }
    lines = [json.loads(line) for line in commits[0].body.splitlines()]
    committed = {line["value"]["path"]: base64.b64decode(line["value"]["content"]) for line in lines[1:]}
    assert lines[0] == {"key": "header", "value": {"summary": "Release v0.1.0", "description": ""}}
    assert len(expected) == 4 and committed == expected  # every file, with its content, in that one request
    tags = [r for r in fake_hub.requests if r.path.endswith(f"/tag/{result.commit}")]
    assert len(tags) == 1 and json.loads(tags[0].body) == {"tag": "v0.1.0"}
    assert fake_hub.tags == {"v0.1.0": fake_hub.commits[0]} and result.commit == fake_hub.commits[0]
    assert (result.tag, result.files) == ("v0.1.0", 4)
    assert result.url_or_path == f"{fake_hub.url}/datasets/{REPO}/tree/v0.1.0"
    routes = {re.sub(r"/(commit|tag|preupload|tree)/.*", r"/\1", r.path) for r in fake_hub.requests}
    assert routes <= {
        "/api/repos/create", "/api/validate-yaml", f"/api/datasets/{REPO}/refs", f"/api/datasets/{REPO}/tree",
        f"/api/datasets/{REPO}/preupload", f"/api/datasets/{REPO}/commit", f"/api/datasets/{REPO}/tag",
    }  # fmt: skip

    # The token travels in the Authorization header and nowhere else.
    assert all(r.headers.get("authorization") == f"Bearer {token}" for r in fake_hub.requests)
    assert not any(token.encode() in content for content in fake_hub.files.values())
    assert not any(token.encode() in r.body for r in fake_hub.requests)
    assert not any(token.encode() in path.read_bytes() for path in tmp_path.rglob("*") if path.is_file())
    out, err = capfd.readouterr()
    assert token not in out + err + caplog.text
    assert token not in repr(hub) + repr(result)


def test_remote_second_version_replaces_the_files_and_refuses_an_existing_tag(
    tmp_path, fake_hub, token, capfd
):
    hub = RemoteHub()
    publish(write_release(tmp_path / "r1", [0, 1, 2], "first"), REPO, "0.1.0", hub)
    publish(write_release(tmp_path / "r2", [3, 4], "second", shards=2, rl=False), REPO, "0.2.0", hub)
    assert sorted(fake_hub.files) == [
        "README.md",
        "sft/train-00000-of-00001.parquet",
        "triton/train-00000-of-00002.parquet",
        "triton/train-00001-of-00002.parquet",
    ]  # fmt: skip  (v0.1.0's single triton shard and the rl config were deleted in the same commit)
    assert len(fake_hub.commits) == 2 and hub.versions(REPO) == ["v0.1.0", "v0.2.0"]
    with pytest.raises(PublishError, match="already has v0.1.0") as info:
        publish(write_release(tmp_path / "r3", [5], "third"), REPO, "0.1.0", hub)
    assert token not in str(info.value)
    assert len(fake_hub.commits) == 2


def test_remote_publish_without_a_token_is_refused_before_any_request(tmp_path, fake_hub, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(PublishError, match="HF_TOKEN"):
        publish(write_release(tmp_path / "r", [0], "x"), REPO, "0.1.0", RemoteHub())
    assert fake_hub.requests == []


def test_remote_errors_are_one_line_without_the_token(tmp_path, fake_hub, token):
    with pytest.raises(PublishError) as info:
        publish(write_release(tmp_path / "r", [0], "x"), "kv-org/forbidden", "0.1.0", RemoteHub())
    message = str(info.value)
    assert "\n" not in message and token not in message and "kv-org/forbidden" in message
    assert "403" in message and "rights to create" in message  # the server's reason reaches the user


def test_same_tag_of_two_datasets_never_share_a_datasets_cache_entry(tmp_path, hf_cache):
    """`datasets` names a local folder's cache entry after the folder: v0.1.0 of two repos must differ."""
    import datasets

    hub = LocalHub(tmp_path / "hub")
    publish(write_release(tmp_path / "a", [0, 1], "a"), "kv-org/alpha", "0.1.0", hub)
    publish(write_release(tmp_path / "b", [7, 8, 9], "b"), "kv-org/beta", "0.1.0", hub)
    alpha = datasets.load_dataset(str(hub.checkout("kv-org/alpha", "v0.1.0")), "triton", split="train")
    beta = datasets.load_dataset(str(hub.checkout("kv-org/beta", "v0.1.0")), "triton", split="train")
    assert sorted(alpha["sample_index"]) == [0, 1]
    assert sorted(beta["sample_index"]) == [7, 8, 9]


def test_loading_the_local_repo_folder_by_tag_cannot_return_another_versions_rows(tmp_path):
    # Issue #21: `datasets.load_dataset(<local hub repo>, "triton", revision="v0.1.0")` returned v0.2.0's rows,
    # because `datasets` ignores `revision` for a local folder and the folder held the latest release.
    datasets = pytest.importorskip("datasets")
    hub = LocalHub(tmp_path / "hub")
    publish(write_release(tmp_path / "r1", [0, 1, 2, 3, 4], "first"), REPO, "0.1.0", hub)
    publish(write_release(tmp_path / "r2", [5, 6, 7, 8, 9], "second"), REPO, "0.2.0", hub)
    repo = hub.repo_path(REPO)
    assert [entry.name for entry in repo.iterdir()] == [".git"]
    with pytest.raises(Exception) as refused:  # noqa: B017 - whichever error `datasets` gives an empty folder
        datasets.load_dataset(str(repo), "triton", revision="v0.1.0", split="train",
                              cache_dir=str(tmp_path / "cache"))  # fmt: skip
    assert "sample_index" not in str(refused.value)
    rows = datasets.load_dataset(str(hub.checkout(REPO, "v0.1.0")), "triton", split="train",
                                 cache_dir=str(tmp_path / "cache"))  # fmt: skip
    assert sorted(rows["sample_index"]) == [0, 1, 2, 3, 4]


def test_remote_versions_load_by_tag_through_datasets_for_every_config(tmp_path, fake_hub, token, hf_cache,
                                                                       monkeypatch):  # fmt: skip
    """Publishing to the (recorded) Hub, then `datasets.load_dataset(repo, config, revision=tag)` against it:
    each tag returns its own version's rows, for every config of that version, whatever came after it."""
    import datasets
    from huggingface_hub import constants

    # Downloads go to this test's own cache: nothing is found there from an earlier run, nothing left behind.
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setattr(datasets.config, "HF_HUB_CACHE", str(tmp_path / "hub-cache"), raising=False)

    hub = RemoteHub()
    publish(write_release(tmp_path / "r1", [0, 1, 2], "first"), REPO, "0.1.0", hub)
    publish(write_release(tmp_path / "r2", [3, 4], "second", shards=2), REPO, "0.2.0", hub)
    expected = {"v0.1.0": ([0, 1, 2], "first"), "v0.2.0": ([3, 4], "second")}
    for tag, (samples, text) in expected.items():
        triton = datasets.load_dataset(REPO, "triton", revision=tag, split="train")
        assert sorted(triton["sample_index"]) == samples, (tag, fake_hub.unrouted)
        sft = datasets.load_dataset(REPO, "sft", revision=tag, split="train")
        assert sft[0]["messages"][0]["content"] == text
        rl = datasets.load_dataset(REPO, "rl", revision=tag, split="train")
        assert rl["prompt"] == [text]
    assert (
        datasets.load_dataset(REPO, split="train").num_rows == 2
    )  # no config: the card's default (triton), main
    reads = [r for r in fake_hub.requests if "/resolve/" in r.path]
    assert any(
        f"/resolve/{fake_hub.tags['v0.1.0']}/" in r.path or "/resolve/v0.1.0/" in r.path for r in reads
    )
