"""Object storage for the run store: `s3://bucket/prefix` on any S3-compatible endpoint.

Why a path class of our own: the store's code walks paths (`run_dir / "run.json"`, `iterdir`,
`read_text`, `is_file`), and keeping that shape lets one body of code serve a local folder and
a bucket. `S3Path` does exactly the handful of things the store asks of a path, each one a
single S3 request through one `s3fs` filesystem; what S3 cannot do like a disk (rename, fsync,
flock) is not pretended here but done differently by store/fs.py: whole-object PUTs are
already atomic, the pointer and the manifest are replaced with conditional PUTs
(`If-Match: <etag>` / `If-None-Match: *`), and locks are lease objects (store/lease.py).

Credentials and endpoint come from the environment only (the standard AWS chain:
AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, profiles, instance roles;
AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL for a non-AWS server). Nothing here stores, logs or
prints them: errors are one line naming the s3:// path and what went wrong, and the AWS
libraries' DEBUG logs (which print signed request headers) are held at INFO.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Iterator

from evalcore.errors import StoreError
from evalcore.common.regular_files import FileTooLarge

SCHEME = "s3://"
_FS: dict[tuple, Any] = {}
_CHECKED: set[tuple] = set()
_LOCK = threading.Lock()


def is_url(value: object) -> bool:
    return isinstance(value, str) and value.lower().startswith(SCHEME)


def endpoint() -> str | None:
    """The S3 endpoint from the environment (None: AWS itself)."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


# botocore's DEBUG records print every signed request's headers: the access key id and the
# session token. Nothing below INFO from these libraries is let through, whatever the
# application's logging level (tests/reliability/test_security_secrets.py checks the logs).
QUIET_LOGGERS = ("botocore", "aiobotocore", "s3fs", "boto3")


def _quiet_logs() -> None:
    for name in QUIET_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level < logging.INFO:
            logger.setLevel(logging.INFO)


def filesystem() -> Any:
    """The process's s3fs filesystem for the current endpoint (one per endpoint: it holds a
    connection pool). Listings are never cached: another process may have changed them."""
    key = (endpoint(), os.environ.get("AWS_PROFILE"))
    _quiet_logs()
    with _LOCK:
        fs = _FS.get(key)
        if fs is None:
            try:
                import s3fs
            except ImportError:
                raise StoreError("an s3:// store needs the s3fs package: pip install 'evalcore[s3]'") from None
            client = {"endpoint_url": key[0]} if key[0] else {}
            fs = _FS[key] = s3fs.S3FileSystem(
                use_listings_cache=False, skip_instance_cache=True, client_kwargs=client,
                config_kwargs={"connect_timeout": 5, "read_timeout": 60,
                               "retries": {"max_attempts": 3, "mode": "standard"}})
        return fs


def arrow_filesystem() -> Any:
    """The same filesystem, wrapped for pyarrow's Parquet readers and writers."""
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    fs = filesystem()
    wrapped = getattr(fs, "_evalcore_arrow", None)
    if wrapped is None:
        wrapped = fs._evalcore_arrow = PyFileSystem(FSSpecHandler(fs))
    return wrapped


def reset() -> None:
    """Forget the filesystems (tests that change the endpoint or credentials)."""
    with _LOCK:
        _FS.clear()
        _CHECKED.clear()


def describe(exc: BaseException) -> str:
    """One short, credential-free phrase for what went wrong."""
    name = type(exc).__name__
    text = str(exc).splitlines()[0][:200] if str(exc) else name
    if name in ("NoCredentialsError", "PartialCredentialsError", "NoAuthTokenError"):
        return ("no AWS credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                "or AWS_PROFILE)")
    if name in ("EndpointConnectionError", "ConnectTimeoutError", "ClientConnectorError") or \
            "Could not connect" in text or "Connect timeout" in text:
        return f"cannot reach the S3 endpoint {endpoint() or '(AWS)'}"
    if isinstance(exc, PermissionError) or "AccessDenied" in text or "InvalidAccessKeyId" in text \
            or "SignatureDoesNotMatch" in text or "Forbidden" in text:
        return "access denied (check the credentials and the bucket policy)"
    if "NoSuchBucket" in text or "bucket does not exist" in text.lower():
        return "the bucket does not exist"
    return text


def error(path: "S3Path | str", exc: BaseException) -> StoreError:
    return StoreError(f"{path}: {describe(exc)}")


def check_bucket(bucket: str) -> None:
    """Fail early, in one line, on a missing bucket, missing credentials or an unreachable
    endpoint (once per bucket and endpoint in a process)."""
    key = (endpoint(), bucket)
    if key in _CHECKED:
        return
    fs = filesystem()
    try:
        fs.call_s3("head_bucket", Bucket=bucket)
    except FileNotFoundError:
        raise StoreError(f"s3://{bucket}: the bucket does not exist") from None
    except Exception as exc:  # botocore and aiohttp errors: one line, no traceback
        raise error(f"s3://{bucket}", exc) from None
    _CHECKED.add(key)


