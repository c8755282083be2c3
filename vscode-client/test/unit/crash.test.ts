import assert from "node:assert/strict";
import { test } from "node:test";
import { RestartPolicy } from "../../src/pure/crash";

test("restarts up to the limit within the window, then stops", () => {
  const p = new RestartPolicy(3, 60_000);
  assert.deepEqual(p.onCrash(0), { restart: true, recentCrashes: 1 });
  assert.deepEqual(p.onCrash(1000), { restart: true, recentCrashes: 2 });
  assert.deepEqual(p.onCrash(2000), { restart: true, recentCrashes: 3 });
  assert.deepEqual(p.onCrash(3000), { restart: false, recentCrashes: 4 });
});

test("old crashes leave the window; reset clears them", () => {
  const p = new RestartPolicy(1, 10_000);
  assert.equal(p.onCrash(0).restart, true);
  assert.equal(p.onCrash(20_000).restart, true);
  assert.equal(p.onCrash(21_000).restart, false);
  p.reset();
  assert.equal(p.onCrash(22_000).restart, true);
});
