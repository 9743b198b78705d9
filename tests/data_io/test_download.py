"""Downloads against a loopback HTTP server: full, resumed, corrupt, missing, offline."""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path

import pytest

from pdesharp.data.download import (DownloadError, RemoteFile, fetch, plan_downloads,
                                    published_checksums)
from pdesharp.task import builtin_task_names, load_task

BODY = bytes(range(256)) * 4000  # 1 MB: several 1 MiB-read boundaries are not needed, content is


def _remote(base: str, tmp_path: Path, path: str = "/files/a.hdf5", **kw) -> RemoteFile:
    return RemoteFile(url=base + path, target=tmp_path / "data" / "a.hdf5", label="a", **kw)


def test_plan_targets_are_the_tasks_first_candidates(tmp_path):
    # What `download --source codepde` writes must be exactly what resolve_split looks for first.
    for name in builtin_task_names():
        task = load_task(name)
        files = plan_downloads(task, "codepde", "both", tmp_path)
        assert [f.target for f in files] == [tmp_path / task.data.dev.files[0],
                                             tmp_path / task.data.test.files[0]]
        assert files[0].url.startswith("https://huggingface.co/datasets/LDA1020/codepde-data/resolve/main/")
    burgers = plan_downloads(load_task("burgers"), "pdebench", "dev", tmp_path)
    assert burgers[0].target == tmp_path / "pdebench" / "1D_Burgers_Sols_Nu0.01.hdf5"
    assert burgers[0].md5 == "e6d9a4f62baf9a29121a816b919e2770"
    assert burgers[0].url.startswith("https://darus.uni-stuttgart.de/")
    mirrored = plan_downloads(load_task("burgers"), "pdebench", "dev", tmp_path, base_url="http://m/x/")
    assert mirrored[0].url == "http://m/x/1D_Burgers_Sols_Nu0.01.hdf5"


def test_darcy_has_no_pdebench_source(tmp_path):
    with pytest.raises(DownloadError, match="FNO"):
        plan_downloads(load_task("darcy"), "pdebench", "both", tmp_path)


def test_published_checksums_only_trusts_sha256_shaped_etags():
    sha = "ab" * 32
    assert published_checksums([{"x-linked-etag": f'"{sha}"', "x-linked-size": "12"}]) == (sha, 12)
    # a git blob id (40 hex) is not a checksum of the bytes
    assert published_checksums([{"x-linked-etag": '"' + "c" * 40 + '"'}]) == (None, None)


def test_full_download_via_redirect_verifies_linked_etag(file_server, tmp_path):
    base, st = file_server
    st.files["/cdn/a.hdf5"] = BODY
    st.redirects["/files/a.hdf5"] = "/cdn/a.hdf5"
    st.extra_headers["/files/a.hdf5"] = {"X-Linked-ETag": f'"{hashlib.sha256(BODY).hexdigest()}"',
                                         "X-Linked-Size": str(len(BODY))}
    remote = _remote(base, tmp_path)
    result = fetch(remote, retries=0)
    assert result.status == "downloaded"
    assert remote.target.read_bytes() == BODY
    assert not remote.part.exists()
    assert set(result.verified) == {"size", "sha256"}
    assert not remote.checksum_file.exists()  # a published checksum needs no record of our own
    # a second call finds the file and does not ask the server again
    n = len(st.requests)
    assert fetch(_remote(base, tmp_path), retries=0).status == "present"
    assert len(st.requests) == n


def test_resume_after_interrupted_transfer(file_server, tmp_path):
    base, st = file_server
    st.files["/files/a.hdf5"] = BODY
    cut = 300_001
    st.truncate_next["/files/a.hdf5"] = cut
    remote = _remote(base, tmp_path)
    with pytest.raises(DownloadError, match="resume") as err:
        fetch(remote, retries=0)
    assert str(remote.target) in str(err.value)  # tells where to place the file by hand
    assert remote.part.read_bytes() == BODY[:cut]
    assert not remote.target.exists()
    result = fetch(_remote(base, tmp_path), retries=0)
    assert st.requests[-1] == ("/files/a.hdf5", f"bytes={cut}-")
    assert result.resumed_from == cut and result.bytes_received == len(BODY) - cut
    assert remote.target.read_bytes() == BODY
    # no checksum was published, so the one we computed is recorded beside the file
    assert remote.checksum_file.read_text().split()[0] == hashlib.sha256(BODY).hexdigest()


