import os

import pytest


def test_precedence_option_env_file_default(durable, tmp_path, monkeypatch):
    monkeypatch.delenv("DURABLE_USER")
    r = durable("config", "get", "defaults.user")
    assert r.status == 0
    assert durable("config", "set", "defaults.user", "filed").status == 0
    assert durable("config", "get", "defaults.user").out.strip() == "filed"
    monkeypatch.setenv("DURABLE_USER", "fromenv")
    assert durable("config", "get", "defaults.user").out.strip() == "fromenv"
    assert durable("--as", "option", "config", "get", "defaults.user").out.strip() == "option"
    # the effective user is the one that owns what it creates
    durable("--as", "option", "session", "create", "s1")
    assert durable("--as", "option", "session", "show", "s1", "--json").json()["owner"] == "option"
    assert durable("session", "show", "s1").status == 3  # fromenv has no such session


def test_set_list_unset_and_types(durable):
    assert durable("config", "set", "transcript.token_budget", "8000").status == 0
    assert durable("config", "list", "--json").json()["transcript.token_budget"] == 8000
    assert durable("config", "set", "transcript.token_budget", "lots").status == 2
    assert durable("config", "set", "queue.lease", "90").status == 2
    assert durable("config", "set", "no.such", "1").status == 2
    assert durable("config", "get", "no.such").status == 2
    assert durable("config", "unset", "transcript.token_budget").status == 0
    assert durable("config", "list", "--json").json()["transcript.token_budget"] == 4000
    assert durable("config", "path").out.strip() == os.environ["DURABLE_CONFIG"]


def test_config_file_values_are_used(durable):
    with open(os.environ["DURABLE_CONFIG"], "w") as f:
        f.write('[queue]\nmax_unfinished = 2\n')
    assert durable("session", "prompt", "q", "one").status == 0
    assert durable("session", "prompt", "q", "two").status == 0
    assert durable("session", "prompt", "q", "three").status == 4


def test_bad_config_file_is_exit_2(durable):
    with open(os.environ["DURABLE_CONFIG"], "w") as f:
        f.write("[queue\n")
    r = durable("session", "prompt", "q", "one")
    assert r.status == 2 and "not valid TOML" in r.err
    with open(os.environ["DURABLE_CONFIG"], "w") as f:
        f.write('[queue]\nmax_unfinished = "ten"\n')
    assert durable("session", "prompt", "q", "one").status == 2


@pytest.mark.parametrize("xdg", [None, "/tmp/xdg-here", "  "])
def test_default_paths_match_platformdirs(monkeypatch, xdg):
    import platformdirs

    from durable_cli.config import user_dir

    for variable in ("XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        if xdg is None:
            monkeypatch.delenv(variable, raising=False)
        else:
            monkeypatch.setenv(variable, xdg)
    assert user_dir("config") == platformdirs.user_config_dir("durable")
    assert user_dir("data") == platformdirs.user_data_dir("durable")


def test_default_home_is_the_platform_data_dir(durable, monkeypatch, tmp_path):
    monkeypatch.delenv("DURABLE_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert durable("session", "create", "x").status == 0
    assert (tmp_path / "xdg" / "durable" / "secret.key").exists()
    assert durable("config", "get", "defaults.home").out.strip() == str(tmp_path / "xdg" / "durable")
    monkeypatch.delenv("DURABLE_USER")
    import getpass

    assert durable("config", "list", "--json").json()["defaults.user"] == getpass.getuser()


def test_list_origin_says_where_each_value_comes_from(durable, monkeypatch):
    durable("config", "set", "queue.lease", "1h")
    monkeypatch.setenv("DURABLE_LOCK_TIMEOUT", "3s")
    doc = durable("--as", "opt", "config", "list", "--origin", "--json").json()
    assert doc["defaults.user"] == {"value": "opt", "origin": "option"}
    assert doc["defaults.lock_timeout"] == {"value": "3s", "origin": "env"}
    assert doc["queue.lease"] == {"value": "1h", "origin": "file"}
    assert doc["transcript.token_budget"] == {"value": 4000, "origin": "default"}
    rows = [line.split("\t") for line in durable("config", "list", "--origin").out.splitlines()]
    assert ["queue.lease", "1h", "file"] in rows


def test_get_and_path_as_json(durable):
    assert durable("config", "get", "queue.lease", "--json").json() == {"key": "queue.lease", "value": "2h"}
    assert durable("config", "get", "remote.url", "--json").json() == {"key": "remote.url", "value": None}
    assert durable("config", "path", "--json").json() == {"path": os.environ["DURABLE_CONFIG"]}


def test_remote_keys_are_validated(durable, monkeypatch):
    assert durable("config", "set", "remote.url", "not a url").status == 2
    assert durable("config", "set", "remote.timeout", "30").status == 2
    assert durable("config", "set", "remote.url", "https://durable.example.workers.dev").status == 0
    monkeypatch.setenv("DURABLE_REMOTE", "http://127.0.0.1:8787")
    assert durable("config", "list", "--origin", "--json").json()["remote.url"] == {"value": "http://127.0.0.1:8787", "origin": "env"}


def test_a_tokenizer_is_loaded_before_it_is_written(durable, durable_proc, tmp_path, monkeypatch):
    """docs/reference/transcript.md §6: `config set transcript.tokenizer tiktoken:nope` (or an encoding not cached, or no tiktoken at
    all) was written, and every append after it was exit 2. Now the set is exit 2 naming the key and what
    is missing, and the file stays as it was; appends go on."""
    import subprocess
    import sys

    assert durable("config", "set", "transcript.token_budget", "8000").status == 0
    path = os.environ["DURABLE_CONFIG"]
    before = open(path).read()

    def refused(r, *missing):
        assert r.status == 2 and r.out == "", r.err
        assert r.err.startswith("durable: error: cannot set transcript.tokenizer: ") and r.err.count("\n") == 1, r.err
        for what in missing:
            assert what in r.err, r.err
        assert open(path).read() == before

    refused(durable_proc("config", "set", "transcript.tokenizer", "tiktoken:nope"), "'nope'")
    refused(durable_proc("config", "set", "transcript.tokenizer", "nope"), "use approx or tiktoken:<encoding>")
    empty = tmp_path / "no-cache"
    empty.mkdir()
    refused(durable_proc("config", "set", "transcript.tokenizer", "tiktoken:cl100k_base", env={"TIKTOKEN_CACHE_DIR": str(empty)}),
            "not available offline", "its encoding file is not in tiktoken's cache")
    probe = ("import sys; sys.modules['tiktoken'] = None\n"  # a plain install: no tiktoken package
             "from durable_cli.cli.app import run; sys.exit(run(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", probe, "config", "set", "transcript.tokenizer", "tiktoken:cl100k_base"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "needs the tiktoken package" in r.stderr and open(path).read() == before
    assert durable("transcript", "append", "t", "--role", "user", "still writes").status == 0
    assert durable("config", "set", "transcript.tokenizer", "approx").status == 0
