"""`export --output FILE` (docs/reference/retention.md §7): a FILE inside the data directory (decided on the resolved path) is exit 2
before anything is read; a regular FILE is written beside itself and renamed into place when complete, so a
failed export leaves the old file and no temporary file; a pipe or /dev/stdout is written directly."""

import hashlib
import os
import stat

import pytest

pytestmark = [pytest.mark.both_backends, pytest.mark.cross_object]


def _files(directory):
    """Every file under DIRECTORY with the hash of its bytes."""
    out = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                with open(path, "rb") as f:
                    out[os.path.relpath(path, directory)] = hashlib.sha256(f.read()).hexdigest()
    return out


@pytest.mark.local_only("points --output at the object file of a local session")
def test_an_output_inside_the_data_directory_is_exit_2_and_destroys_nothing(durable, home, tmp_path):
    assert durable("transcript", "append", "s", "--role", "user", "keep me").status == 0
    before = _files(home)
    object_file = durable("path", "s").out.strip()
    (tmp_path / "link").symlink_to(home)
    (tmp_path / "to-secret").symlink_to(home / "secret.key")
    for target in (object_file, home / "secret.key", home / "index.db", home, home / "objects" / "new.jsonl",
                   tmp_path / "link" / "secret.key", tmp_path / "to-secret", tmp_path / "link" / "objects" / ".." / "x"):
        r = durable("export", "s", "--output", target)
        assert r.status == 2, (target, r.err)
        assert "inside the data directory" in r.err
    assert _files(home) == before
    assert durable("transcript", "show", "s", "--json").json()[0]["content"] == "keep me"
    assert durable("--as", "bob", "transcript", "append", "t", "--role", "user", "x").status == 0  # the secret is intact


def test_the_data_directory_is_refused_on_both_backends(durable, home):
    assert durable("transcript", "append", "s", "--role", "user", "x").status == 0
    home.mkdir(exist_ok=True)
    assert durable("export", "s", "--output", home / "secret.key").status == 2


def test_a_regular_file_is_replaced_whole_and_a_failed_export_leaves_it(durable, tmp_path):
    assert durable("transcript", "append", "s", "--role", "user", "x").status == 0
    out = tmp_path / "out" / "dump.jsonl"
    out.parent.mkdir()
    out.write_text("the old export\n")
    assert durable("export", "missing", "--output", out).status == 3
    assert durable("export", "s", "--user", "alice", "--output", out).status == 2
    assert out.read_text() == "the old export\n"
    assert os.listdir(out.parent) == ["dump.jsonl"]  # no temporary file left behind
    assert durable("export", "s", "--output", out).status == 0
    assert out.read_text().startswith('{"format":"durable-export"')
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and os.listdir(out.parent) == ["dump.jsonl"]
    link = tmp_path / "link.jsonl"
    link.symlink_to(out)  # a symlink outside the data directory: its target is replaced, the link stays
    assert durable("export", "s", "--output", link).status == 0
    assert link.is_symlink() and sorted(os.listdir(out.parent)) == ["dump.jsonl"]


@pytest.mark.local_only("runs the CLI in a real process (its own stdout)")
def test_dev_stdout_is_written_directly(durable, durable_proc):
    assert durable("transcript", "append", "s", "--role", "user", "x").status == 0
    r = durable_proc("export", "s", "--output", "/dev/stdout")
    assert r.status == 0, r.err
    assert r.out.startswith('{"format":"durable-export"')
