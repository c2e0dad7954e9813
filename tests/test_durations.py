import pytest

from durable_cli import durations
from durable_cli.errors import DurableError


@pytest.mark.parametrize("text,seconds", [
    ("90d", 90 * 86400), ("1h30m", 5400), ("45s", 45), ("2w", 1209600), ("1w2d3h4m5s", 788645),
])
def test_valid_durations(text, seconds):
    assert durations.parse(text) == seconds
    assert durations.parse(durations.format(seconds)) == seconds


@pytest.mark.parametrize("text", ["30", "0s", "05m", "1.5h", "-5d", "30x", "", "1m1h", "1h1h", "h", " 1h", "1h ", "0"])
def test_invalid_durations_are_exit_2(text):
    with pytest.raises(DurableError) as e:
        durations.parse(text)
    assert e.value.exit_status == 2


def test_bare_zero_only_where_allowed():
    assert durations.parse("0", allow_zero=True) == 0
    with pytest.raises(DurableError):
        durations.parse("00", allow_zero=True)


def test_cli_rejects_bad_durations(durable):
    for bad in ("30", "0s", "05m", "1.5h", "-5d", "30x"):
        r = durable("purge", "--older-than", bad, "--yes")
        assert r.status == 2, bad
        assert r.err.startswith("durable: error: invalid"), r.err
    assert durable("--lock-timeout", "0", "ls").status == 0
    assert durable("--lock-timeout", "0s", "ls").status == 2
