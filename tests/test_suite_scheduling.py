"""How the suite is spread over pytest-xdist workers (tests/conftest.py, docs/development.md: the suite's time):
tests that share a module-scoped fixture or an SDK import go to one worker together; the rest one at a time."""

import pytest

from tests.conftest import one_worker_modules, pytest_xdist_make_scheduler


class _Config:
    """What pytest-xdist's schedulers read of the configuration of `-n 2 --dist DIST`."""

    def __init__(self, dist, workers=2):
        self.values = {"dist": dist, "tx": ["popen"] * workers, "numprocesses": workers}
        self.option = type("Option", (), {"loadscopereorder": True})()

    def getvalue(self, name):
        return self.values.get(name)

    getoption = getvalue


def test_a_module_sharing_a_fixture_or_an_sdk_runs_on_one_worker():
    together = one_worker_modules()
    # a workerd per module, a browser per module, a home made once, openai/anthropic imported in the test process
    assert {"tests/remote/test_remote_faults.py", "tests/ui/test_browser.py", "tests/core/test_import.py",
            "tests/core/test_formats.py", "tests/integrations/test_langgraph.py"} <= together
    assert "tests/test_durations.py" not in together and "tests/core/test_sessions.py" not in together
    scheduler = pytest_xdist_make_scheduler(_Config("load"), None)
    assert scheduler._split_scope("tests/ui/test_browser.py::test_a[x]") == "tests/ui/test_browser.py"
    assert scheduler._split_scope("tests/core/test_import.py::test_b[local-1]") == "tests/core/test_import.py"
    assert scheduler._split_scope("tests/test_durations.py::test_c[1]") == "tests/test_durations.py::test_c[1]"


@pytest.mark.parametrize("dist", ["loadfile", "loadscope", "worksteal"])
def test_an_explicit_dist_is_pytest_xdists_own(dist):
    assert pytest_xdist_make_scheduler(_Config(dist), None) is None


def test_groups_go_first_then_the_slow_tests_then_the_rest():
    scheduler = pytest_xdist_make_scheduler(_Config("load", workers=1), None)
    collection = ["tests/core/test_sessions.py::test_a", "tests/reliability/test_fuzz.py::test_b",
                  "tests/core/test_import.py::test_c[1]", "tests/core/test_import.py::test_c[2]",
                  "tests/test_durations.py::test_d", "tests/cli/test_readme.py::test_e"]
    scheduler.add_node(_Node("gw0"))
    scheduler.add_node_collection(scheduler.nodes[0], collection)
    scheduler.schedule()
    sent = scheduler.nodes[0].sent
    assert sent[:2] == [[2, 3], [1]]  # test_import's two together, then the fuzz test
    assert list(scheduler.workqueue) == ["tests/cli/test_readme.py::test_e", "tests/core/test_sessions.py::test_a",
                                         "tests/test_durations.py::test_d"]


class _Node:
    """What the scheduler knows of a worker: the tests sent to it (by their index in its collection)."""

    def __init__(self, name):
        self.gateway = type("Gateway", (), {"id": name})()
        self.sent, self.shutting_down = [], False

    def send_runtest_some(self, indices):
        self.sent.append(list(indices))

    def shutdown(self):
        self.shutting_down = True
