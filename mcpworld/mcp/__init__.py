"""MCP servers: the catalog, per-episode lifecycle and client pool, the recording proxy, and the
Klavis remote sandbox client. Below the agent: nothing here imports the agent, tasks or evaluation."""
