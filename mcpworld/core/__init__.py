"""The vocabulary every layer shares and nothing below it: the task model, setup steps, input
actions, episode results and statuses, errors, secrets, the rule every HTTP listener takes, paths,
and file fetching. Imports nothing else of mcpworld."""
