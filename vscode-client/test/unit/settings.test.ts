import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { CLIENT_ONLY_KEYS, toServerSettings } from "../../src/pure/settings";

const CLIENT_DIR = path.resolve(__dirname, "../..");

test("client-only keys are dropped, empty strings become null", () => {
  const raw = { pythonPath: "/x/python", serverArgs: ["-m", "sass_lsp.server"], trace: { server: "off" }, arch: "", gpuDevice: 1, policyModelPath: "", hazardSeverities: { SASS001: "warning" } };
  assert.deepEqual(toServerSettings(raw), { arch: null, gpuDevice: 1, policyModelPath: null, hazardSeverities: { SASS001: "warning" } });
  assert.deepEqual(toServerSettings({ arch: "sm_90" }), { arch: "sm_90" });
  assert.equal(toServerSettings(null), null);
  assert.equal(toServerSettings([1]), null);
});

test("package.json settings = the server's Settings fields + the client-only keys", () => {
  const pkg = JSON.parse(readFileSync(path.join(CLIENT_DIR, "package.json"), "utf8"));
  const keys = Object.keys(pkg.contributes.configuration.properties).map((k: string) => k.replace(/^sass-lsp\./, "").split(".")[0]);
  const settingsPy = path.join(CLIENT_DIR, "..", "sass_lsp", "ide", "settings.py");
  assert.ok(existsSync(settingsPy), `${settingsPy} not found: the server's Settings dataclass is the reference`);
  const source = readFileSync(settingsPy, "utf8");
  const start = source.indexOf("class Settings");
  const rest = source.slice(source.indexOf("\n", start) + 1);
  const next = rest.search(/^\S/m); // the first top-level line after the class
  const body = next < 0 ? rest : rest.slice(0, next);
  const fields = [...body.matchAll(/^ {4}([A-Za-z_]\w*): [^\n=]+=/gm)].map((m) => m[1]);
  assert.ok(fields.length >= 5, "could not read the Settings fields");
  const serverKeys = keys.filter((k) => !(CLIENT_ONLY_KEYS as readonly string[]).includes(k)).sort();
  assert.deepEqual(serverKeys, [...new Set(fields)].sort());
});
