#!/usr/bin/env node
// Tokenise every .cuasm file in a directory with the TextMate grammar (as VS Code does, via
// vscode-textmate + vscode-oniguruma) and fail on instruction lines without an opcode scope or with
// tokens the grammar leaves unscoped.
//   node scripts/grammar-sweep.js [DIR]     (default: the bundled corpus, ../sass_lsp/corpus/sm_90)
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const root = path.resolve(__dirname, "..");
const vt = require(path.join(root, "node_modules/vscode-textmate"));
const onig = require(path.join(root, "node_modules/vscode-oniguruma"));

(async () => {
  const dir = process.argv[2] || path.join(root, "../sass_lsp/corpus/sm_90");
  await onig.loadWASM(fs.readFileSync(path.join(root, "node_modules/vscode-oniguruma/release/onig.wasm")).buffer);
  const registry = new vt.Registry({
    onigLib: Promise.resolve({ createOnigScanner: (p) => new onig.OnigScanner(p), createOnigString: (s) => new onig.OnigString(s) }),
    loadGrammar: async () => vt.parseRawGrammar(fs.readFileSync(path.join(root, "syntaxes/cuasm.tmLanguage.json"), "utf8"), "cuasm.json"),
  });
  const grammar = await registry.loadGrammar("source.cuasm");
  const problems = new Set();
  let nLines = 0;
  let nInstrs = 0;
  const files = fs.readdirSync(dir).filter((f) => f.endsWith(".cuasm"));
  for (const file of files) {
    let stack = vt.INITIAL;
    for (const line of fs.readFileSync(path.join(dir, file), "utf8").split("\n")) {
      const { tokens, ruleStack } = grammar.tokenizeLine(line, stack);
      stack = ruleStack;
      nLines++;
      const scoped = tokens.map((t) => ({ text: line.slice(t.startIndex, t.endIndex).trim(), scope: t.scopes.slice(1).join(" ") }));
      if (/^\s*\[/.test(line)) {
        nInstrs++;
        if (!scoped.some((t) => t.scope.includes("keyword.mnemonic"))) problems.add(`${file}: no opcode: ${line.trim()}`);
        for (const t of scoped) {
          if (t.text && (t.scope === "meta.instruction.cuasm" || t.scope.endsWith("variable.other.constant.cuasm"))) {
            problems.add(`${file}: unscoped '${t.text}' in: ${line.trim()}`);
          }
        }
      } else {
        for (const t of scoped) if (t.text && t.scope === "") problems.add(`${file}: unscoped '${t.text}' in: ${line.trim()}`);
      }
    }
  }
  console.log(`${files.length} files, ${nLines} lines, ${nInstrs} instructions: ${problems.size} problem(s)`);
  for (const p of [...problems].slice(0, 50)) console.log(`  ${p}`);
  process.exit(problems.size ? 1 : files.length ? 0 : 2);
})();
