import pytest

from mcpworld.core.errors import InfraError, UserError
from mcpworld.evaluation.metrics.system import (
    check_gnome_favorite_apps,
    check_python_file_by_test_suite,
    is_in_vm_clickboard,
    is_utc_0,
)
from mcpworld.evaluation.registry import METRICS, get_metric, metric_needs_env
from mcpworld.evaluation.spec import evaluate_spec


def test_system_metrics_are_registered():
    assert {"is_in_vm_clickboard", "is_utc_0", "check_gnome_favorite_apps", "check_python_file_by_test_suite"} <= set(METRICS)
    assert metric_needs_env(get_metric("check_python_file_by_test_suite"))
    assert not metric_needs_env(get_metric("is_utc_0"))


# --- clipboard ------------------------------------------------------------------------------------


def test_is_in_vm_clickboard():
    rule = {"expected": "/home/user/Data3/List3/secret.docx"}
    # OSWorld's task: the rule is the result, the clipboard the expected value
    assert is_in_vm_clickboard(rule, "/home/user/Data3/List3/secret.docx") == 1.0
    assert is_in_vm_clickboard("/home/user/Data3/List3/secret.docx\n", rule) == 1.0
    assert is_in_vm_clickboard(rule, "/home/user/Data1/List1/secret.docx") == 0.0
    assert is_in_vm_clickboard({"expected": ["a", "b"]}, "b then a") == 1.0
    assert is_in_vm_clickboard({"expected": ["a", "c"]}, "b then a") == 0.0
    assert is_in_vm_clickboard(rule, None) == 0.0
    with pytest.raises(UserError, match="expected"):
        is_in_vm_clickboard({"text": "x"}, "x")


# --- time zone ------------------------------------------------------------------------------------

TIMEDATECTL = """               Local time: Thu 2024-01-25 12:56:06 {abbr}
           Universal time: Thu 2024-01-25 12:56:06 UTC
                 RTC time: Thu 2024-01-25 12:56:05
                Time zone: {zone}
System clock synchronized: yes
              NTP service: inactive
          RTC in local TZ: no
"""


def test_is_utc_0():
    assert is_utc_0(TIMEDATECTL.format(abbr="WET", zone="Atlantic/Faroe (WET, +0000)")) == 1.0
    assert is_utc_0(TIMEDATECTL.format(abbr="UTC", zone="Etc/UTC (UTC, +0000)")) == 1.0
    assert is_utc_0(TIMEDATECTL.format(abbr="CET", zone="Europe/Berlin (CET, +0100)")) == 0.0
    # no RTC line: the zone is not on the fourth line any more
    no_rtc = TIMEDATECTL.format(abbr="UTC", zone="Etc/UTC (UTC, +0000)").replace(
        "                 RTC time: Thu 2024-01-25 12:56:05\n", ""
    )
    assert is_utc_0(no_rtc) == 1.0
    assert is_utc_0("") == 0.0
    assert is_utc_0(None) == 0.0


# --- favourite apps -------------------------------------------------------------------------------


def test_check_gnome_favorite_apps():
    rules = {"expected": ["google-chrome.desktop", "thunderbird.desktop"]}
    assert check_gnome_favorite_apps("['thunderbird.desktop', 'google-chrome.desktop']\n", rules) == 1.0
    assert check_gnome_favorite_apps("['thunderbird.desktop', 'vim.desktop', 'google-chrome.desktop']", rules) == 0.0
    assert check_gnome_favorite_apps("['thunderbird.desktop', 'thunderbird.desktop']", rules) == 0.0
    assert check_gnome_favorite_apps("", rules) == 0.0
    assert check_gnome_favorite_apps(None, rules) == 0.0
    with pytest.raises(UserError, match="list"):
        check_gnome_favorite_apps("[]", {"expected": "vim.desktop"})


# --- test suite -----------------------------------------------------------------------------------

SNAKE = """
class Snake:
    def __init__(self):
        self.body = [(5, 5)]
    def eats(self, food):
        return self.body[0] == food{bug}
"""

SUITE = """
from snake import Snake

def test():
    return Snake().eats((5, 5))

def half():
    return 0.5

def big():
    return 7

def words():
    return "yes"

def boom():
    raise RuntimeError("no")
"""


