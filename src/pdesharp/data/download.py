"""``pdesharp data download``: fetch the published reference files, resumably and verified.

Two sources:

``codepde``
    CodePDE's released dev/test subsets on the Hugging Face dataset ``LDA1020/codepde-data``
    (``{pde}/{file}``), saved as ``<data_dir>/codepde/{pde}/{file}``, which are the first
    candidates of every built-in task's ``data.dev.files`` / ``data.test.files``.
``pdebench``
    the full PDEBench Train file from DaRUS (several GB), saved as ``<data_dir>/pdebench/{file}``
    and verified against PDEBench's published MD5; dev/test are then cut from it exactly as
    CodePDE did (see :mod:`pdesharp.data.subset`).

Transfers go to ``<target>.part`` and resume with an HTTP Range request when rerun (or retried
after a dropped connection); the file is renamed into place only after its size and checksum
check out. Hugging Face sends the LFS object's SHA-256 and size in ``X-Linked-ETag`` /
``X-Linked-Size`` on its redirect, which we verify; when no checksum is published, the SHA-256 of
the received file is recorded beside it (``<file>.sha256``) so later corruption can be detected.
Only the standard library is used (``urllib``).
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pdesharp.task import Task

CODEPDE_BASE_URL = "https://huggingface.co/datasets/LDA1020/codepde-data/resolve/main"
Source = Literal["codepde", "pdebench"]
SplitChoice = Literal["dev", "test", "both"]

_CHUNK = 1 << 20  # 1 MiB reads: large enough for throughput, small enough for a smooth bar
_TIMEOUT = 60.0  # seconds without data before a connection counts as dead
_USER_AGENT = "pdesharp-data-download (+https://github.com/udellgroup/PDE-SHARP)"


class DownloadError(RuntimeError):
    """A download failed; the message says why and what to do (including placing files by hand)."""


@dataclass
class RemoteFile:
    """One file to fetch and how to check it."""

    url: str
    target: Path
    label: str = ""  # e.g. "burgers dev (CodePDE)"
    md5: str | None = None
    sha256: str | None = None
    size: int | None = None

    @property
    def part(self) -> Path:
        return self.target.with_name(self.target.name + ".part")

    @property
    def checksum_file(self) -> Path:
        return self.target.with_name(self.target.name + ".sha256")


@dataclass
class DownloadResult:
    path: Path
    status: Literal["downloaded", "present"]
    bytes_received: int = 0
    resumed_from: int = 0
    verified: list[str] = field(default_factory=list)  # e.g. ["size", "md5"]
    sha256: str | None = None


# --------------------------------------------------------------------------------------------
# Planning: which files a task/source/split needs, and where they go.


def _codepde_pde_dir(task: Task) -> str | None:
    spec = task.data.download
    for rel in (spec.codepde_dev, spec.codepde_test):
        if rel:
            return rel.split("/", 1)[0]
    return None


def plan_downloads(
    task: Task,
    source: Source,
    split: SplitChoice,
    root: Path,
    *,
    base_url: str | None = None,
) -> list[RemoteFile]:
    """The files ``pdesharp data download`` fetches for ``task``; raises DownloadError if none."""
    spec = task.data.download
    splits = ("dev", "test") if split == "both" else (split,)
    if source == "codepde":
        base = (base_url or CODEPDE_BASE_URL).rstrip("/")
        out = []
        for s in splits:
            rel = getattr(spec, f"codepde_{s}")
            if not rel:
                continue
            out.append(RemoteFile(url=f"{base}/{rel}", target=root / "codepde" / rel,
                                  label=f"{task.name} {s} (CodePDE)"))
        if not out:
            raise DownloadError(
                f"task {task.name!r} lists no CodePDE file for split {split!r} in data.download;"
                " use `pdesharp data generate` or pass --dev-data/--test-data FILE"
            )
        return out
    if source == "pdebench":
        if not spec.pdebench_file:
            why = (" (its reference is the FNO piececonst data set, which PDEBench does not"
                   " publish; use --source codepde or `pdesharp data generate darcy`)"
                   if task.name == "darcy" else "")
            raise DownloadError(f"task {task.name!r} has no PDEBench source file{why}")
        if base_url:
            url = f"{base_url.rstrip('/')}/{spec.pdebench_file}"
        elif spec.pdebench_url:
            url = spec.pdebench_url
        else:
            raise DownloadError(
                f"task {task.name!r} names PDEBench file {spec.pdebench_file} but no URL;"
                " pass --base-url of a mirror that serves it"
            )
        return [RemoteFile(url=url, target=root / "pdebench" / spec.pdebench_file,
                           label=f"{task.name} PDEBench Train file", md5=spec.pdebench_md5)]
    raise DownloadError(f"unknown source {source!r}: choose codepde or pdebench")


def manual_placement_hint(files: list[RemoteFile], *, header: bool = True, footer: bool = True) -> str:
    """URL -> exact target path for each file, for users who fetch the files some other way."""
    lines = ["To install the data by hand, download each URL with any tool and save it at the path"
             " shown:"] if header else []
    for f in files:
        lines.append(f"  {f.url}\n    -> {f.target}")
    if footer:
        lines.append("(or point --data-dir / $PDESHARP_DATA at a folder that already holds them,"
                     " or pass --dev-data/--test-data FILE)")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Transfer.


class _RecordingRedirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects like urllib does, but keeps every hop's headers.

    Hugging Face answers ``resolve/main/<file>`` with a redirect to a CDN; the checksum headers
    (``X-Linked-ETag``, ``X-Linked-Size``) are on that first answer, not on the final one.
    """

    def __init__(self) -> None:
        self.hops: list[dict[str, str]] = []

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        self.hops.append({k.lower(): v for k, v in headers.items()})
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and req.has_header("Range"):
            new.add_unredirected_header("Range", req.get_header("Range"))
        return new


