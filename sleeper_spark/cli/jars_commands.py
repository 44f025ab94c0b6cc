"""``jars fetch``: the optional connector JARs that let Spark's own Parquet reader read ``s3a://``.

sleeper_spark never needs them (it reads and writes S3 with boto3); they matter only to people
who read a version's files with ``spark.read.parquet`` on a Spark distribution that lacks
``hadoop-aws``. ``jars/manifest.json`` lists them with their Maven Central paths, and
has fields for each one's size and SHA-256 checksum (``null`` in the shipped manifest: record the
values you trust there). Each JAR is streamed to a temporary file next to its destination, checked,
and renamed into place, so a JAR under its final name is always complete. A JAR whose checksum
the manifest does not know is refused unless ``--allow-unverified`` (an unverified JAR on
Spark's classpath runs with the job's credentials), and is then downloaded again on every run,
since nothing proves the copy on disk intact.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import re
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Annotated, BinaryIO, Literal

import typer
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sleeper_spark.cli.context import JsonFlag
from sleeper_spark.cli.output import emit_json, human_bytes, say, stderr
from sleeper_spark.errors import ConfigError, StorageError
from sleeper_spark.version import __version__

MANIFEST = Path("jars") / "manifest.json"
TIMEOUT_S = 60.0  # per blocking read: a stalled mirror fails instead of hanging the command
CHUNK_BYTES = 1 << 20
_SCHEMES = ("https://", "http://", "file://")
_HADOOP_CLIENT = re.compile(r"hadoop-client-api-(\d+(?:\.\d+)+)\.jar")

jars_app = typer.Typer(help="Optional connector JARs for Spark's own Parquet reader on s3a://.",
                       no_args_is_help=True)


class JarSpec(BaseModel):
    """One JAR of the manifest; ``path`` is relative to the repository's base URL."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    group: str
    version: str
    file: str = Field(pattern=r"^[A-Za-z0-9_.+-]+\.jar$")  # a bare file name: never a path to climb out by
    path: str
    url: str
    size: int | None = Field(default=None, ge=0)
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        if value.startswith("/") or ".." in value.split("/"):
            raise ValueError("must be a path relative to base_url")
        return value


class Manifest(BaseModel):
    """``jars/manifest.json``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    description: str = ""
    hadoop_version: str
    spark_versions: str = ""
    base_url: str
    jars: tuple[JarSpec, ...]


class FetchResult(BaseModel):
    """What happened to one JAR."""

    model_config = ConfigDict(frozen=True)

    file: str
    status: Literal["present", "downloaded"]
    size: int
    sha256: str
    verified: bool  # False: the manifest knows no checksum to compare with


def default_manifest() -> Path:
    """``jars/manifest.json`` in the current folder, else in the source checkout of this package."""
    for candidate in (Path.cwd() / MANIFEST, Path(__file__).resolve().parents[2] / MANIFEST):
        if candidate.is_file():
            return candidate
    raise ConfigError(f"no {MANIFEST} here or in the source checkout; pass --manifest FILE")


def load_manifest(path: Path) -> Manifest:
    try:
        return Manifest.model_validate_json(path.read_bytes())
    except OSError as error:
        raise ConfigError(f"cannot read the manifest {path}: {error.strerror or error}") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "manifest"
        raise ConfigError(f"the manifest {path} is not valid: {where}: {first['msg']}") from None


def installed_hadoop_version() -> str | None:
    """The Hadoop version bundled with the installed PySpark, read from its JAR names (no import)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        for jar in sorted((Path(location) / "jars").glob("hadoop-client-api-*.jar")):
            match = _HADOOP_CLIENT.fullmatch(jar.name)
            if match:
                return match.group(1)
    return None


