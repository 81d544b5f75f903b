// Frida hook (PC-Canary's HookManager shape, Frida 16 API): each time the app saves a file through GIO's
// g_file_replace_contents, report the path and the text it wrote.
(function () {
  const replace = Module.findExportByName(null, "g_file_replace_contents");
  if (replace === null) {
    send({event: "error", error_type: "symbol_not_found", message: "g_file_replace_contents is not in this build"});
    return;
  }
  const pathOf = new NativeFunction(Module.findExportByName(null, "g_file_get_path"), "pointer", ["pointer"]);
  Interceptor.attach(replace, {
    onEnter(args) {
      const path = pathOf(args[0]).readUtf8String();
      const text = args[1].readUtf8String(args[2].toInt32());
      send({event: "file_saved", path: path, text: text});
    }
  });
  send({event: "script_initialized", message: "save hook ready"});
})();
