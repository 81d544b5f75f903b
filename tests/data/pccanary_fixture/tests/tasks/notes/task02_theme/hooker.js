// Frida-style hook (not injected by mcpworld yet): reports the theme when the app applies it.
send({event: "script_initialized", message: "theme hook ready"});