@dataclass(frozen=True)
class Stat:
    """What the store asks of a stat: size, time, and a version that changes with every PUT."""

    st_size: int
    st_mtime: float
    etag: str


class S3Path:
    """`s3://bucket/key`: the subset of pathlib the store uses, one S3 request per call.

    Folders are key prefixes: they need no creating (`mkdir` does nothing) and exist while
    something is under them. Writes are whole-object PUTs, atomic by S3's own guarantee."""

    __slots__ = ("bucket", "key", "_kind")

    def __init__(self, bucket: str, key: str = "", kind: str | None = None):
        self.bucket = bucket
        self.key = key.strip("/")
        self._kind = kind  # "file" / "directory" when known from a listing (saves a request)

    @classmethod
    def parse(cls, url: str) -> "S3Path":
        rest = url[len(SCHEME):]
        bucket, _, key = rest.partition("/")
        if "@" in bucket or ":" in bucket:
            raise StoreError("an s3:// store URL must not carry credentials or a port: use "
                             "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY and AWS_ENDPOINT_URL")
        if not bucket or any(p in ("..", ".") for p in key.split("/")):
            raise StoreError(f"{url!r}: expected s3://bucket/prefix")
        return cls(bucket, key)

    # ---- pure path ---------------------------------------------------------------------
    def __str__(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.key}" if self.key else f"{SCHEME}{self.bucket}"

    def __repr__(self) -> str:
        return f"S3Path({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, S3Path) and (self.bucket, self.key) == (other.bucket, other.key)

    def __hash__(self) -> int:
        return hash((self.bucket, self.key))

    def __lt__(self, other: "S3Path") -> bool:
        return (self.bucket, self.key) < (other.bucket, other.key)

    def __truediv__(self, other: str) -> "S3Path":
        """A key below this one. Only plain segments: an absolute, empty, `.` or `..` segment
        is refused (some S3-compatible servers and proxies resolve dot-segments in a request
        path, so such a key could name an object outside the store)."""
        other = str(other)
        if other.startswith("/") or any(seg in ("", ".", "..") for seg in other.split("/")):
            raise StoreError(f"refusing the object key {other!r} below {self}: not a plain relative key")
        return S3Path(self.bucket, f"{self.key}/{other}" if self.key else other)

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def suffix(self) -> str:
        return PurePosixPath(self.name).suffix

    @property
    def parent(self) -> "S3Path":
        return S3Path(self.bucket, self.key.rsplit("/", 1)[0] if "/" in self.key else "")

    def with_name(self, name: str) -> "S3Path":
        return self.parent / name

    def relative_to(self, other: "S3Path") -> PurePosixPath:
        if other.bucket != self.bucket or not (self.key + "/").startswith(other.key + "/" if other.key else ""):
            raise ValueError(f"{self} is not under {other}")
        return PurePosixPath(self.key[len(other.key):].lstrip("/"))

    def as_posix(self) -> str:
        return str(self)

    def resolve(self) -> "S3Path":
        return self

    @property
    def fs_path(self) -> str:
        """The path as s3fs and pyarrow's fsspec wrapper take it: `bucket/key`."""
        return f"{self.bucket}/{self.key}" if self.key else self.bucket

    # ---- requests ----------------------------------------------------------------------
    def _fs(self) -> Any:
        check_bucket(self.bucket)
        return filesystem()

    def read_bytes(self) -> bytes:
        return self.read_versioned()[0]

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)

    def read_versioned(self, limit: int | None = None) -> tuple[bytes, str]:
        """The object's bytes and its ETag (for a conditional replace). FileNotFoundError when
        there is none; with `limit`, FileTooLarge for an object larger than that (told by its
        length before the body is read: a small file of the store is never read whole when huge)."""
        fs = self._fs()
        try:
            return _get(fs, self.bucket, self.key, limit)
        except FileNotFoundError:
            raise FileNotFoundError(str(self)) from None
        except FileTooLarge as exc:
            raise FileTooLarge(self, exc.size, exc.limit) from None
        except Exception as exc:
            raise error(self, exc) from None

    def put(self, data: bytes, *, if_match: str | None = None, if_none_match: bool = False) -> str | None:
        """One PUT; returns the new ETag, or None when the condition did not hold (someone
        else replaced or created the object first)."""
        fs = self._fs()
        extra: dict[str, str] = {}
        if if_match is not None:
            extra["IfMatch"] = if_match
        if if_none_match:
            extra["IfNoneMatch"] = "*"
        try:
            reply = fs.call_s3("put_object", Bucket=self.bucket, Key=self.key, Body=data, **extra)
        except Exception as exc:
            if extra and _condition_failed(exc):
                return None
            raise error(self, exc) from None
        return reply.get("ETag", "")

    def write_bytes(self, data: bytes) -> int:
        self.put(data)
        return len(data)

    def write_text(self, text: str, encoding: str = "utf-8") -> int:
        return self.write_bytes(text.encode(encoding))

    def delete(self, if_match: str | None = None) -> None:
        """Remove the object (S3 deletes are idempotent); with `if_match`, only that version."""
        fs = self._fs()
        extra = {"IfMatch": if_match} if if_match else {}
        try:
            fs.call_s3("delete_object", Bucket=self.bucket, Key=self.key, **extra)
        except (FileNotFoundError, FileExistsError):
            pass
        except Exception as exc:
            raise error(self, exc) from None

    def unlink(self, missing_ok: bool = False) -> None:
        if not missing_ok and not self.is_file():
            raise FileNotFoundError(str(self))
        self.delete()

    def stat(self) -> Stat:
        fs = self._fs()
        try:
            info = fs.info(self.fs_path)
        except FileNotFoundError:
            raise FileNotFoundError(str(self)) from None
        except Exception as exc:
            raise error(self, exc) from None
        when = info.get("LastModified")
        return Stat(int(info.get("size") or 0), when.timestamp() if when else 0.0, str(info.get("ETag", "")))

    def is_file(self) -> bool:
        if self._kind is not None:
            return self._kind == "file"
        if not self.key:
            return False
        fs = self._fs()
        try:
            fs.call_s3("head_object", Bucket=self.bucket, Key=self.key)
            return True
        except FileNotFoundError:
            return False
        except Exception as exc:
            raise error(self, exc) from None

    def is_dir(self) -> bool:
        if self._kind is not None:
            return self._kind == "directory"
        fs = self._fs()
        prefix = f"{self.key}/" if self.key else ""
        try:
            reply = fs.call_s3("list_objects_v2", Bucket=self.bucket, Prefix=prefix, MaxKeys=1)
        except Exception as exc:
            raise error(self, exc) from None
        return bool(reply.get("KeyCount") or reply.get("Contents"))

    def exists(self) -> bool:
        return self.is_file() or self.is_dir()

    def is_symlink(self) -> bool:
        return False

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """Nothing to create: a prefix exists once an object is written under it."""

    def rmdir(self) -> None:
        """Nothing to remove: an empty prefix does not exist."""

    def iterdir(self) -> Iterator["S3Path"]:
        """Direct children (objects and sub-prefixes). A prefix with nothing under it lists
        empty: on object storage an empty folder and a missing one are the same thing."""
        fs = self._fs()
        try:
            entries = fs.ls(self.fs_path, detail=True, refresh=True)
        except FileNotFoundError:
            return iter([])
        except Exception as exc:
            raise error(self, exc) from None
        out = []
        for e in entries:
            bucket, _, key = e["name"].partition("/")
            if key.strip("/") == self.key:
                continue
            out.append(S3Path(bucket, key, "directory" if e.get("type") == "directory" else "file"))
        return iter(out)

    def glob(self, pattern: str) -> Iterator["S3Path"]:
        if "/" in pattern or "**" in pattern:
            raise ValueError("S3Path.glob takes one level only")
        try:
            return iter(sorted(p for p in self.iterdir() if fnmatch.fnmatchcase(p.name, pattern)))
        except FileNotFoundError:
            return iter([])

    def walk_files(self) -> list[tuple["S3Path", dict]]:
        """Every object under this prefix, with its listing entry (size, LastModified)."""
        fs = self._fs()
        try:
            found = fs.find(self.fs_path + "/", detail=True)
        except FileNotFoundError:
            return []
        except Exception as exc:
            raise error(self, exc) from None
        return [(S3Path(*name.partition("/")[::2], "file"), info) for name, info in sorted(found.items())]

    def rglob(self, pattern: str) -> Iterator["S3Path"]:
        return iter([p for p, _ in self.walk_files() if fnmatch.fnmatchcase(p.name, pattern)])