@jars_app.command("fetch")
def fetch(
    dest: Annotated[Path | None, typer.Option(
        "--dest", help="Where the JARs go; default: the manifest's folder.")] = None,
    manifest: Annotated[Path | None, typer.Option(
        "--manifest", help="The manifest; default: jars/manifest.json here or in the source checkout.")] = None,
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="A Maven repository mirror; default: the manifest's base_url.")] = None,
    allow_unverified: Annotated[bool, typer.Option(
        "--allow-unverified", help="Also fetch JARs whose sha256 the manifest does not know.")] = False,
    json_: JsonFlag = False,
) -> None:
    """Download the JARs of the manifest, verify them, and skip those already present and intact."""
    manifest_path = manifest or default_manifest()
    spec = load_manifest(manifest_path)
    unknown = [jar.file for jar in spec.jars if jar.sha256 is None]
    if unknown and not allow_unverified:
        raise ConfigError(
            f"the manifest {manifest_path} has no sha256 for {', '.join(unknown)}, so they cannot be verified; "
            "record their checksums in it, or pass --allow-unverified"
        )
    _warn_on_hadoop_mismatch(spec.hadoop_version)
    target_dir = dest or manifest_path.parent
    target_dir.mkdir(parents=True, exist_ok=True)
    root = (base_url or spec.base_url).rstrip("/")
    if not root.startswith(_SCHEMES):
        raise ConfigError(f"the base URL must start with {', '.join(_SCHEMES)}, not {root!r}")
    results = [fetch_jar(jar, target_dir, f"{root}/{jar.path}") for jar in spec.jars]
    if json_:
        emit_json({"dest": str(target_dir), "jars": results})
        return
    for result in results:
        note = "" if result.verified else " (unverified: check it, then record this sha256 in the manifest)"
        say(f"{result.file}: {result.status}, {human_bytes(result.size)}, sha256 {result.sha256}{note}")


def fetch_jar(jar: JarSpec, dest: Path, url: str) -> FetchResult:
    """Makes ``dest / jar.file`` hold the verified JAR, downloading it only if needed."""
    target = dest / jar.file
    present = _digest(target) if target.is_file() else None
    if present is not None and _matches(jar, *present):
        return FetchResult(file=jar.file, status="present", size=present[0], sha256=present[1],
                           verified=jar.sha256 is not None)
    size, sha256 = _download(url, jar, target)
    return FetchResult(file=jar.file, status="downloaded", size=size, sha256=sha256, verified=jar.sha256 is not None)


def _matches(jar: JarSpec, size: int, sha256: str) -> bool:
    # Without a known checksum an existing file cannot be proven intact: fetch it again.
    return jar.sha256 is not None and sha256 == jar.sha256 and (jar.size is None or size == jar.size)


def _digest(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as file:
        while chunk := file.read(CHUNK_BYTES):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def _download(url: str, jar: JarSpec, target: Path) -> tuple[int, str]:
    """Streams ``url`` into a temporary file beside ``target``; renames it into place once verified."""
    request = urllib.request.Request(url, headers={"User-Agent": f"sleeper-spark/{__version__}"})
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{jar.file}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            size, sha256 = _copy(url, request, jar, out)
            out.flush()
            os.fsync(out.fileno())  # the bytes are on disk before the name says the JAR is there
        _check(url, jar, size, sha256)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return size, sha256


def _copy(url: str, request: urllib.request.Request, jar: JarSpec, out: BinaryIO) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:  # the scheme was checked by fetch()
            while chunk := response.read(CHUNK_BYTES):
                size += len(chunk)
                if jar.size is not None and size > jar.size:
                    raise StorageError(f"{url} is larger than the {jar.size} bytes the manifest expects; discarded")
                digest.update(chunk)
                out.write(chunk)
    except urllib.error.HTTPError as error:
        raise StorageError(f"downloading {url} failed: HTTP {error.code} {error.reason}") from None
    except urllib.error.URLError as error:
        raise StorageError(f"downloading {url} failed: {error.reason}") from None
    except (TimeoutError, ConnectionError) as error:
        raise StorageError(f"downloading {url} failed: {error}") from None
    return size, digest.hexdigest()


def _check(url: str, jar: JarSpec, size: int, sha256: str) -> None:
    if jar.size is not None and size != jar.size:
        raise StorageError(f"{url} has {size} bytes, the manifest expects {jar.size}; discarded")
    if jar.sha256 is not None and sha256 != jar.sha256:
        raise StorageError(f"{url} has sha256 {sha256}, the manifest expects {jar.sha256}; discarded")


def _warn_on_hadoop_mismatch(wanted: str) -> None:
    installed = installed_hadoop_version()
    if installed is not None and installed != wanted:
        # Only a warning: the JARs may be meant for a cluster's Spark, not the PySpark installed here.
        stderr.print(f"warning: these JARs are for Hadoop {wanted}, but the installed PySpark bundles Hadoop "
                     f"{installed}; hadoop-aws must match the Hadoop of the Spark that loads it", markup=False,
                     soft_wrap=True)
