// SPDX-License-Identifier: MIT
// node-env.js - --pre-js of the node builds of rayo's tools: Emscripten
// gives a program its own environment, so the RAYO_* variables of the node
// process (RAYO_PLUGIN_PATH, RAYO_LOG, RAYO_BACKEND...) are copied into it.
Module['preRun'] = Module['preRun'] || [];
Module['preRun'].push(function () {
  for (var name in process.env) {
    if (name.indexOf('RAYO_') === 0) ENV[name] = process.env[name];
  }
});
