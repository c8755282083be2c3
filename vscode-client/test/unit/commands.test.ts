import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { COMMANDS, presentError, presentResult, serverArguments } from "../../src/pure/commands";

const byId = (id: string) => COMMANDS.find((c) => c.id === id)!;
const pkg = JSON.parse(readFileSync(path.resolve(__dirname, "../../package.json"), "utf8"));

test("every command is contributed, and activates the extension", () => {
  const contributed = pkg.contributes.commands.map((c: { command: string }) => c.command).sort();
  assert.deepEqual(contributed, COMMANDS.map((c) => c.id).sort());
  for (const c of COMMANDS) assert.ok(pkg.activationEvents.includes(`onCommand:${c.id}`), c.id);
  assert.ok(pkg.activationEvents.includes("onLanguage:cuasm"));
});

test("client command ids never collide with the server's (vscode-languageclient registers those)", () => {
  for (const c of COMMANDS) if (c.server) assert.notEqual(c.id, c.server);
});

test("arguments: exactly the document URI (the server's handlers take `uri: str`)", () => {
  assert.deepEqual(serverArguments(byId("cuasm.disassemble"), "file:///w/k.cubin"), ["file:///w/k.cubin"]);
  assert.deepEqual(serverArguments(byId("cuasm.suggestReorders"), "file:///w/k.cuasm"), ["file:///w/k.cuasm"]);
});

test("answers of the existing server commands", () => {
  // sass-lsp.assemble (sass_lsp/server/features/files.py)
  const ok = presentResult(byId("cuasm.assemble"), { ok: true, cubin: "file:///w/k.cubin", bytes: 9216 });
  assert.deepEqual(ok, { kind: "message", severity: "info", text: "Assemble: wrote k.cubin (9216 bytes).", reveal: "file:///w/k.cubin", details: JSON.stringify({ ok: true, cubin: "file:///w/k.cubin", bytes: 9216 }, null, 2) });
  const bad = presentResult(byId("cuasm.assemble"), { ok: false, errors: 2 });
  assert.equal(bad.kind, "message");
  assert.equal(bad.kind === "message" && bad.severity, "error");
  assert.match(bad.kind === "message" ? bad.text : "", /2 error\(s\)/);
  // an untitled document: nothing written, the user is offered "Save As…"
  const unsaved = presentResult(byId("cuasm.assemble"), { ok: false, verdict: "unsaved", message: "Untitled-1 is not saved" });
  assert.deepEqual(unsaved, { kind: "saveAs", text: "Untitled-1 is not saved" });
  // sass-lsp.disassemble returns the new file's URI
  assert.deepEqual(presentResult(byId("cuasm.disassemble"), "file:///w/k%20a.cuasm"), { kind: "open", uri: "file:///w/k%20a.cuasm", text: "Disassemble cubin: opened k a.cuasm." });
});

test("suggestions with edits become a pick list; others a message", () => {
  const edit = { changes: { "file:///w/k.cuasm": [{ range: { start: { line: 1, character: 0 }, end: { line: 2, character: 0 } }, newText: "x\n" }] } };
  const p = presentResult(byId("cuasm.suggestReorders"), { message: "2 reorders", suggestions: [{ title: "Move LDG up", detail: "-12 cycles", edit }, { title: "no edit" }] });
  assert.deepEqual(p, { kind: "pick", text: "2 reorders", choices: [{ title: "Move LDG up", detail: "-12 cycles", edit, command: undefined }] });
  assert.deepEqual(presentResult(byId("cuasm.suggestReorders"), []), { kind: "message", severity: "info", text: "Suggest reorders: nothing to suggest." });
  assert.deepEqual(presentResult(byId("cuasm.check"), null), { kind: "message", severity: "info", text: "Check: done." });
  const t = presentResult(byId("cuasm.timeOnGpu"), { median_us: 4.2, iqr_us: 0.1, gpu: "H200", samples: [1, 2] });
  assert.equal(t.kind === "message" && t.text, "Time on GPU: median_us=4.2, iqr_us=0.1, gpu=H200");
});

test("a command the server lacks is named as a missing server feature", () => {
  const msg = "Command name 'sass-lsp.check' is not defined";
  const p = presentError(byId("cuasm.check"), msg, ["sass-lsp.disassemble", "sass-lsp.assemble"]);
  assert.equal(p.kind === "message" && p.severity, "warning");
  assert.match(p.kind === "message" ? p.text : "", /does not provide 'sass-lsp\.check' yet/);
  const other = presentError(byId("cuasm.assemble"), "boom", ["sass-lsp.assemble"]);
  assert.deepEqual(other, { kind: "message", severity: "error", text: "Assemble failed: boom" });
});

test("sass-lsp.suggestReorders answers (sass_lsp/server/features/actions.py): a pick, or why not", () => {
  const edit = { documentChanges: [{ textDocument: { uri: "file:///w/k.cuasm", version: 4 }, edits: [{ range: { start: { line: 9, character: 0 }, end: { line: 12, character: 40 } }, newText: "a\nb\nc\nd" }] }] };
  const time = { version: 4, title: "Reorder: hoist 2 LDG above FFMA — predicted −6% cycles", kernel: "k", edits: [[10, 13, ["a", "b", "c", "d"]]] };
  const answer = {
    ok: true,
    version: 4,
    message: "1 reorder suggestion(s) for k.cuasm",
    suggestions: [{ title: time.title, detail: "k: 2 move(s); hottest loop 300 → 282 predicted cycles", kernel: "k", moves: ["m1", "m2"], predicted_gain: 0.06, cost_before: 300, cost_after: 282, edit, time }],
  };
  assert.deepEqual(presentResult(byId("cuasm.suggestReorders"), answer), {
    kind: "pick",
    text: "1 reorder suggestion(s) for k.cuasm",
    choices: [{ title: time.title, detail: answer.suggestions[0].detail, edit, command: undefined }],
  });
  const off = { ok: false, message: "Reorder suggestions are off: no policy checkpoint at /p (set sass-lsp.policyModelPath).", suggestions: [] };
  assert.deepEqual(presentResult(byId("cuasm.suggestReorders"), off), { kind: "message", severity: "warning", text: `Suggest reorders: ${off.message}` });
  const none = { ok: true, version: 4, message: "No reorder suggestions for k.cuasm: no move lowers the predicted cycles", suggestions: [] };
  assert.deepEqual(presentResult(byId("cuasm.suggestReorders"), none), { kind: "message", severity: "info", text: `Suggest reorders: ${none.message}` });
});

test("Time on GPU runs the server's sass-lsp.timeEdit", () => {
  assert.equal(byId("cuasm.timeOnGpu").server, "sass-lsp.timeEdit");
});
