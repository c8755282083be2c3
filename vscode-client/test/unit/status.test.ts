import assert from "node:assert/strict";
import { test } from "node:test";
import { statusText } from "../../src/pure/status";

test("arch from the file; GPU not checked yet", () => {
  const s = statusText({ fileArch: { arch: "sm_90", source: ".__elf_flags" }, serverState: "running" });
  assert.equal(s.text, "$(chip) sm_90 · GPU ?");
  assert.match(s.tooltip, /read from \.__elf_flags/);
  assert.match(s.tooltip, /not checked yet/);
});

test("override and server report win; GPU states as the server reports them", () => {
  const base = { fileArch: { arch: "sm_90", source: ".target" }, serverState: "running" as const };
  assert.equal(statusText({ ...base, archOverride: "sm_80" }).text, "$(chip) sm_80 · GPU ?");
  const ok = statusText({ ...base, server: { arch: "sm_90a", gpu: { available: true, device: "device 0", reason: null } } });
  assert.equal(ok.text, "$(chip) sm_90a · GPU ✓");
  assert.match(ok.tooltip, /device 0 answers/);
  const none = statusText({ ...base, server: { gpu: { available: false, reason: "cuda-python is not installed: install the GPU extra (pip install 'sass-lsp[gpu]')" } } });
  assert.equal(none.text, "$(chip) sm_90 · GPU ✗");
  assert.match(none.tooltip, /No GPU for Time on GPU and Optimize schedule: cuda-python is not installed/);
});

test("unknown arch, failed server", () => {
  const s = statusText({ serverState: "failed" });
  assert.equal(s.text, "$(error) sm_? · GPU ?");
  assert.match(s.tooltip, /failed to start/);
});
