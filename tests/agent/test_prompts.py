"""The system prompt speaks of what the modality gives: a screen only when there is one."""

from mcpworld.agent.prompts import system_prompt


def test_gui_prompt_names_the_screen_and_its_coordinates() -> None:
    text = system_prompt("", ["computer", "done"], 1000, 1000, "normalized_1000")
    assert "Linux desktop" in text and "1000x1000" in text and "normalised to 0-1000" in text


def test_mcp_prompt_has_no_desktop_and_lists_the_server_tools() -> None:
    text = system_prompt("", ["filesystem-write_file", "local-claim_done", "done"], 1000, 1000, "pixels")
    assert "desktop" not in text and "screen" not in text
    assert "filesystem-write_file, local-claim_done, done" in text


def test_hybrid_and_cli_prompts() -> None:
    hybrid = system_prompt("", ["computer", "filesystem-read_file", "done"], 1024, 768, "pixels")
    assert "desktop and its applications' tool servers" in hybrid and "1024x768" in hybrid
    assert "Linux shell" in system_prompt("", ["bash", "done"], 1000, 1000, "pixels")


def test_a_custom_template_may_use_the_same_fields() -> None:
    assert system_prompt("{role}|{tools}", ["bash"], 1, 1, "pixels") == "an agent working in a Linux shell|bash"
