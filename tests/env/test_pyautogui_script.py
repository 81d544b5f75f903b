"""OSWorld's pyautogui one-liners become input actions without running the script."""

import pytest

from mcpworld.core.errors import TaskFileError
from mcpworld.core.pyautogui_script import Pause, Unsupported, parse, script_of
from mcpworld.core.steps import unreplayable, validate_steps

SAVE = "import pyautogui; import time; pyautogui.hotkey('ctrl', 's'); time.sleep(0.5); pyautogui.press('enter');"


@pytest.mark.parametrize(
    "command",
    [
        ["python", "-c", SAVE],
        ["python3", "-c", SAVE],
        ["/usr/bin/python3.11", "-c", SAVE],
        f'python -c "{SAVE}"',
    ],
)
def test_script_of_finds_the_source_in_list_and_string_commands(command):
    assert script_of(command) == SAVE


@pytest.mark.parametrize(
    "command", [["python", "script.py"], ["bash", "-c", SAVE], "python -c 'print(1)'", 'python -c "unbalanced']
)
def test_other_commands_are_not_scripts(command):
    assert script_of(command) is None


def test_the_save_idiom():
    assert parse(SAVE) == [{"kind": "key", "keys": "ctrl+s"}, Pause(0.5), {"kind": "key", "keys": "enter"}]


def test_every_supported_call():
    source = (
        "import pyautogui as pg\nimport time\n"
        "pg.typewrite('hi there', interval=0.01)\npg.write(['a', 'enter'])\n"
        "pg.press(['down', 'down'], presses=2)\npg.click(10, 20)\npg.click()\n"
        "pg.doubleClick(x=5, y=6)\npg.rightClick((7, 8))\npg.tripleClick(1, 2)\n"
        "pg.click(3, 4, button='middle', clicks=2)\npg.moveTo(100, 200)\n"
        "pg.scroll(-3)\npg.scroll(2, x=9, y=9)\ntime.sleep(1)\n"
    )
    assert parse(source) == [
        {"kind": "type", "text": "hi there"},
        {"kind": "key", "keys": "a"},
        {"kind": "key", "keys": "enter"},
        *[{"kind": "key", "keys": "down"}] * 4,
        {"kind": "click", "button": 1, "count": 1, "x": 10.0, "y": 20.0},
        {"kind": "click", "button": 1, "count": 1},
        {"kind": "click", "button": 1, "count": 2, "x": 5.0, "y": 6.0},
        {"kind": "click", "button": 3, "count": 1, "x": 7.0, "y": 8.0},
        {"kind": "click", "button": 1, "count": 3, "x": 1.0, "y": 2.0},
        {"kind": "click", "button": 2, "count": 2, "x": 3.0, "y": 4.0},
        {"kind": "move", "x": 100.0, "y": 200.0},
        {"kind": "scroll", "direction": "down", "amount": 3},
        {"kind": "scroll", "direction": "up", "amount": 2, "x": 9.0, "y": 9.0},
        Pause(1.0),
    ]


@pytest.mark.parametrize(
    "source, named",
    [
        ("import pyautogui; pyautogui.locateOnScreen('x.png')", "pyautogui.locateOnScreen()"),
        ("import pyautogui, os; os.system('rm -rf /')", "import pyautogui, os"),
        ("import pyautogui; x = 1", "x = 1"),
        ("import pyautogui; pyautogui.typewrite(open('/etc/passwd').read())", "non-literal"),
        ("import pyautogui; time.sleep(1)", "time.sleep(1)"),
        ("import pyautogui; import time; time.time()", "time.time()"),
        ("import pyautogui; pyautogui.click(1, 2, button='x1')", "button 'x1'"),
        ("import pyautogui; pyautogui.hotkey(1)", "key names"),
        ("import pyautogui; pyautogui.hotkey(", "not valid Python"),
    ],
)
def test_anything_else_is_named_and_nothing_runs(source, named):
    with pytest.raises(Unsupported, match=named.replace("(", r"\(").replace(")", r"\)")):
        parse(source)


def test_validation_rejects_an_unreplayable_step_with_the_call_named():
    bad = {"execute": {"command": ["python", "-c", "import pyautogui; pyautogui.screenshot('a.png')"]}}
    with pytest.raises(TaskFileError, match=r"task.yaml: setup\[0\]: step 'execute': .*pyautogui.screenshot\(\)"):
        validate_steps([bad], "task.yaml")
    validate_steps([{"execute": {"command": ["python", "-c", SAVE]}}], "task.yaml")
    assert unreplayable("launch", {"command": ["python", "-c", "import pyautogui; pyautogui.x()"]}) is None


def test_a_hotkey_given_a_list_stops_the_script_there_as_pyautogui_raises():
    from mcpworld.core.pyautogui_script import Raises

    steps = parse("import pyautogui; pyautogui.press('a'); pyautogui.hotkey(['ctrl', 'q']); pyautogui.press('b')")
    assert steps[0] == {"kind": "key", "keys": "a"}
    assert isinstance(steps[1], Raises) and "AttributeError" in steps[1].why and len(steps) == 2


def test_screen_placeholders_are_filled_from_the_screen_size():
    from mcpworld.core.steps import fill_screen

    command = ["python", "-c", "import pyautogui; pyautogui.click({SCREEN_WIDTH_HALF}, {SCREEN_HEIGHT_HALF})"]
    filled = fill_screen(command, 1024, 768)
    assert parse(filled[2]) == [{"kind": "click", "button": 1, "count": 1, "x": 512.0, "y": 384.0}]
    assert fill_screen("xdotool mousemove {SCREEN_WIDTH} {SCREEN_HEIGHT}", 1000, 800) == "xdotool mousemove 1000 800"


def test_mouse_down_and_up_press_and_release_in_place_or_after_moving():
    """OSWorld's Impress task 21760ecb clicks into a text box with doubleClick, mouseDown, mouseUp."""
    assert parse("import pyautogui; pyautogui.mouseDown(); pyautogui.mouseUp()") == [
        {"kind": "down", "button": 1},
        {"kind": "up", "button": 1},
    ]
    assert parse("import pyautogui; pyautogui.mouseDown(10, 20, 'right'); pyautogui.mouseUp(x=30, y=40)") == [
        {"kind": "move", "x": 10.0, "y": 20.0},
        {"kind": "down", "button": 3},
        {"kind": "move", "x": 30.0, "y": 40.0},
        {"kind": "up", "button": 1},
    ]


def test_every_step_kind_loaders_accept_is_one_a_desktop_runs():
    """The vocabulary (core/steps.py REQUIRED, what loaders check) and the runners (env/steps.py) name one set."""
    from mcpworld.core.steps import REQUIRED
    from mcpworld.env.steps import STEPS

    assert set(REQUIRED) == set(STEPS)
