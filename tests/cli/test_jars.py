"""``sleeper-spark jars fetch`` against a loopback HTTP server serving a fixture JAR."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from sleeper_spark.cli.jars_commands import Manifest, installed_hadoop_version
from sleeper_spark.cli.main import main

REPO_ROOT = Path(__file__).resolve().parents[2]
EXECUTABLE = Path(sys.executable).parent / "sleeper-spark"
JAR_PATH = "org/example/demo/1.0/demo-1.0.jar"


@dataclass
class Mirror:
    """A Maven-layout folder served on loopback, with the paths it was asked for."""

    root: Path
    url: str
    requests: list[str] = field(default_factory=list)

    def publish(self, path: str, data: bytes) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[Mirror]:
    root = tmp_path / "mirror"
    root.mkdir()
    served = Mirror(root, "")

    class Handler(SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            served.requests.append(self.path)
            super().do_GET()

        def log_message(self, format: str, *args: Any) -> None:  # keep the test output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    served.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def write_manifest(folder: Path, data: bytes, *, sha256: str | None = "auto", size: int | None = None,
                   hadoop_version: str | None = None) -> Path:
    """A manifest of one JAR, ``demo-1.0.jar``, with its real checksum unless told otherwise.

    Its Hadoop version is the installed PySpark's unless given, so that no warning is printed.
    """
    checksum = hashlib.sha256(data).hexdigest() if sha256 == "auto" else sha256
    document = {
        "hadoop_version": hadoop_version or installed_hadoop_version() or "3.4.2",
        "base_url": "https://repo.invalid/maven2",  # never used: every test passes --base-url
        "jars": [{"name": "demo", "group": "org.example", "version": "1.0", "file": "demo-1.0.jar",
                  "path": JAR_PATH, "url": f"https://repo.invalid/maven2/{JAR_PATH}",
                  "size": size if size is not None else len(data), "sha256": checksum}],
    }
    path = folder / "manifest.json"
    path.write_text(json.dumps(document))
    return path


def fetch(manifest: Path, dest: Path, mirror: Mirror, *extra: str) -> int:
    return main(["jars", "fetch", "--manifest", str(manifest), "--dest", str(dest),
                 "--base-url", mirror.url, *extra])


def test_fetch_downloads_verifies_and_then_skips_a_present_jar(
        tmp_path: Path, mirror: Mirror, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a mirror serving a JAR and a manifest with its checksum
    data = b"PK\x03\x04 a fixture jar " * 1000
    mirror.publish(JAR_PATH, data)
    manifest = write_manifest(tmp_path, data)
    dest = tmp_path / "jars"

    # When it is fetched twice
    first = fetch(manifest, dest, mirror, "--json")
    downloaded = json.loads(capsys.readouterr().out)
    second = fetch(manifest, dest, mirror)

    # Then it was downloaded once, verified, and nothing but the JAR is left in the folder
    assert first == 0 and second == 0
    assert downloaded["jars"] == [{"file": "demo-1.0.jar", "status": "downloaded", "size": len(data),
                                   "sha256": hashlib.sha256(data).hexdigest(), "verified": True}]
    assert "demo-1.0.jar: present" in capsys.readouterr().out
    assert mirror.requests == [f"/{JAR_PATH}"]
    assert [p.name for p in dest.iterdir()] == ["demo-1.0.jar"]
    assert (dest / "demo-1.0.jar").read_bytes() == data


def test_a_damaged_jar_on_disk_is_fetched_again(tmp_path: Path, mirror: Mirror) -> None:
    # Given a JAR on disk whose bytes do not match the manifest
    data = b"the real jar"
    mirror.publish(JAR_PATH, data)
    manifest = write_manifest(tmp_path, data)
    dest = tmp_path / "jars"
    dest.mkdir()
    (dest / "demo-1.0.jar").write_bytes(b"truncated")

    # When it is fetched
    code = fetch(manifest, dest, mirror)

    # Then it is replaced by the verified download
    assert code == 0
    assert (dest / "demo-1.0.jar").read_bytes() == data
    assert len(mirror.requests) == 1


def test_a_download_with_the_wrong_checksum_is_discarded(
        tmp_path: Path, mirror: Mirror, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a mirror serving other bytes than the manifest's checksum describes
    mirror.publish(JAR_PATH, b"tampered!!")
    manifest = write_manifest(tmp_path, b"the real jar", size=10)
    dest = tmp_path / "jars"

    # When it is fetched
    code = fetch(manifest, dest, mirror)

    # Then the command fails with one line and leaves nothing behind, not even a temporary file
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and "sha256" in err and "discarded" in err
    assert list(dest.iterdir()) == []


def test_a_download_larger_than_the_manifest_says_is_cut_short(
        tmp_path: Path, mirror: Mirror, capsys: pytest.CaptureFixture[str]) -> None:
    mirror.publish(JAR_PATH, b"x" * 5000)
    manifest = write_manifest(tmp_path, b"x" * 100)

    code = fetch(manifest, tmp_path / "jars", mirror)

    assert code == 1 and "larger than the 100 bytes" in capsys.readouterr().err
    assert list((tmp_path / "jars").iterdir()) == []


def test_a_jar_without_a_checksum_is_refused_unless_allowed(
        tmp_path: Path, mirror: Mirror, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a manifest that does not know the JAR's checksum
    data = b"an unpinned jar"
    mirror.publish(JAR_PATH, data)
    manifest = write_manifest(tmp_path, data, sha256=None)
    dest = tmp_path / "jars"

    # When it is fetched without, then with --allow-unverified
    refused = fetch(manifest, dest, mirror)
    refusal = capsys.readouterr().err
    allowed = fetch(manifest, dest, mirror, "--allow-unverified")
    out = capsys.readouterr().out

    # Then nothing was downloaded the first time; the second time the JAR came with its sha256
    assert refused == 1 and "no sha256 for demo-1.0.jar" in refusal and "--allow-unverified" in refusal
    assert allowed == 0
    assert mirror.requests == [f"/{JAR_PATH}"]
    assert hashlib.sha256(data).hexdigest() in out and "unverified" in out


def test_a_missing_jar_is_a_one_line_error(
        tmp_path: Path, mirror: Mirror, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = write_manifest(tmp_path, b"never published")

    code = fetch(manifest, tmp_path / "jars", mirror)

    err = capsys.readouterr().err
    assert code == 1 and "HTTP 404" in err and err.count("\n") == 1
    assert list((tmp_path / "jars").iterdir()) == []


def test_a_manifest_for_another_hadoop_than_pyspark_bundles_is_fetched_with_a_warning(
        tmp_path: Path, mirror: Mirror, capsys: pytest.CaptureFixture[str]) -> None:
    if installed_hadoop_version() is None:
        pytest.skip("PySpark is not installed")
    data = b"a jar for another hadoop"
    mirror.publish(JAR_PATH, data)
    manifest = write_manifest(tmp_path, data, hadoop_version="0.0.1")

    code = fetch(manifest, tmp_path / "jars", mirror)

    err = capsys.readouterr().err
    assert code == 0
    assert err.startswith("warning: these JARs are for Hadoop 0.0.1") and err.count("\n") == 1


def test_a_broken_manifest_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"hadoop_version": "3.4.2", "base_url": "https://x", "jars": [
        {"name": "a", "group": "g", "version": "1", "file": "../evil.jar", "path": "a.jar", "url": "u"}]}))

    code = main(["jars", "fetch", "--manifest", str(manifest), "--allow-unverified"])

    assert code == 1 and "jars.0.file" in capsys.readouterr().err


def test_the_shipped_manifest_names_maven_central_jars_consistently() -> None:
    manifest = Manifest.model_validate_json((REPO_ROOT / "jars" / "manifest.json").read_bytes())
    assert manifest.base_url == "https://repo1.maven.org/maven2"
    assert {jar.name for jar in manifest.jars} == {"hadoop-aws", "bundle"}
    for jar in manifest.jars:
        assert jar.url == f"{manifest.base_url}/{jar.path}"
        assert jar.path == f"{jar.group.replace('.', '/')}/{jar.name}/{jar.version}/{jar.file}"
        assert jar.file == f"{jar.name}-{jar.version}.jar"
    hadoop_aws = next(jar for jar in manifest.jars if jar.name == "hadoop-aws")
    assert hadoop_aws.version == manifest.hadoop_version


def test_the_installed_command_has_jars_fetch() -> None:
    done = subprocess.run([str(EXECUTABLE), "jars", "fetch", "--help"], capture_output=True, text=True,
                          timeout=60, env={"COLUMNS": "200", "PATH": str(EXECUTABLE.parent)})
    assert done.returncode == 0 and "--allow-unverified" in done.stdout
