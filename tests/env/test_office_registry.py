"""The warm LibreOffice settings: every golden item kept, the first start's additions added."""

from mcpworld.env.local.office_registry import merged

HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema">\n'
)
TEMPLATE = (
    '<item oor:path="/org.openoffice.Office.Impress/Misc"><prop oor:name="StartWithTemplate" oor:op="fuse">'
    "<value>false</value></prop></item>\n"
)
TIPS = (
    '<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="ShowTipOfTheDay" oor:op="fuse">'
    "<value>{}</value></prop></item>\n"
)
CHECK = (
    '<item oor:path="/org.openoffice.Setup/Office"><prop oor:name="LastCompatibilityCheckID" oor:op="fuse">'
    "<value>40(Build:2)</value></prop></item>\n"
)
LOGGING = (
    '<item oor:path="/org.openoffice.Office.Logging/Settings"><node oor:name="unopkg" oor:op="replace">\n'
    '<prop oor:name="LogLevel" oor:op="fuse"><value>2147483647</value></prop></node></item>\n'
)


def test_golden_items_survive_and_new_ones_are_added():
    golden = HEAD + TEMPLATE + TIPS.format("false") + "</oor:items>\n"
    started = HEAD + TIPS.format("true") + CHECK + LOGGING + "</oor:items>\n"  # dropped Impress's item
    out = merged(golden, started)
    assert TEMPLATE in out  # kept although the first start dropped it
    assert TIPS.format("false") in out and TIPS.format("true") not in out  # the golden value wins
    assert CHECK in out and LOGGING in out  # what makes later starts fast
    assert out.startswith(golden[: -len("</oor:items>\n")]) and out.endswith("</oor:items>\n")


def test_nothing_new_leaves_the_golden_file_as_it_is():
    golden = HEAD + TEMPLATE + "</oor:items>\n"
    assert merged(golden, HEAD + "</oor:items>\n") == golden
