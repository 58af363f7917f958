"""bench/with_redis.py, which runs a store target beside a redis-server of its own, and
the parsing of bench/store_ops.py."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from .bench_scripts import BENCH, load_bench_script

with_redis = load_bench_script("with_redis.py", "bench_with_redis")
REDIS = shutil.which("redis-server")
needs_redis = pytest.mark.skipif(REDIS is None, reason="redis-server is not installed")


def test_every_placeholder_is_filled_with_the_url() -> None:
    argv = ["serve", "--store", "@store@", "--note=@store@/x"]
    assert with_redis.fill(argv, "redis://h:1/0") == [
        "serve",
        "--store",
        "redis://h:1/0",
        "--note=redis://h:1/0/x",
    ]


def test_a_command_without_the_placeholder_is_refused() -> None:
    with pytest.raises(SystemExit, match="no @store@ in the command"):
        with_redis.fill(["serve", "--store", "{store}"], "redis://h:1/0")


def test_a_missing_redis_server_is_said_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    with pytest.raises(SystemExit, match="no redis-server on PATH") as caught:
        with_redis.redis_server()
    assert "\n" not in str(caught.value)


def test_the_store_targets_fail_cleanly_without_redis_server() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "with_redis.py"), sys.executable, "-c", "pass", "@store@"],
        env={"PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.strip().startswith("with_redis: no redis-server on PATH")


@needs_redis
@pytest.mark.parametrize("unix", [False, True])
def test_the_command_runs_beside_a_redis_that_answers_and_is_gone_after(unix: bool) -> None:
    # The command PINGs the store at the URL it was given, through the launcher's own
    # client, and exits with the launcher's status.
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import with_redis as w; "
        "url = sys.argv[2]; "
        "address = url[len('unix://'):].split('?')[0] if url.startswith('unix://') "
        "else ('127.0.0.1', int(url.rsplit(':', 1)[1].split('/')[0])); "
        "sys.exit(0 if w.Redis(None, address).ping() else 3)"
    )
    options = ["--unix"] if unix else []
    command = [sys.executable, "-c", probe, str(BENCH), "@store@"]
    done = subprocess.run(
        [sys.executable, str(BENCH / "with_redis.py"), *options, *command],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


@needs_redis
def test_a_redis_of_its_own_is_stopped_when_the_block_ends() -> None:
    with with_redis.running_redis() as redis:
        assert redis.ping()
        assert redis.url.startswith("redis://127.0.0.1:")
        process = redis.process
    assert process.poll() is not None
    assert not redis.ping()


@needs_redis
def test_store_ops_counts_commands_without_its_own() -> None:
    store_ops = load_bench_script("store_ops.py", "bench_store_ops")
    with with_redis.running_redis(unix=True) as redis:
        store_ops.reset_stats(redis)
        for _ in range(3):
            redis.command("PING")
        stats = store_ops.command_stats(redis)
    assert {name: calls for name, (calls, _) in stats.items()} == {"ping": 3}