def test_dropped_connection_is_retried_with_range(file_server, tmp_path):
    base, st = file_server
    st.files["/files/a.hdf5"] = BODY
    st.truncate_next["/files/a.hdf5"] = 1000
    remote = _remote(base, tmp_path, md5=hashlib.md5(BODY).hexdigest())
    result = fetch(remote, retries=2, backoff=0)
    assert [r[1] for r in st.requests] == [None, "bytes=1000-"]
    assert result.verified == ["size", "md5"]
    assert remote.target.read_bytes() == BODY


def test_server_that_ignores_range_restarts_cleanly(file_server, tmp_path):
    base, st = file_server
    st.files["/files/a.hdf5"] = BODY
    st.ignore_range = True
    remote = _remote(base, tmp_path)
    remote.part.parent.mkdir(parents=True)
    remote.part.write_bytes(b"stale bytes from an older attempt")
    fetch(remote, retries=0)
    assert remote.target.read_bytes() == BODY


def test_complete_part_file_gets_416_and_is_finished(file_server, tmp_path):
    base, st = file_server
    st.files["/files/a.hdf5"] = BODY
    remote = _remote(base, tmp_path, md5=hashlib.md5(BODY).hexdigest())
    remote.part.parent.mkdir(parents=True)
    remote.part.write_bytes(BODY)
    result = fetch(remote, retries=0)
    assert result.bytes_received == 0 and remote.target.read_bytes() == BODY


@pytest.mark.parametrize("kind", ["md5", "sha256"])
def test_checksum_mismatch_deletes_the_bad_file(file_server, tmp_path, kind):
    base, st = file_server
    st.files["/files/a.hdf5"] = BODY
    if kind == "md5":
        remote = _remote(base, tmp_path, md5="0" * 32)
    else:
        st.files["/cdn/a.hdf5"] = BODY
        st.redirects["/files/b.hdf5"] = "/cdn/a.hdf5"
        st.extra_headers["/files/b.hdf5"] = {"X-Linked-ETag": '"' + "f" * 64 + '"'}
        remote = _remote(base, tmp_path, path="/files/b.hdf5")
    with pytest.raises(DownloadError, match="corrupt") as err:
        fetch(remote, retries=0)
    assert ("MD5" if kind == "md5" else "SHA-256") in str(err.value)
    assert not remote.target.exists() and not remote.part.exists()


def test_404_is_actionable(file_server, tmp_path):
    base, _ = file_server
    remote = _remote(base, tmp_path, path="/files/missing.hdf5")
    with pytest.raises(DownloadError) as err:
        fetch(remote, retries=3, backoff=0)
    msg = str(err.value)
    assert "HTTP 404" in msg and "--base-url" in msg and str(remote.target) in msg
    assert not remote.target.exists() and not remote.part.exists()


def test_no_network_says_so_and_how_to_place_files(tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens on this port now: connection refused
    remote = RemoteFile(url=f"http://127.0.0.1:{port}/a.hdf5", target=tmp_path / "x" / "a.hdf5")
    with pytest.raises(DownloadError) as err:
        fetch(remote, retries=1, backoff=0)
    msg = str(err.value)
    assert "network" in msg and "by hand" in msg and str(remote.target) in msg


def test_resume_through_a_redirect_keeps_range_and_checksum(file_server, tmp_path):
    # Hugging Face answers resolve/main/<file> with a redirect to a CDN: Range must survive it.
    base, st = file_server
    st.files["/cdn/a.hdf5"] = BODY
    st.redirects["/files/a.hdf5"] = "/cdn/a.hdf5"
    st.extra_headers["/files/a.hdf5"] = {"X-Linked-ETag": f'"{hashlib.sha256(BODY).hexdigest()}"'}
    st.truncate_next["/cdn/a.hdf5"] = 4242
    remote = _remote(base, tmp_path)
    result = fetch(remote, retries=1, backoff=0)
    assert ("/cdn/a.hdf5", "bytes=4242-") in st.requests
    assert "sha256" in result.verified and remote.target.read_bytes() == BODY