@pytest.fixture
def suite(local):
    return local("test_suite.py", SUITE)


def test_check_python_file_by_test_suite(env, local, suite):
    good = local("snake.py", SNAKE.format(bug=""))
    assert check_python_file_by_test_suite([good, None], suite, env=env) == 1.0
    for function, score in (("half", 0.5), ("big", 1.0), ("words", 1.0), ("boom", 0.0), ("absent", 0.0)):
        assert check_python_file_by_test_suite([good], suite, env=env, test_function_name=function) == score
    # the suite ran inside the environment, in a temporary folder that is gone afterwards
    assert any("python3 -c" in call for call in env.shell_calls)
    assert any(call.startswith("rm -rf") for call in env.shell_calls)


def test_check_python_file_by_test_suite_fails_the_agents_bugs(env, local, suite, tmp_path):
    assert check_python_file_by_test_suite([local("snake.py", SNAKE.format(bug=" and False"))], suite, env=env) == 0.0
    assert check_python_file_by_test_suite([local("snake.py", SNAKE.format(bug=" +"))], suite, env=env) == 0.0  # syntax error
    hangs = local("snake.py", "import time\ntime.sleep(30)\n")
    assert check_python_file_by_test_suite([hangs], suite, env=env, timeout=1) == 0.0
    # the agent's file missing (vm_file gives None), nothing fetched, no suite
    assert check_python_file_by_test_suite([None], suite, env=env) == 0.0
    assert check_python_file_by_test_suite(None, suite, env=env) == 0.0
    assert check_python_file_by_test_suite([local("x.py", "")], str(tmp_path / "missing.py"), env=env) == 0.0


def test_check_python_file_by_test_suite_large_files(env, local, suite):
    padding = "# " + "x" * 200 + "\n"
    big = local("snake.py", padding * 2000 + SNAKE.format(bug=""))  # ~400 kB: written in pieces
    assert check_python_file_by_test_suite([big], suite, env=env) == 1.0


def test_check_python_file_by_test_suite_needs_env(local, suite):
    with pytest.raises(InfraError, match="environment"):
        check_python_file_by_test_suite([local("snake.py", SNAKE.format(bug=""))], suite)
    with pytest.raises(UserError, match="test_function_name"):
        check_python_file_by_test_suite([suite], suite, env=object(), test_function_name="x; rm")


def test_the_evaluator_passes_the_environment(env):
    env.write("Desktop/snake/snake.py", SNAKE.format(bug=""))
    env.write("suite/test.py", SUITE)
    spec = {
        "func": "check_python_file_by_test_suite",
        "result": {"type": "vm_file", "multi": True, "path": ["~/Desktop/snake/snake.py"], "dest": ["snake.py"]},
        "expected": {"type": "vm_file", "path": "~/suite/test.py", "dest": "test_suite.py"},
    }
    score, outcomes = evaluate_spec(env, spec, "DONE")
    assert score == 1.0, outcomes
    with pytest.raises(UserError, match="no option 'env'"):
        evaluate_spec(env, {**spec, "options": {"env": 1}}, "DONE")


def test_osworld_edge_cases_of_favourites_and_time_zone():
    rules = {"expected": ["google-chrome.desktop", "thunderbird.desktop"]}
    # OSWorld eval'd the output: a tuple counts, GVariant's "@as []" does not parse (0)
    assert check_gnome_favorite_apps("('thunderbird.desktop', 'google-chrome.desktop')", rules) == 1.0
    assert check_gnome_favorite_apps("@as []", {"expected": []}) == 0.0
    twice = "['thunderbird.desktop', 'thunderbird.desktop']"
    assert check_gnome_favorite_apps(twice, {"expected": ["thunderbird.desktop", "x"]}) == 0.0
    # the time-zone line is taken as it is: a trailing space or \r fails, as in OSWorld
    from mcpworld.evaluation.metrics.system import is_utc_0

    assert is_utc_0("a\nb\nc\n  Time zone: Etc/UTC (UTC, +0000)\n") == 1.0
    assert is_utc_0("a\nb\nc\n  Time zone: Etc/UTC (UTC, +0000) \n") == 0.0
    assert is_utc_0("a\nb\nc\n  Time zone: Etc/UTC (UTC, +0000)\r\n") == 0.0
