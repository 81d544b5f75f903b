#!/bin/bash
# PC-Canary's GIMP hooks find their functions with Frida's Module.enumerateSymbols, which reads only an
# ELF's own symbol table (.symtab); Debian ships gimp-2.10 stripped (no .symtab, and the debug archive
# with its -dbgsym is not reachable here), so every hook reported `symbol_not_found`. GIMP does export
# its app functions (.dynsym, for plug-in modules): this copies those exported entries, unchanged, into
# a .symtab of a copy of Debian's binary (objcopy adds non-loaded sections only; code and segments stay
# byte for byte) and puts the copy in place with a dpkg diversion, so the package's file is kept and
# `remove` restores it. Static functions (not exported) stay invisible: only a rebuild can name them.
#   mcpworld/data/scripts/pccanary-symbols.sh [install|remove|status]   (root; idempotent)
set -euo pipefail
bin=/usr/bin/gimp-2.10
kept=$bin.debian-stripped
stamp=/var/lib/mcpworld/pccanary-symbols.gimp-version  # the gimp package version the copy was made from

status() {
  if dpkg-divert --list "$bin" | grep -q "$kept"; then
    echo "gimp-2.10: diverted to $kept, $(nm "$bin" 2>/dev/null | wc -l) symbols in $bin's .symtab"
  else
    echo "gimp-2.10: Debian's binary as packaged ($(nm "$bin" 2>&1 | head -1))"
  fi
}

install_symtab() {
  if dpkg-divert --list "$bin" | grep -q "$kept"; then
    if [ "$(dpkg-query -W -f='${Version}' gimp)" = "$(cat "$stamp" 2>/dev/null)" ]; then
      status; return
    fi
    remove_symtab   # the gimp package changed under the diversion: redo it from the new binary
  fi
  local src=$bin work opts text_hex
  work=$(mktemp -d)
  opts=$work/symbols.opts
  # Section index and address of .text, where every exported function lives.
  read -r text_index text_hex < <(readelf -S -W "$src" | sed 's/\[ */[/' |
    awk '$2==".text" {gsub(/[][]/, "", $1); print $1, $4}')
  readelf --dyn-syms -W "$src" | awk -v ndx="$text_index" '$4=="FUNC" && $7==ndx {sub(/@.*/, "", $8); print $2, $8}' |
    while read -r addr name; do
      printf -- '--add-symbol=%s=.text:0x%x,global,function\n' "$name" $((0x$addr - 0x$text_hex))
    done >"$opts"
  objcopy @"$opts" "$src" "$work/gimp-2.10"
  # The loaded image must be Debian's exactly: same program headers, same bytes in every loaded section.
  diff <(readelf -l -W "$src" | grep -E 'LOAD|DYNAMIC') <(readelf -l -W "$work/gimp-2.10" | grep -E 'LOAD|DYNAMIC')
  for section in .text .rodata .data .data.rel.ro .dynsym .dynstr; do
    objcopy -O binary --only-section="$section" "$src" "$work/before"
    objcopy -O binary --only-section="$section" "$work/gimp-2.10" "$work/after"
    cmp -s "$work/before" "$work/after" ||
      { echo "pccanary-symbols: $section differs after objcopy; leaving $bin alone" >&2; rm -rf "$work"; exit 1; }
  done
  "$work/gimp-2.10" --version >/dev/null
  install -m 0755 "$work/gimp-2.10" "$bin.pcc-new"
  dpkg-divert --local --rename --divert "$kept" --add "$bin" >/dev/null
  mv -f "$bin.pcc-new" "$bin"
  mkdir -p "$(dirname "$stamp")"; dpkg-query -W -f='${Version}' gimp >"$stamp"
  echo "gimp-2.10: $(wc -l <"$opts") exported functions written to .symtab (Debian's file kept as $kept)"
  rm -rf "$work"
}

remove_symtab() {
  dpkg-divert --list "$bin" | grep -q "$kept" || { status; return; }
  rm -f "$bin" "$stamp"
  dpkg-divert --local --rename --divert "$kept" --remove "$bin" >/dev/null
  status
}

case "${1:-install}" in
  install) install_symtab ;;
  remove) remove_symtab ;;
  status) status ;;
  *) echo "usage: $0 [install|remove|status]" >&2; exit 2 ;;
esac
