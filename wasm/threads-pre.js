// SPDX-License-Identifier: MIT
// threads-pre.js - --pre-js of the threaded core (wasm/wasm.mk, THREADS=1).
// Emscripten 3.1.6 never loads a library dlopen'd after start in the other
// threads (a worker calling into one traps: "table index is out of
// bounds"), so rayo.mjs has every thread load the side modules at start, in
// the same order (Module.dynamicLibraries, named by their paths under
// /plugins, as the core's loader then opens them).  The runtime fetches
// those names as URLs: they are read from the plugins/ folder beside this
// module instead (the main thread: Module.locateFile; a worker: next to its
// script, rayo-core.worker.js, which is beside this module).
(function () {
  var libs = Module['dynamicLibraries'] || [];
  var pthread = Module['ENVIRONMENT_IS_PTHREAD'];
  var open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url) {
    var args = Array.prototype.slice.call(arguments);
    if (libs.indexOf(url) >= 0) {
      var rel = url.slice(1);
      args[1] = pthread ? new URL(rel, self.location.href).href : Module['locateFile'](rel);
    }
    return open.apply(this, args);
  };
})();
