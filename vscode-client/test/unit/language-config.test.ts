import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

const CLIENT_DIR = path.resolve(__dirname, "../..");
const config = JSON.parse(readFileSync(path.join(CLIENT_DIR, "language-configuration.json"), "utf8"));
const pairs: { open: string; close: string }[] = config.autoClosingPairs;
const CORPUS = path.join(CLIENT_DIR, "..", "sass_lsp", "corpus", "sm_90", "triton_add.cuasm");

// VS Code's auto-closing as it acts on text typed left to right at the end of a line: when the typed
// character completes a pair's `open`, its `close` is inserted after the cursor; typing a character that
// equals the next auto-inserted one steps over it (autoClosingOvertype "auto"). Scopes (`notIn`) are not
// modelled: that only adds closes, each of which the model then steps over or leaves standing.
function typeLine(line: string): string {
  let before = "";
  let after = ""; // auto-inserted text right of the cursor
  for (const ch of line) {
    if (after.startsWith(ch)) {
      before += ch;
      after = after.slice(1);
      continue;
    }
    before += ch;
    const pair = pairs.find((p) => before.endsWith(p.open));
    if (pair) after = pair.close + after;
  }
  return before + after;
}

test("typing an address comment leaves exactly what was typed", () => {
  assert.equal(typeLine("/*0000*/"), "/*0000*/");
  assert.equal(typeLine("[B------:R-:W0:-:S01]  /*0010*/  S2R R0, SR_TID.X ;"), "[B------:R-:W0:-:S01]  /*0010*/  S2R R0, SR_TID.X ;");
});

test("every line of a corpus file typed by hand comes out unchanged", () => {
  const lines = readFileSync(CORPUS, "utf8").split("\n");
  assert.ok(lines.length > 500);
  const changed = lines.filter((line) => typeLine(line) !== line);
  assert.deepEqual(changed.slice(0, 3), []);
});

test("brackets, parentheses, braces and quotes still auto-close", () => {
  assert.deepEqual(pairs.map((p) => p.open).sort(), ['"', "(", "[", "{"]);
  assert.equal(typeLine("c[0x0"), "c[0x0]");
});