_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def published_checksums(headers: list[dict[str, str]]) -> tuple[str | None, int | None]:
    """SHA-256 and size announced by the server (Hugging Face LFS headers), if any.

    Only a 64-hex ``X-Linked-ETag`` is an LFS SHA-256; a plain ``ETag`` of a non-LFS file is a
    git blob id and is not a checksum of the bytes, so it is ignored.
    """
    sha = size = None
    for h in headers:
        tag = h.get("x-linked-etag")
        if tag:
            tag = tag.strip().removeprefix("W/").strip('"').lower()
            if _HEX64.match(tag):
                sha = tag
        if h.get("x-linked-size", "").isdigit():
            size = int(h["x-linked-size"])
    return sha, size


def _total_size(status: int, headers: dict[str, str], offset: int) -> int | None:
    if status == 206:
        m = re.match(r"bytes\s+(\d+)-(\d+)/(\d+|\*)", headers.get("content-range", ""))
        if m and m.group(3) != "*":
            return int(m.group(3))
        n = headers.get("content-length", "")
        return offset + int(n) if n.isdigit() else None
    n = headers.get("content-length", "")
    return int(n) if n.isdigit() else None


def _hash_file(path: Path, names: list[str]) -> dict[str, str]:
    hashes = {n: hashlib.new(n) for n in names}
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK * 8):
            for h in hashes.values():
                h.update(chunk)
    return {n: h.hexdigest() for n, h in hashes.items()}


class _LocalWriteError(Exception):
    """Writing the .part file failed (disk full, permissions): not a network problem."""


ProgressHook = Callable[[int, int | None], None]  # (bytes so far, total or None)


