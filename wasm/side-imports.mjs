// SPDX-License-Identifier: MIT
// side-imports.mjs - prints, as a JSON list for -sEXPORTED_FUNCTIONS, what
// the given side modules import from the main module (libc functions and
// data), so that a MAIN_MODULE=2 link keeps and exports exactly those.
//   node side-imports.mjs [--add _main,...] rayo-scalar.so rayo-wasm.so > exports.json
// --add: more names to export (main for a program, malloc/free for the JS API);
// --js-provides PREFIX: imports named PREFIX... are JS functions the main
// module's --pre-js provides (the webgpu plugin's), not C symbols.
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const names = new Set();
const files = [];
const jsPrefixes = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--add') args[++i].split(',').forEach((n) => names.add(n));
  else if (args[i] === '--js-provides') jsPrefixes.push(args[++i]);
  else files.push(args[i]);
}
// provided by the linker or the loader, not by the main module's code
const builtin = new Set(['memory', '__indirect_function_table', '__stack_pointer',
  '__memory_base', '__table_base']);
for (const file of files) {
  const module = new WebAssembly.Module(readFileSync(file));
  for (const imp of WebAssembly.Module.imports(module)) {
    const isSymbol = imp.module === 'env' || imp.module === 'GOT.mem' || imp.module === 'GOT.func';
    const fromJs = jsPrefixes.some((p) => imp.name.startsWith(p));
    if (isSymbol && !builtin.has(imp.name) && !fromJs) names.add('_' + imp.name);
  }
}
console.log(JSON.stringify([...names].sort()));
