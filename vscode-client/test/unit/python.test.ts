import assert from "node:assert/strict";
import { test } from "node:test";
import { choosePython, IMPORT_CHECK_ARGS, installAdvice } from "../../src/pure/python";

test("setting, then the Python extension, then python3", () => {
  assert.deepEqual(choosePython("/opt/venv/bin/python", "/usr/bin/python3.11"), { command: "/opt/venv/bin/python", source: "setting" });
  assert.deepEqual(choosePython("  ", "/usr/bin/python3.11"), { command: "/usr/bin/python3.11", source: "python-extension" });
  assert.deepEqual(choosePython(undefined, undefined), { command: "python3", source: "default" });
});

test("the import check imports the server and pygls", () => {
  assert.equal(IMPORT_CHECK_ARGS[0], "-c");
  for (const mod of ["sass_lsp", "sass_lsp.server", "pygls", "lsprotocol"]) assert.match(IMPORT_CHECK_ARGS[1], new RegExp(`\\b${mod.replace(".", "\\.")}\\b`));
});

test("advice names the missing module and gives a pip command for that interpreter", () => {
  const out = "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nModuleNotFoundError: No module named 'sass_lsp'\n";
  const a = installAdvice("/opt/my env/bin/python", out);
  assert.match(a.message, /cannot import 'sass_lsp'/);
  assert.equal(a.installCommand, "\"/opt/my env/bin/python\" -m pip install -e <path to your sass-lsp checkout> pygls lsprotocol");
  assert.match(a.message, /sass-lsp\.pythonPath/);
});

test("advice for a missing pygls only installs pygls", () => {
  const a = installAdvice("python3", "ModuleNotFoundError: No module named 'pygls'");
  assert.equal(a.installCommand, "python3 -m pip install pygls lsprotocol");
});

test("advice for a missing interpreter", () => {
  const a = installAdvice("/nope/python", "spawn /nope/python ENOENT");
  assert.match(a.message, /was not found/);
});
