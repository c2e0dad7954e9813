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
