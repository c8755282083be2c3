import assert from "node:assert/strict";
import { test } from "node:test";
import { statusText } from "../../src/pure/status";

test("arch from the file; GPU timing off", () => {
  const s = statusText({ fileArch: { arch: "sm_90", source: ".__elf_flags" }, gpuTiming: false, serverState: "running" });
  assert.equal(s.text, "$(chip) sm_90 · GPU off");
  assert.match(s.tooltip, /read from \.__elf_flags/);
});

test("override and server report win; GPU states", () => {
  const base = { fileArch: { arch: "sm_90", source: ".target" }, gpuTiming: true, serverState: "running" as const };
  assert.equal(statusText({ ...base, archOverride: "sm_80" }).text, "$(chip) sm_80 · GPU ?");
  assert.equal(statusText({ ...base, server: { arch: "sm_90a", gpu: { available: true, device: "H200" } } }).text, "$(chip) sm_90a · GPU ✓");
  const none = statusText({ ...base, server: { gpu: { available: false, reason: "no CUDA driver" } } });
  assert.equal(none.text, "$(chip) sm_90 · GPU ✗");
  assert.match(none.tooltip, /no CUDA driver/);
});

test("unknown arch, failed server", () => {
  const s = statusText({ gpuTiming: false, serverState: "failed" });
  assert.equal(s.text, "$(error) sm_? · GPU off");
  assert.match(s.tooltip, /failed to start/);
});