def _transfer(remote: RemoteFile, progress: ProgressHook | None, timeout: float) -> tuple[int, int]:
    """One attempt: append to the .part file from where it stops. Returns (received, offset)."""
    part = remote.part
    offset = part.stat().st_size if part.exists() else 0
    if remote.size is not None and offset > remote.size:  # junk from elsewhere: start over
        part.unlink()
        offset = 0
    req = urllib.request.Request(remote.url, headers={"User-Agent": _USER_AGENT})
    if offset:
        req.add_header("Range", f"bytes={offset}-")
    redirects = _RecordingRedirects()
    opener = urllib.request.build_opener(redirects)
    try:
        resp = opener.open(req, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:
            # Nothing left to send from this offset: the .part is complete (or too long, which
            # the size check in _verify then catches). Content-Range reads "bytes */<total>".
            m = re.search(r"/(\d+)", exc.headers.get("Content-Range", "") if exc.headers else "")
            exc.close()
            if remote.size is None and m:
                remote.size = int(m.group(1))
            return 0, offset
        raise
    with resp:
        headers = {k.lower(): v for k, v in resp.headers.items()}
        sha, size = published_checksums(redirects.hops + [headers])
        remote.sha256 = remote.sha256 or sha
        status = resp.status
        if status == 200 and offset:
            offset = 0  # the server ignored Range: take the whole file again
        total = _total_size(status, headers, offset)
        if remote.size is None:
            remote.size = size if size is not None else total
        received = 0
        with part.open("r+b" if offset else "wb") as fh:
            fh.seek(offset)
            fh.truncate()
            if progress:
                progress(offset, remote.size)
            while True:
                chunk = resp.read(_CHUNK)
                if not chunk:
                    break
                try:
                    fh.write(chunk)
                except OSError as exc:
                    raise _LocalWriteError(f"cannot write {part}: {exc.strerror or exc}") from exc
                received += len(chunk)
                if progress:
                    progress(offset + received, remote.size)
    if total is not None and offset + received < total:
        # urllib returns a short body silently when the connection drops; that is an interruption.
        raise ConnectionError(f"connection closed after {offset + received} of {total} bytes")
    return received, offset


def _verify(remote: RemoteFile) -> tuple[list[str], str]:
    """Check the finished .part; on mismatch delete it and raise. Returns (checks, sha256)."""
    part = remote.part
    got_size = part.stat().st_size
    checks: list[str] = []
    problems: list[str] = []
    if remote.size is not None:
        checks.append("size")
        if got_size != remote.size:
            problems.append(f"size {got_size} bytes, expected {remote.size}")
    digests = _hash_file(part, ["sha256"] + (["md5"] if remote.md5 else []))
    if remote.md5:
        checks.append("md5")
        if digests["md5"] != remote.md5.lower():
            problems.append(f"MD5 {digests['md5']}, expected {remote.md5}")
    if remote.sha256:
        checks.append("sha256")
        if digests["sha256"] != remote.sha256.lower():
            problems.append(f"SHA-256 {digests['sha256']}, expected {remote.sha256}")
    if problems:
        part.unlink(missing_ok=True)
        raise DownloadError(
            f"{remote.label or remote.target.name}: the downloaded file is corrupt ("
            + "; ".join(problems) + f"); it was deleted. Rerun the command to download it again"
            f" from {remote.url}"
        )
    return checks, digests["sha256"]


def _network_error(remote: RemoteFile, exc: BaseException) -> DownloadError:
    reason = getattr(exc, "reason", exc)
    kept = ""
    if remote.part.exists() and remote.part.stat().st_size:
        kept = (f"\nThe partial file {remote.part} ({remote.part.stat().st_size} bytes) was kept;"
                " rerun the same command to resume.")
    return DownloadError(
        f"cannot download {remote.label or remote.target.name} from {remote.url}: {reason}.\n"
        "Check your network connection (or proxy settings: $HTTPS_PROXY)." + kept + "\n"
        + manual_placement_hint([remote])
    )


def fetch(
    remote: RemoteFile,
    *,
    progress: ProgressHook | None = None,
    retries: int = 3,
    timeout: float = _TIMEOUT,
    force: bool = False,
    backoff: float = 2.0,
) -> DownloadResult:
    """Download ``remote`` to its target: resume a .part, verify, rename atomically.

    An existing target is kept (status "present") unless ``force``. A dropped connection is
    retried up to ``retries`` times, each time resuming where the transfer stopped.
    """
    target = remote.target
    if target.exists() and not force:
        return DownloadResult(path=target, status="present")
    target.parent.mkdir(parents=True, exist_ok=True)
    resumed_from = remote.part.stat().st_size if remote.part.exists() else 0
    received = 0
    attempt = 0
    while True:
        try:
            got, _ = _transfer(remote, progress, timeout)
            received += got
            break
        except urllib.error.HTTPError as exc:
            exc.close()
            if exc.code in (404, 410):
                raise DownloadError(
                    f"{remote.label or target.name}: {remote.url} was not found (HTTP {exc.code})."
                    " The file may have moved: check --base-url, or the task's data.download"
                    " section.\n" + manual_placement_hint([remote])
                ) from None
            if exc.code in (401, 403):
                raise DownloadError(
                    f"{remote.label or target.name}: access to {remote.url} was refused (HTTP"
                    f" {exc.code}).\n" + manual_placement_hint([remote])
                ) from None
            if exc.code < 500 or attempt >= retries:
                raise DownloadError(
                    f"{remote.label or target.name}: server answered HTTP {exc.code} {exc.reason}"
                    f" for {remote.url}.\n" + manual_placement_hint([remote])
                ) from None
        except _LocalWriteError as exc:
            raise DownloadError(f"{exc}; free some space or choose another --data-dir") from None
        except (OSError, http.client.HTTPException) as exc:
            # URLError, refused/reset connections, timeouts and truncated bodies all land here.
            if attempt >= retries:
                raise _network_error(remote, exc) from None
        attempt += 1
        time.sleep(min(backoff * attempt, 30.0))  # give a flaky link a moment before resuming
    checks, sha = _verify(remote)
    if not (remote.md5 or remote.sha256):
        # Nothing published to check against: record what we got, so corruption shows later.
        remote.checksum_file.write_text(f"{sha}  {target.name}\n")
    os.replace(remote.part, target)
    return DownloadResult(path=target, status="downloaded", bytes_received=received,
                          resumed_from=resumed_from, verified=checks, sha256=sha)


def rich_progress_fetch(files: list[RemoteFile], *, force: bool = False, retries: int = 3,
                        console=None) -> list[DownloadResult]:
    """Fetch ``files`` one after another with a rich progress bar per file."""
    from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn,
                               TimeRemainingColumn, TransferSpeedColumn)

    results = []
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                  TransferSpeedColumn(), TimeRemainingColumn(), console=console,
                  transient=False) as bar:
        for remote in files:
            job = bar.add_task(remote.label or remote.target.name, total=remote.size)

            def hook(done: int, total: int | None, job=job) -> None:
                bar.update(job, completed=done, total=total)

            result = fetch(remote, progress=hook, retries=retries, force=force)
            if result.status == "present":
                bar.update(job, description=f"{remote.label} (already present)",
                           total=1, completed=1)
            results.append(result)
    return results