def _condition_failed(exc: BaseException) -> bool:
    """412 Precondition Failed (s3fs turns it into FileExistsError for If-None-Match and into
    a plain OSError for If-Match), or 409 ConditionalRequestConflict (a concurrent conditional
    PUT on AWS): either way another writer got there first."""
    if isinstance(exc, FileExistsError):
        return True
    text = f"{exc} {getattr(exc, '__cause__', '')}"
    return any(m in text for m in ("pre-condition", "PreconditionFailed", "ConditionalRequestConflict", "412"))


def _get(fs: Any, bucket: str, key: str, limit: int | None = None) -> tuple[bytes, str]:
    """GET an object's bytes and ETag in one request, on s3fs's event loop (its client is
    asynchronous): the ETag is that of the bytes read, which a HEAD beside it would not be.
    With `limit`, an object longer than that is refused before its body is read."""
    from fsspec.asyn import sync

    async def _run() -> tuple[bytes, str]:
        reply = await fs._call_s3("get_object", Bucket=bucket, Key=key)
        async with reply["Body"] as body:
            size = int(reply.get("ContentLength") or 0)
            if limit is not None and size > limit:
                raise FileTooLarge(f"{bucket}/{key}", size, limit)
            data = await body.read()
        if limit is not None and len(data) > limit:
            raise FileTooLarge(f"{bucket}/{key}", len(data), limit)
        return data, reply["ETag"]

    return sync(fs.loop, _run)


def used() -> bool:
    """Whether this process has opened object storage (store/process_exit.py asks)."""
    return bool(_FS)
