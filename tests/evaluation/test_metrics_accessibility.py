"""check_accessibility_tree over trees in the dump's XML shape (prefixes st/attr/cp/val)."""

import pytest

from mcpworld.core.errors import UserError
from mcpworld.env.a11y_dump import NAMESPACES
from mcpworld.evaluation.metrics.accessibility import check_accessibility_tree

NS = " ".join(f'xmlns:{p}="{uri}"' for p, uri in NAMESPACES.items())
TREE = f"""<desktop-frame {NS} name="desktop">
  <application name="Thunderbird">
    <frame name="Account Setup" st:active="true" attr:toolkit="gtk" cp:size="(800, 600)">
      <entry name="Email address" st:focused="true">anonym-x2024@outlook.com</entry>
      <password-text name="password" st:editable="true"></password-text>
      <push-button name="Continue" st:sensitive="true">Continue</push-button>
      <slider name="Volume" val:value="70.0" val:min="0.0" val:max="100.0"/>
    </frame>
  </application>
</desktop-frame>"""


def test_xpath_rules_all_found_scores_one():
    rules = [{"xpath": "//entry[text()='anonym-x2024@outlook.com']"}, {"xpath": '//*[@name="password"]'}]
    assert check_accessibility_tree(TREE, rules) == 1.0


def test_a_rule_matching_nothing_scores_zero():
    assert check_accessibility_tree(TREE, [{"xpath": "//entry"}, {"xpath": "//check-box"}]) == 0.0


def test_namespaced_states_and_attributes_in_xpath_and_css():
    assert (
        check_accessibility_tree(TREE, [{"xpath": '//*[@st:focused="true"]', "text": "anonym-x2024@outlook.com", "exact": True}])
        == 1.0
    )
    assert (
        check_accessibility_tree(
            TREE, [{"selectors": ['application[name="Thunderbird"] frame[attr|toolkit=gtk] > push-button[st|sensitive=true]']}]
        )
        == 1.0
    )
    assert check_accessibility_tree(TREE, [{"selectors": ["slider[val|value='70.0']"]}]) == 1.0
    assert check_accessibility_tree(TREE, [{"selectors": ["slider[val|value='10.0']"]}]) == 0.0


def test_exact_text_is_all_or_nothing_and_fuzzy_text_is_a_ratio():
    exact = {"selectors": ["entry"], "text": "anonym-x2024@outlook.co", "exact": True}
    assert check_accessibility_tree(TREE, [exact]) == 0.0
    fuzzy = check_accessibility_tree(TREE, [dict(exact, exact=False)])
    assert 0.9 < fuzzy < 1.0


def test_best_element_counts_and_scores_multiply():
    # two buttons-or-entries match; the best text wins; two fuzzy rules multiply
    rule = {"selectors": ["entry", "push-button"], "text": "Continue"}
    assert check_accessibility_tree(TREE, [rule]) == 1.0
    half = {"selectors": ["push-button"], "text": "Contin"}
    single = check_accessibility_tree(TREE, [half])
    assert check_accessibility_tree(TREE, [half, half]) == pytest.approx(single * single)


@pytest.mark.parametrize("result", [None, "", "not xml <", 42])
def test_missing_or_broken_tree_scores_zero(result):
    assert check_accessibility_tree(result, [{"xpath": "//entry"}]) == 0.0


@pytest.mark.parametrize(
    "rules, fragment",
    [
        (None, "non-empty list"),
        ([], "non-empty list"),
        ([{"text": "x"}], "needs 'xpath' or a non-empty 'selectors'"),
        ([{"xpath": "//entry["}], "not valid XPath"),
        ([{"xpath": "//zz:entry"}], "not valid XPath"),
        ([{"selectors": ["entry[[["]}], "not valid CSS"),
    ],
)
def test_bad_rules_name_the_metric_and_the_rule(rules, fragment):
    with pytest.raises(UserError, match=fragment) as info:
        check_accessibility_tree(TREE, rules)
    assert "check_accessibility_tree" in str(info.value)


def test_a_single_rule_object_and_the_osname_option_are_accepted():
    assert check_accessibility_tree(TREE, {"xpath": "//slider"}, osname="ubuntu") == 1.0


def test_external_entities_are_not_read(tmp_path):
    (tmp_path / "secret").write_text("secret")
    evil = (
        f'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file://{tmp_path}/secret">]>'
        f'<desktop-frame {NS}><label name="l">&x;</label></desktop-frame>'
    )
    assert check_accessibility_tree(evil, [{"selectors": ["label"]}]) == 1.0  # parsed
    assert check_accessibility_tree(evil, [{"selectors": ["label"], "text": "secret", "exact": True}]) == 0.0


def test_check_left_panel():
    from mcpworld.evaluation.metrics.accessibility import check_left_panel

    frame = '<frame name="deck.pptx - LibreOffice Impress"><document-frame name="{}"/></frame>'
    assert check_left_panel(f"<desktop-frame {NS}>{frame.format('Slides View')}</desktop-frame>") == 1.0
    assert check_left_panel(f"<desktop-frame {NS}>{frame.format('Outline View')}</desktop-frame>") == 0.0
    assert check_left_panel(f'<desktop-frame {NS}><panel name="Slides View"/></desktop-frame>') == 0.0
    assert check_left_panel("not xml <") == 0.0
    assert check_left_panel(None) == 0.0
